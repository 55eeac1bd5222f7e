"""The names in a folder, listed once per run.

The walk (engine/discovery.py) lists every folder it enters; the search for a file's vLLM pin
(pins.py) asks the same folders which project files they hold. What the walk listed is kept here,
under the folder's real path, so that a warm run over a big tree lists each folder once, not twice.
"""

from __future__ import annotations

import os

_listed: dict[str, frozenset[str] | None] = {}


def remember(real_folder: str, names: frozenset[str]) -> None:
    """What a walk found in ``real_folder`` (its resolved path)."""
    _listed[real_folder] = names


def names_in(real_folder: str) -> frozenset[str] | None:
    """The names of the entries of ``real_folder`` (resolved), as listed earlier in this run or now; None
    when it cannot be listed."""
    try:
        return _listed[real_folder]
    except KeyError:
        pass
    try:
        with os.scandir(real_folder) as entries:
            names: frozenset[str] | None = frozenset(entry.name for entry in entries)
    except OSError:
        names = None
    _listed[real_folder] = names
    return names


def forget() -> None:
    """List again from now on: a new run (a walk starts), or a process that outlives a run (the MCP and
    language servers), in which files come and go between two requests."""
    _listed.clear()
