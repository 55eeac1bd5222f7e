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
        from vllm_lint.engine.discovery import is_excluded

        return is_excluded(self.path, settings)


def read_stdin(filename: str | None, surfaces: list[Surface]) -> StdinSource:
    stream = sys.stdin
    if stream is None:
        raise StdinError("standard input is closed; pipe the source in, or name files instead of `-`")
    try:
        data = stream.buffer.read()
    except OSError as exc:
        raise StdinError(f"cannot read standard input: {exc.strerror or exc}") from None
    path = Path(filename) if filename else Path(STDIN_NAME)
    from vllm_lint.engine.discovery import HEAD_BYTES, claim_named

    # The head comes from the piped text, never from a file of that name on disk (older text, or none).
    return StdinSource(path, data, claim_named(path, data[:HEAD_BYTES], surfaces))
