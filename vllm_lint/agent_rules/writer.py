"""Plan what ``vllm-lint init`` would change, then show it (--dry-run), judge it (--check) or write it.

Rule files (a marked block, or a whole generated file) and entries in assistants' settings files
(hooks, MCP servers) are planned alike, as a ``Change``. Writes go through ``vllm_lint.atomic`` (a
temporary file in the same folder, then ``os.replace``), keep the file's mode, and never leave the
target directory: a path that resolves outside it (through a symlink) is refused.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.agent_rules.blocks import (
    GENERATED_RE,
    BlockError,
    current_block,
    is_intact,
    merge,
    newline_of,
    with_newline,
)
from vllm_lint.agent_rules.targets import BLOCK, PART, WHOLE, Output
from vllm_lint.agent_settings.entries import SCRIPT, Entry, EntryError, apply, current

CREATE, UPDATE, UNCHANGED, CONFLICT, ERROR, REMOVE = "create", "update", "unchanged", "conflict", "error", "remove"


@dataclass
class Change:
    rel: str  # as shown to the user, relative to the target directory
    path: Path  # where the bytes go (a symlink inside the directory is followed)
    status: str
    old: bytes | None = None
    new: bytes | None = None
    reason: str = ""
    executable: bool = False  # the file must be executable (a hook script)

    @property
    def writes(self) -> bool:
        return self.status in (CREATE, UPDATE)


def _inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` with symlinks resolved, or None when that lands outside ``root``."""
    resolved = (root / rel).resolve()
    try:
        resolved.relative_to(root.resolve())
    except ValueError:
        return None
    return resolved


def _non_folder_above(root: Path, rel: str) -> str | None:
    """The first folder on the way to ``rel`` that exists as something else (a file), or None."""
    parts = Path(rel).parts[:-1]
    for depth in range(1, len(parts) + 1):
        folder = root.joinpath(*parts[:depth])
        if folder.exists() and not folder.is_dir():
            return Path(*parts[:depth]).as_posix()
    return None


def _read(root: Path, rel: str) -> tuple[Path, bytes | None, str | None] | Change:
    """``rel``'s real path, bytes (None: no file yet) and text; or the ERROR change that stops there."""
    path = _inside(root, rel)
    if path is None:
        return Change(rel, root / rel, ERROR, reason=f"refusing to write {rel}: it resolves outside {root} (a symlink?)")
    blocker = _non_folder_above(root, rel)
    if blocker is not None:
        return Change(rel, path, ERROR, reason=f"cannot write {rel}: {blocker} exists and is not a directory")
    if path.exists() and not path.is_file():
        return Change(rel, path, ERROR, reason=f"{rel} exists and is not a regular file")
    try:
        old = path.read_bytes() if path.exists() else None
    except OSError as exc:
        return Change(rel, path, ERROR, reason=f"cannot read {rel}: {exc.strerror or exc}")
    if old is None:
        return path, None, None
    try:
        return path, old, old.decode("utf-8")
    except UnicodeDecodeError:
        return Change(rel, path, ERROR, old, reason=f"{rel} is not UTF-8 text; vllm-lint leaves it alone")


def plan_output(root: Path, output: Output, generated: str, force: bool = False) -> Change:
    """The change that writing ``generated`` (a whole file, or a marked block) to ``output`` would make."""
    rel = output.path
    found = _read(root, rel)
    if isinstance(found, Change):
        return found
    path, old, existing = found
    if old is None or existing is None:
        text = generated if output.mode != BLOCK else merge(None, generated)
        return Change(rel, path, CREATE, None, text.encode("utf-8"))
    conflict = ""
    if output.mode == BLOCK:
        try:
            block = current_block(existing)
        except BlockError as exc:
            return Change(rel, path, ERROR, old, reason=f"{rel}: {exc}; fix the markers by hand")
        if block is not None and not is_intact(block):
            conflict = f"{rel}: the vllm-lint block was edited by hand (its hash no longer matches)"
        text = merge(existing, generated)
    else:
        if not is_intact(existing):
            if GENERATED_RE.search(existing):
                conflict = f"{rel}: the generated file was edited by hand (its hash no longer matches)"
            else:
                conflict = f"{rel}: exists and was not written by vllm-lint"
        text = with_newline(generated, newline_of(existing))
    new = text.encode("utf-8")
    if new == old:
        return Change(rel, path, UNCHANGED, old, new)
    if conflict and not force:
        return Change(rel, path, CONFLICT, old, new, reason=conflict + "; rerun with --force to overwrite it")
    return Change(rel, path, UPDATE, old, new, reason=conflict)


