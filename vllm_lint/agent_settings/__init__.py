"""Entries vllm-lint keeps in coding assistants' own settings files, edited in place.

``entries`` (what an entry is, and finding and writing it in each format), ``jsonc`` (JSON and
JSONC with positions), ``toml_tables`` (one TOML table), ``yaml_lists`` (one item of a YAML list).
Every edit changes only the entry's bytes; the rest of the file stays as the user wrote it.
"""
