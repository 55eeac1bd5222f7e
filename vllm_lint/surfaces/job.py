"""What the surfaces and the engine pass each other: the job of linting one file's text (``LintJob``), a surface
(``Surface``), and the diagnostic of a file that cannot be read. Every module of the package imports this one;
it imports none of them but ``file_names``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vllm_lint.diagnostics import Diagnostic, Position, Severity
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.rulebook import PARSE_ERROR_CODE
from vllm_lint.surfaces.file_names import PYTHON_SUFFIXES, is_dockerfile_name

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from vllm_lint.project.facts import FileFacts


# The stamp of a dependency that did not exist when the result was computed (engine/cache.py).
ABSENT = (-1, -1, "")


@dataclass
class LintJob:
    """One file to lint, as the engine hands it to its surface, with what the surface tells back."""
    path: Path
    display: str
    data: bytes
    enabled: frozenset[str]
    launch_settings: LaunchSettings
    target_vllm_version: str | None = None  # the setting: it wins over what the project pins
    # What the file tells the project rules (servers it starts, requests its clients send): set by a
    # surface when one of them is enabled; the engine keeps it with the file's result.
    facts: FileFacts | None = None
    # The project root and the module summaries the result cache holds (python/project.py), for what the
    # project's other files do; the folders up to which the project's vLLM pin is looked for outside a
    # repository (Settings.pin_search_tops, vllm_api.targets).
    project_root: Path | None = None
    pin_search_tops: tuple[Path, ...] = ()
    known_summaries: Mapping[str, object] | None = None
    # Filled by the surface: the other files the result depends on (path -> (size, mtime_ns, hash)), and
    # the summaries it computed (for the cache).
    dependencies: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    summaries: dict[str, list] = field(default_factory=dict)
    # The text is the file at ``path`` (not a block of a Markdown file or a notebook's cell), so the files
    # beside it are its project's: a chart's values.yaml, a Dockerfile's build context, compose's .env.
    standalone: bool = True
    fix_edits: bool = True  # RunOptions.fix_edits

    def read_beside(self, path: Path, limit: int = 1 << 20) -> str | None:
        """The text of another file of the project (UTF-8, a regular file under ``limit`` bytes), recorded as
        a dependency (an absent one too: the result holds while it stays absent); None when it is not one, or
        this job's text is not a file of its own."""
        if not self.standalone:
            return None
        from vllm_lint.hashing import content_hash
        from vllm_lint.source import SourceError, read_bytes

        key = str(path)
        try:
            stat = path.stat()
        except OSError:
            self.dependencies[key] = ABSENT
            return None
        try:
            data = read_bytes(path) if stat.st_size <= limit else None
        except (OSError, SourceError):
            data = None
        self.dependencies[key] = (stat.st_size, stat.st_mtime_ns, content_hash(data) if data is not None else "")
        try:
            return data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            return None

    def is_file_beside(self, path: Path) -> bool:
        """Whether another file of the project exists (recorded as a dependency as ``read_beside`` does)."""
        if not self.standalone:
            return False
        if path.is_file():
            self.read_beside(path)  # for its stamp
            return True
        self.dependencies.setdefault(str(path), ABSENT)
        return False

    @cached_property
    def target(self):
        """The vLLM releases this file is judged against, and why (``vllm_api.targets``)."""
        from vllm_lint.python.prefilter_words import present_if_scanned
        from vllm_lint.vllm_api.targets import file_target, may_pin_itself

        dockerfile_name = is_dockerfile_name(self.path.name)
        # The words of a Python file's own pin, off the pre-filter's scan of it where there was one (a target is
        # mostly asked after: the conditions read the vLLM API the target selects).
        own_pin = self.path.suffix in PYTHON_SUFFIXES and may_pin_itself(self.data, present_if_scanned)
        text = self.data.decode("utf-8", errors="replace") if dockerfile_name or own_pin else ""
        dockerfile = text if dockerfile_name else None
        python = text if own_pin else None
        return file_target(
            self.path, dockerfile, self.target_vllm_version, self.pin_search_tops, self.launch_settings.vllm_images,
            python,
        )

    @property
    def api_version(self) -> str | None:
        return self.target.specifier

    @property
    def looked_up_target(self) -> bool:
        """Whether this job asked for its target: what it found may then depend on the project's pin."""
        return "target" in self.__dict__

    @cached_property
    def _api(self):
        from vllm_lint.vllm_api import load_api

        return load_api(self.api_version)

    def api(self):
        return self._api


# Set (to anything but "" or "0"), every surface parses every file it claims: what the pre-filter would skip is
# linted too (vllm_lint.engine.prefilter_check compares the two runs; the real-corpus runner sets it).
NO_PREFILTER_VARIABLE = "VLLM_LINT_NO_PREFILTER"


def prefilter_disabled() -> bool:
    return os.environ.get(NO_PREFILTER_VARIABLE, "") not in ("", "0")


@dataclass(frozen=True)
class Surface:
    """A kind of file: which files it takes, whether a rule may fire in one, and how one is linted."""
    name: str
    # Whether a file is this surface's, from its name (no folder) and ``head``, its first bytes (b"" when
    # unknown: a walk asks by name first, and reads a file only when its name leaves the question open).
    claims: Callable[[str, bytes], bool]
    may_match: Callable[[LintJob], bool]
    lint: Callable[[LintJob], list[Diagnostic]]
    # What ``lint`` imports on first use (LibCST: ~170 ms), for a process to load before timing a file.
    heavy_modules: tuple[str, ...] = ()

    def warm_up(self) -> None:
        if all(module in sys.modules for module in self.heavy_modules):
            return
        import importlib

        from vllm_lint.codecache import compiled_dataclasses

        with compiled_dataclasses(f"surface-{self.name}"):
            for module in self.heavy_modules:
                importlib.import_module(module)


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    position = Position(max(line, 1), max(column, 1))
    return Diagnostic(
        code=PARSE_ERROR_CODE,
        message=message,
        path=path,
        start=position,
        end=position,
        severity=Severity.ERROR,
        noqa_lines=(),
    )


class CommandParseError(Exception):
    """A command-line file its reader cannot read (a shell syntax error, invalid YAML): reported as ``parse_error``
    at ``offset`` into the text, or at ``line`` and ``column``."""

    def __init__(self, message: str, offset: int | None = None, line: int | None = None, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.offset, self.line, self.column = message, offset, line, column
