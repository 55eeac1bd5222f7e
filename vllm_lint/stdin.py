"""Source read from standard input (``vllm-lint check -``), as ruff reads it.

Editors and tools that hold unsaved text pipe it in. ``--stdin-filename`` names it:
the name decides which surface lints it (a Dockerfile, a compose file, Python...),
is what the report shows, and is the path per-file-ignores and --force-exclude match.
Without a name the source is Python and is reported as ``-``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.config import Settings
from vllm_lint.surfaces import Surface

STDIN_NAME = "-"
_HEAD = 256  # as much of the start as surfaces look at to claim a file by its shebang


class StdinError(Exception):
    """Standard input cannot be read; exit code 2."""


@dataclass(frozen=True)
class StdinSource:
    path: Path
    data: bytes
    surface: Surface

    @property
    def display(self) -> str:
        return str(self.path)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def excluded(self, settings: Settings) -> bool:
        """Whether the configured excludes (or a .gitignore) cover the name, as for a file named explicitly."""
        # The name need not exist on disk (an unsaved buffer), so match it as a path, without reading it.
        from vllm_lint.runner import _Ignore

        return _Ignore(settings).excluded_with_parents(self.path)


def read_stdin(filename: str | None, surfaces: list[Surface]) -> StdinSource:
    stream = sys.stdin
    if stream is None:
        raise StdinError("standard input is closed; pipe the source in, or name files instead of `-`")
    try:
        data = stream.buffer.read()
    except OSError as exc:
        raise StdinError(f"cannot read standard input: {exc.strerror or exc}") from None
    path = Path(filename) if filename else Path(STDIN_NAME)
    return StdinSource(path, data, claim(path, data[:_HEAD], surfaces))


def claim(path: Path, head: bytes, surfaces: list[Surface]) -> Surface:
    """The surface for a source named ``path`` that starts with ``head``.

    As for a file named on the command line: by name first, then by its first line
    (a shebang), else Python. The head comes from the piped text, never from a file
    of that name on disk, which may hold older text or not exist.
    """
    for probe in (b"", head):
        for surface in surfaces:
            if surface.claims(path, probe):
                return surface
    return next(surface for surface in surfaces if surface.name == "python")
