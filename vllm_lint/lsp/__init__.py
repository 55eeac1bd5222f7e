"""``vllm-lint server``: a Language Server over stdio (pygls + lsprotocol, the ``lsp`` extra).

A thin layer over the engine: a document's unsaved text is linted as ``check --stdin-filename`` lints it
(``engine.runner.lint_bytes``), fixed by ``engine.fixer``, explained from the rule files, and configured
as ``check`` is. ``linter.py`` is that layer without the protocol; ``server.py`` speaks the protocol.
"""
