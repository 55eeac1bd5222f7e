"""The command line as users run it: exit codes, formats, configuration, suppressions, bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from findings import json_rows
from lintutil import REPO, run_cli

BAD = textwrap.dedent(
    """\
    from vllm import LLM
    llm = LLM(model="m", gpu_memory_utilization=0.98)
    """
)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_exit_codes_and_concise(tmp_path):
    write(tmp_path / "bad.py", BAD)
    write(tmp_path / "clean.py", "print('hello')\n")
    result = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert result.returncode == 1
    # (the concise lines themselves are a snapshot: test_output_formats.py)
    assert [line.split(" ", 2)[:2] for line in result.stdout.splitlines()] == [
        [f"{tmp_path / 'bad.py'}:2:7:", "VLL203"], [f"{tmp_path / 'bad.py'}:2:45:", "VLL202"], ["Found", "2"]]
    assert run_cli("check", "--exit-zero", str(tmp_path)).returncode == 0
    assert run_cli("check", str(tmp_path / "clean.py")).returncode == 0


def test_full_format_shows_source_and_caret(tmp_path):
    write(tmp_path / "bad.py", BAD)
    result = run_cli("check", "--no-color", str(tmp_path / "bad.py"))
    assert 'llm = LLM(model="m", gpu_memory_utilization=0.98)' in result.stdout
    assert "^^^^" in result.stdout
    assert "\x1b[" not in result.stdout


def test_json_format(tmp_path):
    write(tmp_path / "bad.py", BAD)
    result = run_cli("check", "--output-format", "json", str(tmp_path / "bad.py"))
    data = json.loads(result.stdout)
    by_code = {item["code"]: item for item in data}
    item = by_code["VLL202"]
    assert item["location"] == {"row": 2, "column": 45}
    assert item["end_location"]["row"] == 2
    assert item["fix"]["applicability"] == "unsafe"
    assert item["fix"]["edits"][0]["content"] == "0.90"
    assert item["url"] == "https://github.com/vllm-lint/vllm-lint/blob/main/docs/rules/VLL202.md"
    assert by_code["VLL203"]["fix"]["edits"][0]["content"] == ", max_model_len=8192"


def test_statistics(tmp_path):
    write(tmp_path / "bad.py", BAD)
    result = run_cli("check", "--statistics", str(tmp_path))
    assert result.stdout == "    1\tVLL202\tgpu-memory-utilization-out-of-range\n    1\tVLL203\tmissing-max-model-len\n"


def test_select_ignore_and_prefixes(tmp_path):
    write(tmp_path / "bad.py", BAD)
    only = run_cli("check", "--output-format", "json", "--select", "VLL202", str(tmp_path))
    assert {d["code"] for d in json.loads(only.stdout)} == {"VLL202"}
    ignored = run_cli("check", "--output-format", "json", "--ignore", "VLL2", str(tmp_path))
    assert json.loads(ignored.stdout) == []
    unknown = run_cli("check", "--select", "XYZ9", str(tmp_path))
    assert unknown.returncode == 2 and "unknown rule code" in unknown.stderr


def test_pyproject_configuration_found_upward(tmp_path):
    write(tmp_path / "pyproject.toml", textwrap.dedent("""\
        [tool.vllm-lint]
        ignore = ["VLL203"]
        per-file-ignores = {"legacy/*.py" = ["VLL202"]}
        extend-exclude = ["generated"]
        fix-max-model-len = 4096
        """))
    write(tmp_path / "src" / "bad.py", BAD)
    write(tmp_path / "legacy" / "old.py", BAD)
    write(tmp_path / "generated" / "gen.py", BAD)
    result = run_cli("check", "--output-format", "json", str(tmp_path))
    found = {(item["filename"].split("/")[-1], item["code"]) for item in json.loads(result.stdout)}
    assert found == {("bad.py", "VLL202")}


def test_vllm_lint_toml_and_fix_max_model_len(tmp_path):
    write(tmp_path / "vllm-lint.toml", 'select = ["VLL203"]\nfix-max-model-len = 4096\n')
    path = write(tmp_path / "bad.py", BAD)
    run_cli("check", "--fix", "--unsafe-fixes", str(path), cwd=tmp_path)
    assert "max_model_len=4096" in path.read_text()


def test_unknown_configuration_key_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.vllm-lint]\nselct = ['VLL2']\n")
    write(tmp_path / "bad.py", BAD)
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 2
    assert "unknown setting(s) selct" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_toml_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.vllm-lint\n")
    write(tmp_path / "bad.py", BAD)
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 2 and "invalid TOML" in result.stderr


def test_noqa_suppressions(tmp_path):
    path = write(tmp_path / "s.py", textwrap.dedent("""\
        from vllm import LLM
        a = LLM(model="m", gpu_memory_utilization=0.98, max_model_len=1)  # noqa: VLL202
        b = LLM(model="m", gpu_memory_utilization=0.98, max_model_len=1)  # noqa
        c = LLM(  # noqa: VLL202
            model="m",
            gpu_memory_utilization=0.98,
            max_model_len=1,
        )
        d = LLM(model="m", gpu_memory_utilization=0.98, max_model_len=1)  # noqa: VLL203
        """))
    result = run_cli("check", "--output-format", "json", str(path))
    found = [(item["code"], item["location"]["row"]) for item in json.loads(result.stdout)]
    assert found == [("VLL202", 9), ("VLL001", 9)]  # (the VLL203 comment there suppresses nothing)


def test_skip_file(tmp_path):
    path = write(tmp_path / "s.py", "# vllm-lint: skip-file\n" + BAD)
    assert run_cli("check", str(path)).returncode == 0


def test_gitignore_and_default_excludes(tmp_path):
    write(tmp_path / ".gitignore", "ignored/\n")
    write(tmp_path / "ignored" / "bad.py", BAD)
    write(tmp_path / ".venv" / "lib" / "bad.py", BAD)
    write(tmp_path / "node_modules" / "bad.py", BAD)
    assert run_cli("check", str(tmp_path)).returncode == 0
    # A file named explicitly is linted.
    assert run_cli("check", str(tmp_path / "ignored" / "bad.py")).returncode == 1
    # ...unless --force-exclude (pre-commit passes files explicitly).
    assert run_cli("check", "--force-exclude", str(tmp_path / ".venv" / "lib" / "bad.py")).returncode == 0


def test_gitignore_files_apply_as_git_applies_them(tmp_path):
    """A walk started below the repository root, by a relative path, still applies the .gitignore files
    above it; one in a subfolder applies below it, with paths relative to it; a nested repository's
    folder is governed by its own .gitignore only."""
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "generated_*.py\n/src/app/local.py\n")
    write(tmp_path / "src" / "app" / ".gitignore", "scratch/\n")
    for name in ("generated_a.py", "local.py", "scratch/s.py", "kept.py"):
        write(tmp_path / "src" / "app" / name, BAD)
    write(tmp_path / "src" / "app" / "vendored" / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(tmp_path / "src" / "app" / "vendored" / "generated_b.py", BAD)
    result = run_cli("check", "--output-format", "json", "--exit-zero", ".", cwd=tmp_path / "src")
    linted = {Path(item["filename"]).as_posix() for item in json.loads(result.stdout)}
    assert linted == {"app/kept.py", "app/vendored/generated_b.py"}


def test_missing_path_is_exit_2(tmp_path):
    result = run_cli("check", str(tmp_path / "nope.py"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"vllm-lint: error: {tmp_path / 'nope.py'}: no such file or directory"


def test_bad_files_become_vll000_and_the_run_goes_on(tmp_path):
    write(tmp_path / "a_syntax.py", "from vllm import LLM\nllm = LLM(model='m'\n")
    (tmp_path / "b_nul.py").write_bytes(b"from vllm import LLM\nx = 1\x00\n")
    (tmp_path / "c_undecodable.py").write_bytes(b"from vllm import LLM\ns = '\xff\xfe'\n")
    (tmp_path / "d_latin1.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nfrom vllm import LLM\ns = '\xe9'\nllm = LLM(model='m', gpu_memory_utilization=0.99)\n"
    )
    (tmp_path / "e_bom.py").write_bytes(b"\xef\xbb\xbffrom vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.99)\n")
    write(tmp_path / "f_good.py", BAD)
    result = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    found = json_rows(result.stdout)
    # the unclosed call: the parser names the line it stopped on (2) or the end of the file (3), by version
    syntax = found.pop(0)
    assert syntax in {("a_syntax.py", "VLL000", 2), ("a_syntax.py", "VLL000", 3)}
    assert found == [
        ("b_nul.py", "VLL000", 2),
        ("c_undecodable.py", "VLL000", 2),
        ("d_latin1.py", "VLL203", 4), ("d_latin1.py", "VLL202", 4),
        ("e_bom.py", "VLL203", 2), ("e_bom.py", "VLL202", 2),
        ("f_good.py", "VLL203", 2), ("f_good.py", "VLL202", 2),
    ]


def test_never_executes_linted_code(tmp_path):
    marker = tmp_path / "marker"
    write(tmp_path / "evil.py", f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nfrom vllm import LLM\nLLM(model='m')\n")
    run_cli("check", str(tmp_path))
    assert not marker.exists()


def test_rule_docs():
    result = run_cli("rule", "VLL101")
    assert result.returncode == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in result.stdout
    assert "# expect:" not in result.stdout
    listing = run_cli("rule", "--all").stdout
    assert [line.split()[0] for line in listing.splitlines()] == sorted(p.stem for p in (REPO / "rules").glob("VLL*.yaml"))
    assert run_cli("rule", "VLL999").returncode == 2


def test_version_does_not_import_libcst():
    import subprocess
    import sys

    code = "import sys; sys.argv=['vllm-lint','--version']\nfrom vllm_lint.cli.entry import main\ntry:\n main()\nexcept SystemExit: pass\nprint('libcst' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("False")


def test_project_source_is_clean():
    result = run_cli("check", "--output-format", "concise", str(REPO / "vllm_lint"), str(REPO / "tests"), str(REPO / "benchmarks"))
    assert result.returncode == 0, result.stdout


def test_fix_diff_and_exit_codes(tmp_path):
    path = write(tmp_path / "s.py", "from vllm import SamplingParams\np = SamplingParams(max_new_tokens=8)\n")
    diff = run_cli("check", "--diff", str(path))
    assert diff.returncode == 1 and "+p = SamplingParams(max_tokens=8)" in diff.stdout
    assert path.read_text().endswith("max_new_tokens=8)\n")
    fixed = run_cli("check", "--fix", "--exit-non-zero-on-fix", str(path))
    assert fixed.returncode == 1
    assert path.read_text() == "from vllm import SamplingParams\np = SamplingParams(max_tokens=8)\n"
    assert run_cli("check", "--fix", str(path)).returncode == 0


def test_unfixable_configuration(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.vllm-lint]\nunfixable = ["VLL301"]\n')
    path = write(tmp_path / "s.py", "from vllm import SamplingParams\np = SamplingParams(max_new_tokens=8)\n")
    run_cli("check", "--fix", str(path))
    assert "max_new_tokens" in path.read_text()


def test_stdlib_reports_nothing_but_vll000():
    import sysconfig
    from pathlib import Path

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    result = run_cli("check", "--no-respect-gitignore", "--output-format", "json", "--exit-zero", str(stdlib))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert {item["code"] for item in json.loads(result.stdout)} <= {"VLL000"}


def test_missing_dependency_is_a_clear_error(tmp_path):
    import subprocess
    import sys

    write(tmp_path / "bad.py", BAD)
    write(tmp_path / ".gitignore", "*.log\n")  # a glob: matching it needs pathspec (plain names do not)
    code = (
        "import sys; sys.modules['pathspec'] = None\n"
        f"sys.argv = ['vllm-lint', 'check', {str(tmp_path)!r}]\n"
        "from vllm_lint.cli.entry import main\nmain()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "'pathspec' is not installed" in result.stderr


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path):
    # `vllm-lint check --output-format json . | head -1`: the pipe closes before the findings are written.
    import subprocess
    import sys

    write(tmp_path / "bad.py", BAD)
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm_lint", "check", "--no-cache", "--output-format", "json", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 2
    assert stderr == ""


def test_the_program_exits_with_its_atexit_callbacks_and_output_but_no_teardown(tmp_path):
    # vllm-lint (the program, not a caller in Python) leaves without the interpreter's teardown of every module
    # (cli/entry.py: _leave): what a normal exit does that can be seen still happens.
    import subprocess
    import sys

    write(tmp_path / "bad.py", BAD)
    code = textwrap.dedent(
        f"""\
        import atexit, sys

        class Torn:
            def __del__(self):
                print("torn down", file=sys.stderr)

        kept = Torn()  # a module global: only a teardown deletes it
        atexit.register(lambda: print("atexit ran, collector", "on" if __import__("gc").isenabled() else "off", file=sys.stderr))
        sys.argv = ["vllm-lint", "check", "--no-cache", "--output-format", "concise", {str(tmp_path / "bad.py")!r}]
        from vllm_lint.cli.entry import main
        main()
        print("not reached")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stdout.endswith("\nFound 2 findings.\n"), result.stdout
    assert result.stderr == "atexit ran, collector off\n"  # (off for the whole run: cli/entry.py)


