"""The click-free reading of common ``check`` command lines gives exactly what click gives, or leaves it to click."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from vllm_lint.cli.check_options import CHECK_OPTIONS, parse_common
from vllm_lint.cli.main import check


def _click_params(args: list[str]) -> dict:
    with check.make_context("check", list(args)) as ctx:
        return dict(ctx.params)


COMMON = [
    [],
    ["app.py"],
    ["--force-exclude", "a.py", "b/c.py"],
    ["--fix", "--unsafe-fixes", "--show-fixes", "--exit-non-zero-on-fix", "src"],
    ["--select", "VLL1,VLL2", "--select=VLL301", "--ignore", "VLL101", "--extend-select", "VLL5", "."],
    ["-n", "--output-format", "github", "x.py", "--exit-zero"],  # options after paths, as click allows
    ["--output-format=sarif", "--no-color", "--respect-gitignore", "--statistics", "--isolated"],
    ["--color", "--no-respect-gitignore", "--no-cache", "--fix-only", "--diff", "deep/dir/file.yaml"],
    ["--no-color", "--color"],  # the last one wins
    ["-o", "report.sarif", "--output-format", "sarif", "--cache-dir", "cache", "--config=pyproject.toml", "."],
]


@pytest.mark.parametrize("args", COMMON, ids=" ".join)
def test_common_command_lines_parse_as_click_parses_them(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_common(args) == _click_params(args)


LEFT_TO_CLICK = [
    ["--help"],
    ["-"],
    ["--", "-weird-name.py"],
    ["--stdin-filename", "x.py"],
    ["-o", "."],  # a folder for the report file
    ["--cache-dir", "EXISTING_FILE"],
    ["--config", ""],
    ["--output-format", "xml"],
    ["--output-format"],
    ["--select"],
    ["--select", "--fix"],
    ["--fix=yes"],
    ["--sellect", "VLL1"],
    ["-nq"],
]


@pytest.mark.parametrize("args", LEFT_TO_CLICK, ids=" ".join)
def test_other_command_lines_are_left_to_click(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EXISTING_FILE").write_text("")
    assert parse_common(args) is None


def test_the_table_is_the_click_command():
    """Every option of the click command comes from the table, with the same spellings."""
    declared = {opt.name: sorted(opt.opts + opt.secondary_opts) for opt in check.params if isinstance(opt, click.Option)}
    table = {o.param: sorted(d for declaration in o.declarations for d in declaration.split("/")) for o in CHECK_OPTIONS}
    assert declared == table


@pytest.mark.parametrize("args, click_free, libcst", [
    (["--version"], True, False),
    (["check", "--force-exclude", "--no-cache", "CLEAN"], True, False),
    (["check", "--select", "VLL2", "CLEAN"], True, False),
    (["check", "--help"], False, False),
    # It names the function that decides the rule (Implemented in:), which it finds by loading its family module.
    (["rule", "VLL101"], False, True),
    (["rule", "VLL201"], False, False),
])
def test_which_command_lines_import_click_and_libcst(tmp_path, args, click_free, libcst):
    clean = tmp_path / "clean.py"
    clean.write_text("import os\n\nprint(os.getcwd())\n")
    args = [str(clean) if a == "CLEAN" else a for a in args]
    code = ("import sys\nfrom vllm_lint.cli.entry import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    print('exit', e.code)\nprint('click' in sys.modules, 'libcst' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path)
    *_, exit_line, imported = out.stdout.strip().splitlines()
    assert exit_line == "exit 0", out.stdout + out.stderr
    assert imported == f"{not click_free} {libcst}"
