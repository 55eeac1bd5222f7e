"""An entry in an assistant's settings file: the post-edit hook, the MCP server, Aider's ``read:``.

An entry is either the value at a key path (``mcpServers.vllm-lint``) or one item of the list at a
key path (``hooks.PostToolUse``), recognised as vllm-lint's by a string it holds (the hook's
command). ``apply`` gives the file's new text; ``current`` finds what the file holds now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

JSON, TOML, YAML, SCRIPT = "json", "toml", "yaml", "script"


class EntryError(ValueError):
    """The file cannot take the entry as it stands (not parseable, or a key of the wrong type)."""


@dataclass(frozen=True)
class Entry:
    part: str  # "hooks", "mcp" or "rules": what `init` option brings it
    file: str  # relative to the project, POSIX separators
    format: str  # JSON (JSONC too), TOML, YAML or SCRIPT (a whole executable file)
    path: tuple[str, ...] = ()
    value: object = None
    append: bool = False  # True: ``value`` is one item of the list at ``path``
    marker: str | None = None  # for items: a string our item holds and no other does
    new_file: dict = field(default_factory=dict)  # top-level keys a new JSON file starts with
    note: str = ""  # what the user still has to do once it is written (trust or enable hooks)

    @property
    def label(self) -> str:
        where = ".".join(self.path)
        return f"{self.file} ({where})" if where else self.file


def _holds(value: object, marker: str) -> bool:
    if isinstance(value, str):
        return value == marker
    if isinstance(value, dict):
        return any(_holds(v, marker) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, marker) for v in value)
    return False


def current(text: str, entry: Entry) -> object | None:
    """What the file holds where the entry goes (our list item, or the value at the path); None when nothing."""
    if entry.format == JSON:
        from vllm_lint.agent_settings import jsonc

        try:
            doc = jsonc.parse(text) if text.strip() else None
        except jsonc.JSONCError:
            return None
        node = None if doc is None else jsonc.node_at(doc, entry.path)
        if node is None:
            return None
        if not entry.append:
            return node.value
        return next((item.value for item in node.items if _holds(item.value, entry.marker or "")), None)
    if entry.format == TOML:
        from vllm_lint.agent_settings import toml_tables

        try:
            return toml_tables.get(text, entry.path)
        except ValueError:
            return None
    if entry.format == YAML:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
        values = data.get(entry.path[0]) if isinstance(data, dict) else None
        values = values if isinstance(values, list) else [values]
        return entry.value if entry.value in values else None
    raise ValueError(f"no lookup for {entry.format} entries")


def apply(text: str | None, entry: Entry) -> str:
    """The file's text with the entry in place (``text`` None: the file does not exist yet)."""
    if entry.format == JSON:
        return _apply_json(text, entry)
    if entry.format == TOML:
        from vllm_lint.agent_settings import toml_tables

        try:
            if not isinstance(entry.value, dict):
                raise EntryError(f"{entry.file}: a TOML entry's value is a table, not {entry.value!r}")
            return toml_tables.set_table(text or "", entry.path, dict(entry.value))
        except toml_tables.TOMLEditError as exc:
            raise EntryError(str(exc)) from None
    if entry.format == YAML:
        from vllm_lint.agent_settings import yaml_lists

        try:
            return yaml_lists.add_item(text or "", entry.path[0], str(entry.value))
        except yaml_lists.YAMLEditError as exc:
            raise EntryError(str(exc)) from None
    raise ValueError(f"{entry.format} entries are whole files")


def _apply_json(text: str | None, entry: Entry) -> str:
    from vllm_lint.agent_settings import jsonc

    if text is None or not text.strip():
        text = json.dumps(entry.new_file, indent=2) + "\n"
    try:
        doc = jsonc.parse(text)
    except jsonc.JSONCError as exc:
        raise EntryError(f"not valid JSON ({exc})") from None
    try:
        if not entry.append:
            return jsonc.set_value(doc, entry.path, entry.value)
        node = jsonc.node_at(doc, entry.path)
        if node is not None and node.kind == "array":
            ours = next((item for item in node.items if _holds(item.value, entry.marker or "")), None)
            if ours is not None:
                return text if ours.value == entry.value else jsonc.replace_item(doc, ours, entry.value)
        return jsonc.append_item(doc, entry.path, entry.value)
    except jsonc.EditError as exc:
        raise EntryError(str(exc)) from None