def test_only_check_and_hook_run_without_the_garbage_collector(tmp_path):
    # The servers (`server`, `mcp`) and every other command may run for hours: the collector stays on for them.
    import subprocess
    import sys

    code = textwrap.dedent(
        """\
        import atexit, gc, sys
        atexit.register(lambda: print("collector", "on" if gc.isenabled() else "off", file=sys.stderr))
        sys.argv = ["vllm-lint", *sys.argv[1:]]
        from vllm_lint.cli.entry import main
        main()
        """
    )
    write(tmp_path / "clean.py", "import os\n")
    for args, expected in ((["rule", "VLL101"], "on"), (["check", "--no-cache", str(tmp_path / "clean.py")], "off")):
        result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stderr.splitlines()[-1] == f"collector {expected}", (args, result.stderr)


def test_quiet_prints_the_findings_only_and_silent_nothing(tmp_path):
    path = write(tmp_path / "bad.py", BAD)
    full = run_cli("check", "--output-format", "concise", "--no-cache", str(path))
    quiet = run_cli("check", "--output-format", "concise", "-q", "--no-cache", str(path))
    assert full.stdout == quiet.stdout + "Found 2 findings.\n"
    assert quiet.returncode == 1 and quiet.stdout.count("\n") == 2
    silent = run_cli("check", "--silent", "--no-cache", str(path))
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    report = tmp_path / "report.json"
    silent_to_file = run_cli("check", "-s", "--output-format", "json", "-o", str(report), "--no-cache", str(path))
    assert (silent_to_file.returncode, silent_to_file.stdout) == (1, "")
    assert [item["code"] for item in json.loads(report.read_text())] == ["VLL203", "VLL202"]
    clean = write(tmp_path / "clean.py", "x = 1\n")
    assert run_cli("check", "--quiet", str(clean)).stdout == ""
    fixed = run_cli("check", "--quiet", "--fix", "--unsafe-fixes", "--no-cache", str(path))
    assert (fixed.returncode, fixed.stdout) == (0, "")
