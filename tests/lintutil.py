"""Test helpers: lint text as a file through the real engine, run the CLI."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

from vllm_lint.engine.run import Run
from vllm_lint.config import Settings, enabled_codes
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.rulebook import all_codes
from vllm_lint.engine.fixer import fix_file
from vllm_lint.engine.runner import RunOptions

REPO = Path(__file__).resolve().parents[1]


def lint_text(directory: Path, filename: str, text: str, select: tuple[str, ...] = (), **settings) -> list[Diagnostic]:
    path = directory / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return lint_file_paths([path], select, **settings)


def fixed_server(directory: Path, source: str, applied: dict[str, int] | None = None) -> str:
    """What the fixer makes of ``source`` written as ``server.py`` in ``directory``; ``applied``, when given: the
    fixes it must have applied, by code."""
    path = directory / "server.py"
    path.write_text(source)
    outcome = fix_file(path, settings=Settings(root=directory))
    if applied is not None:
        assert dict(outcome.applied) == applied, outcome
    return outcome.fixed.decode()


def write_example(directory: Path, example, text: str | None = None) -> Path:
    """A rule example as files under ``directory`` (its other files first); its path. The example is written
    as documentation shows it, without its ``# expect:`` markers (a Dockerfile's exec form takes no comment);
    ``text``: what to write instead (its fixed form). A notebook example (``lang: ipynb``, cells in the
    percent format) is written as the .ipynb it stands for, as nbformat lays one out."""
    for name, content in example.files:
        other = directory / name
        other.parent.mkdir(parents=True, exist_ok=True)
        other.write_text(content, encoding="utf-8")
    path = directory / example.default_filename
    path.parent.mkdir(parents=True, exist_ok=True)
    code = example.clean_code if text is None else text
    path.write_text(notebook_json(code) if example.lang == "ipynb" else code, encoding="utf-8")
    return path


def lint_example(directory: Path, example) -> list[Diagnostic]:
    """The findings in the example's own file, from a run over all its files (a rule decided across files,
    VLL304, reads what the others say), judged against the vLLM releases the example names (its ``target``),
    with every rule on, those in preview included."""
    path = write_example(directory, example)
    others = [directory / name for name, _ in example.files]
    # Preview on: a rule's examples are its tests from the day it is added, preview or not.
    found = lint_file_paths([path, *others], target_vllm_version=example.target, preview=True)
    return [d for d in found if d.path == str(path)]


def example_in_process(directory: Path, example):
    """The example written under ``directory``, its surface and the run's options (every rule on, preview
    included, judged against the example's ``target``): to lint it in this process, a file at a time."""
    from vllm_lint.engine.discovery import claim_named
    from vllm_lint.surfaces import all_surfaces

    path = write_example(directory, example)
    surface = claim_named(path, path.read_bytes()[:256], all_surfaces())
    codes = all_codes()
    settings = Settings(root=directory.resolve(), target_vllm_version=example.target, preview=True)
    return path, surface, RunOptions(settings, enabled_codes(settings, codes), codes)


def example_line(example, diagnostic: Diagnostic) -> int:
    """The line of the example's text a finding is on (a notebook's: its cell's line in the percent form)."""
    if diagnostic.cell is None:
        return diagnostic.start.line
    return _cell_starts(example.code)[diagnostic.cell.cell - 1] + diagnostic.cell.start.line


def example_text(example, path: Path) -> str:
    """The example's file read back in the example's own form (a notebook as its cells in the percent format)."""
    text = path.read_text(encoding="utf-8")
    if example.lang != "ipynb":
        return text
    import json

    cells = json.loads(text)["cells"]
    parts = []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append("# %% [markdown]\n" + "".join(f"# {line}".rstrip() + "\n" for line in source.split("\n")))
        else:
            parts.append("# %%\n" + source + "\n")
    return "".join(parts)


_CELL_MARKER = re.compile(r"^# %%(?P<markdown> \[markdown\])?\s*$")


def _cells(text: str) -> list[tuple[int, str, str]]:
    """The percent form's cells: (line of the marker, "code" or "markdown", source)."""
    cells: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(text.rstrip("\n").split("\n"), start=1):
        match = _CELL_MARKER.match(line)
        if match:
            cells.append((number, "markdown" if match.group("markdown") else "code", []))
        elif not cells:
            raise ValueError("a notebook example starts with a `# %%` cell marker")
        else:
            cells[-1][2].append(line)
    result = []
    for number, kind, lines in cells:
        if kind == "markdown":
            lines = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines]
        result.append((number, kind, "\n".join(lines)))
    return result


def _cell_starts(text: str) -> list[int]:
    return [number for number, _, _ in _cells(text)]


def notebook_json(text: str) -> str:
    """The .ipynb of a percent-form notebook: nbformat 4.5's layout (indent 1, sorted keys, sources as lists
    of lines), a Python 3 kernel, no outputs."""
    import json

    cells = []
    for index, (_, kind, source) in enumerate(_cells(text)):
        lines = source.splitlines(keepends=True)
        cell = {"cell_type": kind, "id": f"cell-{index + 1}", "metadata": {}, "source": lines}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.append(cell)
    document = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def linted_here():
    """``VLLM_LINT_JOBS=0`` for the block: the engine lints every file in this process instead of forking a child
    per run (~0.07 s each, most of a rule example's test). Crash isolation has its own tests (test_workers.py);
    a long-lived process that lints again and again is what the language server is."""
    return mock.patch.dict(os.environ, {"VLLM_LINT_JOBS": "0"})


def lint_file_paths(paths: list[Path], select: tuple[str, ...] = (), **settings) -> list[Diagnostic]:
    codes = all_codes()
    config = Settings(root=paths[0].parent.resolve(), **settings)
    options = RunOptions(config, enabled_codes(config, codes, select), codes)
    with linted_here():
        return [d for result in Run(options).lint_paths(paths) for d in result.diagnostics]


def run_cli_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``vllm-lint ARGS`` run by this process's click command in ``cwd``: the same command line, code and exit
    status as :func:`run_cli`, without a new interpreter importing vllm_lint again (0.5 s of a test that runs it
    once). For tests of what a run does; those of the installed command itself, its environment, standard input
    or process start-up keep :func:`run_cli`."""
    from click.testing import CliRunner

    from vllm_lint.cli.main import cli

    with contextlib.chdir(cwd or Path.cwd()), linted_here():
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(["vllm-lint", *args], result.exit_code, result.stdout, result.stderr)


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vllm_lint", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
