"""``vllm-lint init``: render agent rule files (CLAUDE.md, AGENTS.md, Cursor, ...) from rules/*.yaml.

Modules: ``targets`` (which files each agent reads), ``render`` (Jinja2 context and
templates), ``blocks`` (the managed marker block and its hash), ``writer`` (plan,
diff, check and atomic writes), ``cli`` (the click command).
"""
