"""The agent rule files, hooks and MCP entries ``vllm-lint init`` can write, one target per assistant.

The table itself is data, ``targets.yaml`` beside this module, with the source of every format:
assistants move their files often, and updating the table must not need code. This module reads
it into typed values and checks it, naming the target and key of any mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.agent_settings.entries import JSON, SCRIPT, TOML, YAML, Entry

# How an output file is owned:
#   "block": a file people also write; we own only the marked block inside it.
#   "whole": a file that is entirely ours; it carries a generated-by header.
BLOCK, WHOLE = "block", "whole"
TABLE = Path(__file__).with_name("targets.yaml")


@dataclass(frozen=True)
class Output:
    path: str  # relative to the target directory, POSIX separators
    template: str  # file name under templates/
    mode: str  # BLOCK or WHOLE
    max_chars: int | None = None  # hard per-file limit of the tool that reads it
    max_block_lines: int | None = None  # hard limit on the lines of our block
    fit_lines: int | None = None  # budget the renderer fits our content into
    fit_chars: int | None = None
    # "group": one file per group of rules (``path`` holds ``{part}``), each with the globs of its rules' surfaces,
    # for an assistant that reads every file of a folder and limits each file's size.
    split: str | None = None


@dataclass(frozen=True)
class Target:
    name: str
    tool: str
    outputs: tuple[Output, ...]
    opt_in: bool = False  # not part of --target all
    settings: tuple[Entry, ...] = ()  # always written with the rule files
    hook: Entry | None = None  # written with --hooks
    hook_protocol: str | None = None  # the NAME in `vllm-lint hook NAME`
    mcp: Entry | None = None  # written with --mcp


class TableError(ValueError):
    """targets.yaml has a mistake; the message names the target and the key."""


_OUTPUT_KEYS = {"path", "template", "mode", "max_chars", "max_block_lines", "fit_lines", "fit_chars", "split"}
SPLIT_GROUP, PART = "group", "{part}"
_ENTRY_KEYS = {"file", "format", "set", "append", "value", "marker", "new_file", "note"}
_TARGET_KEYS = {"tool", "opt_in", "outputs", "settings", "hooks", "mcp"}


def _unknown(where: str, data: dict, allowed: set[str]) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise TableError(f"{TABLE.name}: {where}: unknown key(s) {', '.join(extra)}; known: {', '.join(sorted(allowed))}")


def _entry(part: str, name: str, data: object) -> Entry:
    where = f"{part}.{name}"
    if not isinstance(data, dict):
        raise TableError(f"{TABLE.name}: {where} must be a mapping")
    _unknown(where, data, _ENTRY_KEYS)
    fmt = data.get("format")
    if fmt not in (JSON, TOML, YAML, SCRIPT):
        raise TableError(f"{TABLE.name}: {where}.format must be one of json, toml, yaml, script")
    if fmt != SCRIPT and ("set" in data) == ("append" in data):
        raise TableError(f"{TABLE.name}: {where} needs one of `set` or `append`")
    if "append" in data and fmt == JSON and not data.get("marker"):
        raise TableError(f"{TABLE.name}: {where} appends a list item, so it needs a `marker`")
    return Entry(
        part="rules" if part == "settings" else part,
        file=str(data["file"]),
        format=fmt,
        path=tuple(data.get("set") or data.get("append") or ()),
        value=data.get("value"),
        append="append" in data,
        marker=data.get("marker"),
        new_file=dict(data.get("new_file") or {}),
        note=" ".join(str(data.get("note") or "").split()),
    )


def _output(target: str, data: object) -> Output:
    if not isinstance(data, dict):
        raise TableError(f"{TABLE.name}: targets.{target}.outputs: each output must be a mapping")
    _unknown(f"targets.{target}.outputs", data, _OUTPUT_KEYS)
    if data.get("mode") not in (BLOCK, WHOLE):
        raise TableError(f"{TABLE.name}: targets.{target}.outputs: mode must be `block` or `whole`")
    if data.get("split") not in (None, SPLIT_GROUP):
        raise TableError(f"{TABLE.name}: targets.{target}.outputs: split must be `group`")
    if (data.get("split") is not None) != (PART in str(data.get("path"))) or (data.get("split") and data["mode"] != WHOLE):
        raise TableError(f"{TABLE.name}: targets.{target}.outputs: a split output is a `whole` file whose path holds {PART}")
    return Output(**data)


def load_table(path: Path = TABLE) -> dict[str, Target]:
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    sections = {key: raw.get(key) or {} for key in ("settings", "hooks", "mcp")}
    entries = {part: {name: _entry(part, name, data) for name, data in sections[part].items()} for part in sections}
    targets: dict[str, Target] = {}
    for name, data in (raw.get("targets") or {}).items():
        _unknown(f"targets.{name}", data, _TARGET_KEYS)
        targets[name] = Target(
            name=name,
            tool=str(data["tool"]),
            outputs=tuple(_output(name, output) for output in data.get("outputs") or ()),
            opt_in=bool(data.get("opt_in", False)),
            settings=tuple(_required(entries, name, "settings", key) for key in data.get("settings") or ()),
            hook=_pick(entries, name, "hooks", data.get("hooks")),
            hook_protocol=data.get("hooks"),
            mcp=_pick(entries, name, "mcp", data.get("mcp")),
        )
    return targets


def _pick(entries: dict[str, dict[str, Entry]], target: str, part: str, key: str | None) -> Entry | None:
    """The ``part`` entry a target names (``hooks: claude``), or None when it names none."""
    return None if key is None else _required(entries, target, part, key)


def _required(entries: dict[str, dict[str, Entry]], target: str, part: str, key: str) -> Entry:
    if key not in entries[part]:
        raise TableError(f"{TABLE.name}: targets.{target}.{part}: no entry {key!r} under `{part}:`")
    return entries[part][key]


TARGETS: dict[str, Target] = load_table()

DEFAULT_GLOBS: tuple[str, ...] = (
    "**/*vllm*.py",
    "**/*model_server*.py",
    "Dockerfile*vllm*",
    "**/server*.py",
    "**/app*.py",
    "**/serve*.py",
    "**/docker-compose*.y*ml",
    "**/compose*.y*ml",
    "**/k8s/**/*.y*ml",
    "**/deploy/**/*.y*ml",
)


# The default globs of each surface a rule lists: a file of a split output carries those of its rules' surfaces.
SURFACE_GLOBS: dict[str, tuple[str, ...]] = {
    "python": ("**/*vllm*.py", "**/*model_server*.py", "**/server*.py", "**/app*.py", "**/serve*.py"),
    "notebook": ("**/*.ipynb",),
    "shell": ("**/*.sh",),
    "dockerfile": ("Dockerfile*vllm*",),
    "compose": ("**/docker-compose*.y*ml", "**/compose*.y*ml"),
    "kubernetes": ("**/k8s/**/*.y*ml", "**/deploy/**/*.y*ml"),
    "helm": ("**/templates/**/*.y*ml",),
}


def surface_globs(surfaces: set[str]) -> tuple[str, ...]:
    """The default globs of ``surfaces`` (all of DEFAULT_GLOBS when none of them has its own)."""
    found = [glob for surface, globs in SURFACE_GLOBS.items() if surface in surfaces for glob in globs]
    return tuple(found) or DEFAULT_GLOBS


class TargetError(ValueError):
    """An unknown target name; the message lists the known ones."""


def default_targets(root: Path) -> list[str]:
    """CLAUDE.md, AGENTS.md and Cursor's rules in the form the repository already uses.

    A repository with ``.cursor/rules/`` gets the ``.mdc`` file; otherwise ``.cursorrules``,
    so Cursor never reads the same rules twice.
    """
    cursor = "cursor" if (root / ".cursor" / "rules").is_dir() else "cursor-legacy"
    return ["claude", "agents", cursor]


def resolve_targets(names: tuple[str, ...] | list[str], root: Path) -> list[Target]:
    """Target names (``all`` included) -> targets, in table order, without duplicates."""
    chosen: set[str] = set()
    for raw in names:
        for name in (part.strip().lower() for part in raw.split(",")):
            if not name:
                continue
            if name == "all":
                chosen.update(n for n, t in TARGETS.items() if not t.opt_in)
            elif name == "default":
                chosen.update(default_targets(root))
            elif name in TARGETS:
                chosen.add(name)
            else:
                known = ", ".join([*TARGETS, "all"])
                raise TargetError(f"unknown target {raw.strip()!r}; known targets: {known}")
    return [target for name, target in TARGETS.items() if name in chosen]


def chosen_entries(targets: list[Target], hooks: bool, mcp: bool, has: Callable[[Entry], bool]) -> list[Entry]:
    """The settings entries ``init`` keeps for ``targets``: their ``settings`` always, hooks with ``hooks``
    and MCP servers with ``mcp``, and any hook or MCP entry the project already has (``has``), so that a
    part once installed stays current and is checked until the user removes it."""
    entries: dict[tuple[str, tuple[str, ...]], Entry] = {}
    for target in targets:
        for setting in target.settings:
            entries.setdefault((setting.file, setting.path), setting)
        for entry, wanted in ((target.hook, hooks), (target.mcp, mcp)):
            if entry is not None and (wanted or has(entry)):
                entries.setdefault((entry.file, entry.path), entry)
    return list(entries.values())
