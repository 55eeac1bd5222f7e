"""Snapshot files: the whole output of a case, kept as readable text, one file per case under tests/snapshots/
(in the manner of ruff's insta snapshots).

A test hands its output to the ``snapshots`` fixture (tests/conftest.py). When it differs from the file, the
test fails with a unified diff of the two; ``pytest --update-snapshots`` writes this run's output into the
files instead, and removes the files no case produces any more. Review what changed with
``git diff tests/snapshots`` before committing it.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lintutil import run_cli_in_process

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE_OPTION = "--update-snapshots"
SUFFIX = ".snap"


@dataclass(frozen=True)
class Snapshots:
    update: bool
    source: str  # the test file that makes the snapshot, as its header says

    def assert_match(self, name: str, text: str) -> None:
        """``text`` is what tests/snapshots/``name``.snap holds (below its header)."""
        path = SNAPSHOTS / f"{name}{SUFFIX}"
        content = f"---\nsource: {self.source}\n---\n{text}"
        old = path.read_bytes().decode("utf-8") if path.exists() else None
        if old == content:
            return
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8"))
            return
        shown = path.relative_to(SNAPSHOTS.parents[1]).as_posix()
        if old is None:
            pytest.fail(f"{shown} does not exist: run `pytest {UPDATE_OPTION}` to write it, and review it. "
                        f"This run's output:\n{text}", pytrace=False)
        pytest.fail(f"{shown} differs from this run (- the snapshot, + this run); if this run is right, "
                    f"run `pytest {UPDATE_OPTION}` and review the change:\n" + _diff(old, content), pytrace=False)

    def assert_only(self, folder: str, names: Iterable[str]) -> None:
        """tests/snapshots/``folder`` holds the snapshots ``names`` and no other: none is left from a case that
        is gone."""
        expected = {f"{name}{SUFFIX}" for name in names}
        stale = sorted(p for p in (SNAPSHOTS / folder).glob(f"*{SUFFIX}") if p.name not in expected)
        if self.update:
            for path in stale:
                path.unlink()
        elif stale:
            pytest.fail(f"snapshots no case makes (`pytest {UPDATE_OPTION}` removes them): "
                        + ", ".join(p.relative_to(SNAPSHOTS).as_posix() for p in stale), pytrace=False)


def _diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), "snapshot", "this run")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def cli_transcript(*args: str, cwd: Path) -> str:
    """``vllm-lint ARGS`` run in ``cwd`` as a snapshot shows it: the command, its exit status, what it printed
    (standard error apart, when there is any)."""
    result = run_cli_in_process(*args, cwd=cwd)
    text = f"$ vllm-lint {shlex.join(args)}\nexit status {result.returncode}\n{result.stdout}"
    if result.stderr:
        text += f"[stderr]\n{result.stderr}"
    return text


def report_and_fixes(name: str, cwd: Path) -> str:
    """What a user in ``cwd`` sees of the file ``name``: the full report, then the diff of every fix, unsafe ones
    too."""
    options = ("--isolated", "--no-cache", "--no-color")
    return f"{cli_transcript('check', *options, name, cwd=cwd)}\n{cli_transcript('check', *options, '--diff', '--unsafe-fixes', name, cwd=cwd)}"
