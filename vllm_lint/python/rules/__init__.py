"""Python-surface rules: one module per family, each checker registered with ``@python_rule``.

``vllm_lint.registry`` loads every module of this package by name; nothing imports them.
"""