def plan_removals(root: Path, output: Output, kept: set[str]) -> list[Change]:
    """The files of a split output (``vllm-{part}.md``) that vllm-lint wrote before and no group makes now: each
    intact generated file there that is not in ``kept`` (a file edited by hand, or not ours, stays)."""
    folder, _, pattern = output.path.rpartition("/")
    prefix, _, suffix = pattern.partition(PART)
    removals: list[Change] = []
    directory = root / folder
    if not directory.is_dir():
        return removals
    for path in sorted(directory.iterdir()):
        rel = f"{folder}/{path.name}"
        if rel in kept or not (path.name.startswith(prefix) and path.name.endswith(suffix)) or not path.is_file():
            continue
        if _inside(root, rel) is None:
            continue  # a link out of the project: not ours to remove
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if GENERATED_RE.search(text) and is_intact(text):
            removals.append(Change(rel, path, REMOVE, path.read_bytes(), None, reason=f"{rel}: no group of rules makes it any more"))
    return removals


def diff(change: Change) -> str:
    old = (change.old or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (change.new or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    fromfile = "/dev/null" if change.old is None else f"a/{change.rel}"
    tofile = "/dev/null" if change.status == REMOVE else f"b/{change.rel}"
    lines = difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


SCRIPT_HEADER = "# vllm-lint:generated hash=000000000000: written by `vllm-lint init --hooks`; run `vllm-lint init` to update."


def hook_script(command: str) -> str:
    """A hook that is a whole executable file (Cline's): it only runs ``command``."""
    from vllm_lint.agent_rules.blocks import stamp

    return stamp(f"#!/bin/sh\n{SCRIPT_HEADER}\nexec {command}\n")


def installed(root: Path, entry: Entry) -> bool:
    """Whether the project already has ``entry`` (then ``init`` keeps it current and ``--check`` checks it)."""
    path = _inside(root, entry.file)
    if path is None or not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if entry.format == SCRIPT:
        return str(entry.value) in text and GENERATED_RE.search(text) is not None
    return current(text, entry) is not None


def plan_entries(root: Path, entries: list[Entry], force: bool = False) -> list[Change]:
    """The changes that putting ``entries`` into their settings files would make, one per file (entries
    sharing a file, such as Gemini's hook and MCP server, are applied in turn); the rest of each file
    is kept byte for byte."""
    by_file: dict[str, list[Entry]] = {}
    for entry in entries:
        by_file.setdefault(entry.file, []).append(entry)
    return [_plan_file(root, rel, group, force) for rel, group in by_file.items()]


def _plan_file(root: Path, rel: str, entries: list[Entry], force: bool) -> Change:
    if entries[0].format == SCRIPT:
        change = plan_output(root, Output(rel, "", WHOLE), hook_script(str(entries[0].value)), force)
        change.executable = True
        if change.status == UNCHANGED and not os.access(change.path, os.X_OK):
            change.status, change.reason = UPDATE, f"{rel}: not executable"
        return change
    found = _read(root, rel)
    if isinstance(found, Change):
        return found
    path, old, text = found
    edited: list[str] = []
    for entry in entries:
        try:
            updated = apply(text, entry)
        except EntryError as exc:
            return Change(rel, path, ERROR, old, reason=f"{rel}: {exc}; add the vllm-lint entry by hand")
        if text is not None and updated != text and current(text, entry) is not None:
            edited.append(entry.label)
        text = updated
    new = (text or "").encode("utf-8")
    if old is None:
        return Change(rel, path, CREATE, None, new)
    if new == old:
        return Change(rel, path, UNCHANGED, old, new)
    reason = "; ".join(f"{label}: the vllm-lint entry differs from what vllm-lint writes (edited by hand, or by another version)" for label in edited)
    return Change(rel, path, UPDATE, old, new, reason=reason)
