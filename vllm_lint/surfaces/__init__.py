"""File kinds the linter understands (surfaces), and the registry that finds the one for a file.

A surface claims files by name, extension or first bytes, decides from the raw bytes whether any rule could
fire (so most files are never parsed), and lints the rest. ``python.py`` is the Python surface (the LibCST
front-end is ``vllm_lint.python``); ``command_files.py`` claims the files whose launches are command lines
(shell, Dockerfile, compose, Kubernetes, Markdown), read with the library in ``vllm_lint.cmdline``.

The registry imports the surface modules on first use (``all_surfaces``), not at import time: the Python
surface would bring LibCST, which a run over files with nothing to report never needs. What the surfaces and
the engine pass each other (``LintJob``, ``Surface``) is in ``job.py``, the package's bottom: its modules
import it, never this registry, which sits above them all (re-exported here for the packages above).
"""

from __future__ import annotations

from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.surfaces.job import (
    ABSENT,
    NO_PREFILTER_VARIABLE,
    CommandParseError,
    LintJob,
    Surface,
    parse_error,
    prefilter_disabled,
)


def all_surfaces() -> list[Surface]:
    from vllm_lint.surfaces.command_files import COMMAND_SURFACES
    from vllm_lint.surfaces.notebook import NOTEBOOK
    from vllm_lint.surfaces.python import PYTHON

    return [*COMMAND_SURFACES, NOTEBOOK, PYTHON]


__all__ = [
    "ABSENT",
    "NO_PREFILTER_VARIABLE",
    "CommandParseError",
    "LintJob",
    "Surface",
    "all_surfaces",
    "parse_error",
    "prefilter_disabled",
    "suffix_of",
]
