"""The run: from paths to diagnostics and fixed files.

``run.py`` owns a run (discovery, the result cache, the lint in worker processes, the project rules, fixing),
and ``check``, the hook, the language server and the MCP server each call it; the rest are its steps:
discovery (.gitignore-aware walk), the per-file lint through the surfaces (``runner.py``), suppressions (noqa,
skip-file, per-file-ignores), worker processes, the result cache and the fixer. It knows surfaces only through
``vllm_lint.surfaces``' registry.
"""
