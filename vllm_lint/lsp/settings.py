"""What configures a document's lint in the server: the project's configuration file, found upward from the
document as ``check`` finds it, overridden by the editor's settings (initialization options, or
``workspace/didChangeConfiguration``)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.config import ConfigError, Settings, enabled_codes, find_config, load_settings
from vllm_lint.engine.runner import RunOptions


@dataclass(frozen=True)
class EditorSettings:
    """The editor's overrides; camelCase keys in JSON, as LSP clients write them (snake/kebab case accepted)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    preview: bool | None = None
    target_vllm_version: str | None = None
    debounce_ms: int = 150

    @classmethod
    def from_json(cls, raw: object) -> EditorSettings:
        """From initialization options or a configuration change: ``{"select": [...], ...}``, optionally under a
        ``"vllm-lint"`` (or ``"vllmLint"``) key, as editors nest each server's settings."""
        if not isinstance(raw, dict):
            return cls()
        table: dict = raw
        for key in ("vllm-lint", "vllmLint", "vllm_lint"):
            if isinstance(table.get(key), dict):
                table = table[key]
                break
        values = {_snake(key): value for key, value in table.items()}
        settings = cls()
        changes: dict = {}
        for name in ("select", "ignore", "extend_select"):
            if name in values:
                changes[name] = _codes(values[name], name)
        if isinstance(values.get("preview"), bool):
            changes["preview"] = values["preview"]
        version = values.get("target_vllm_version")
        if isinstance(version, str) and version.strip():
            changes["target_vllm_version"] = version.strip()
        debounce = values.get("debounce_ms")
        if isinstance(debounce, int) and not isinstance(debounce, bool) and debounce >= 0:
            changes["debounce_ms"] = debounce
        return dataclasses.replace(settings, **changes)


def _snake(key: str) -> str:
    out = []
    for char in key.replace("-", "_"):
        if char.isupper():
            out.append("_" + char.lower())
        else:
            out.append(char)
    return "".join(out)


def _codes(value: object, name: str) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ConfigError(f"editor setting `{name}`: a list of rule codes or prefixes")
    return tuple(item.strip() for item in items if item.strip())


class SettingsResolver:
    """The ``RunOptions`` a document is linted with: its configuration file is looked up on every lint (a few
    stats) and read again only when it changed, so an edit of ``pyproject.toml`` counts from the next lint."""

    def __init__(self, editor: EditorSettings | None = None) -> None:
        from vllm_lint.rulebook import all_codes

        self.codes = all_codes()
        self.editor = editor or EditorSettings()
        self._loaded: dict[Path, tuple[tuple[int, int] | None, Settings]] = {}

    def options(self, path: Path, folder: Path | None = None) -> RunOptions:
        """For a file at ``path`` in the workspace folder ``folder``; raises ConfigError for a broken
        configuration file or a bad editor setting."""
        config = find_config(path.parent if path.parent.is_dir() else Path.cwd())
        # Without a configuration file, globs and the project are relative to the workspace folder, as for
        # `check` run there.
        settings = self._settings(config, folder or path.parent)
        editor = self.editor
        if editor.target_vllm_version is not None:
            settings = dataclasses.replace(settings, target_vllm_version=_target(editor.target_vllm_version))
        if editor.preview is not None:
            settings = dataclasses.replace(settings, preview=editor.preview)
        enabled = enabled_codes(settings, self.codes, editor.select, editor.ignore, editor.extend_select)
        return RunOptions(settings=settings, enabled=enabled, codes=self.codes)

    def _settings(self, config: Path | None, root: Path) -> Settings:
        if config is None:
            return Settings(root=root)
        stamp = _stamp(config)
        kept = self._loaded.get(config)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        settings = load_settings(config, self.codes)
        self._loaded[config] = (stamp, settings)
        return settings


def _stamp(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns)


def _target(text: str) -> str:
    from vllm_lint.vllm_api import as_specifier
    from vllm_lint.vllm_api.specifiers import parse

    if parse(as_specifier(text)) is None:
        raise ConfigError(f"editor setting `targetVllmVersion`: {text!r} is not a vLLM version or specifier")
    return text
