"""Plan what ``vllm-lint init`` would change, then show it (--dry-run), judge it (--check) or write it.

Writes go through ``vllm_lint.atomic`` (a temporary file in the same folder, then ``os.replace``), keep
the file's mode, and never leave the target directory: a path that resolves
outside it (through a symlink) is refused.
"""

from __future__ import annotations

import difflib
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
from vllm_lint.agent_rules.targets import BLOCK, Output

CREATE, UPDATE, UNCHANGED, CONFLICT, ERROR = "create", "update", "unchanged", "conflict", "error"


@dataclass
class Change:
    rel: str  # as shown to the user, relative to the target directory
    path: Path  # where the bytes go (a symlink inside the directory is followed)
    status: str
    old: bytes | None = None
    new: bytes | None = None
    reason: str = ""

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


def plan_output(root: Path, output: Output, generated: str, force: bool = False) -> Change:
    """The change that writing ``generated`` (a whole file, or a marked block) to ``output`` would make."""
    rel = output.path
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
        text = generated if output.mode != BLOCK else merge(None, generated)
        return Change(rel, path, CREATE, None, text.encode("utf-8"))
    try:
        existing = old.decode("utf-8")
    except UnicodeDecodeError:
        return Change(rel, path, ERROR, old, reason=f"{rel} is not UTF-8 text; vllm-lint leaves it alone")
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


def diff(change: Change) -> str:
    old = (change.old or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (change.new or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    fromfile = "/dev/null" if change.old is None else f"a/{change.rel}"
    lines = difflib.unified_diff(old, new, fromfile=fromfile, tofile=f"b/{change.rel}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
