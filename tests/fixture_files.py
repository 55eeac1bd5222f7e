"""The suite's input files: where they are, and how a seed is linted. Everything a test reads is in the
repository, so a clean clone runs the whole suite; the seed files are copies of ../shared/seeds
(test_seed_copies.py says when the two drift apart)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from vllm_lint.diagnostics import Diagnostic

from lintutil import lint_file_paths

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
COMMAND_FIXTURES = FIXTURES / "commands"
SEEDS = FIXTURES / "seeds" / "code"
SEED_MARKDOWN = FIXTURES / "seeds" / "markdown"
SHARED_SEEDS = REPO.parent / "shared" / "seeds"


def syntax_sample() -> list[Path]:
    """Real Python files of a fixed size, for tests that compare a fast reader with LibCST node by node: the
    seeds, the rule examples, and standard-library modules between them using most of the grammar (decorators,
    async code, comprehensions, f-strings, classes, nested functions), which do not grow as this project does."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    modules = ["dataclasses.py", "contextlib.py", "asyncio/locks.py", "json/decoder.py", "textwrap.py", "string.py",
               "functools.py", "fractions.py"]
    return sorted([*SEEDS.glob("*.py"), *(REPO / "examples").glob("*.py"), *(stdlib / name for name in modules)], key=str)


def lint_in(folder: Path, name: str, select: tuple[str, ...] = ()) -> list[Diagnostic]:
    """Lint the file ``name`` of ``folder`` named from that folder, as a user there runs ``vllm-lint check
    NAME``. Its path from here runs through tests/, and a Python file under a folder named tests is a test
    file, which the serving rules leave alone."""
    with contextlib.chdir(folder):
        return lint_file_paths([Path(name)], select)


def lint_seed(name: str, select: tuple[str, ...] = ()) -> list[Diagnostic]:
    return lint_in(SEEDS, name, select)
