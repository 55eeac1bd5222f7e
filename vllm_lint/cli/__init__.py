"""The ``vllm-lint`` commands: ``check``, ``rule``, ``init``, ``hook``, ``mcp``, ``serve-reference``, ``validate``.

``entry`` is the program (the click-free fast path for common ``check`` lines and for ``hook``); ``main`` is
the click group.
A command parses its options and calls the layer that does the work; no other package imports this one.
"""
