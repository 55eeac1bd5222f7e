"""Reading the source from stdin (`-` and --stdin-filename), as ruff does."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from findings import json_rows
from lintutil import run_cli

BAD = textwrap.dedent(
    """\
    from vllm import LLM, SamplingParams
    llm = LLM(model="m", gpu_memory_utilization=0.98)
    p = SamplingParams(max_new_tokens=8)
    """
)
FIXED = BAD.replace("max_new_tokens", "max_tokens")
DOCKERFILE = 'FROM vllm/vllm-openai\nCMD ["m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"]\n'


def test_dash_reads_python_from_stdin_and_reports_it_as_dash(tmp_path):
    result = run_cli("check", "--output-format", "json", "-", cwd=tmp_path, stdin=BAD)
    assert result.returncode == 1, result.stderr
    assert json_rows(result.stdout) == [("-", "VLL203", 2), ("-", "VLL202", 2), ("-", "VLL301", 3)]
    clean = run_cli("check", "-", cwd=tmp_path, stdin="print('hello')\n")
    assert clean.returncode == 0 and clean.stdout == "All checks passed!\n"


def test_full_format_shows_the_piped_line_not_the_file_on_disk(tmp_path):
    (tmp_path / "app.py").write_text("# an older version on disk\n" * 5, encoding="utf-8")
    result = run_cli("check", "--stdin-filename", "app.py", cwd=tmp_path, stdin=BAD)
    assert result.returncode == 1
    assert "app.py:3:20: VLL301" in result.stdout
    assert "p = SamplingParams(max_new_tokens=8)" in result.stdout
    assert "older version" not in result.stdout


def test_the_filename_decides_the_surface(tmp_path):
    as_dockerfile = run_cli("check", "--output-format", "json", "--stdin-filename", "deploy/Dockerfile", cwd=tmp_path, stdin=DOCKERFILE)
    assert json_rows(as_dockerfile.stdout) == [("deploy/Dockerfile", "VLL405", 1), ("deploy/Dockerfile", "VLL403", 2), ("deploy/Dockerfile", "VLL202", 2)]
    # The same text named as Python is read as Python: no launch command there.
    as_python = run_cli("check", "--output-format", "json", "--stdin-filename", "notes.py", cwd=tmp_path, stdin=DOCKERFILE)
    assert as_python.returncode == 0 and json_rows(as_python.stdout) == []
    # Without an extension the piped shebang decides, as for a file on disk.
    script = "#!/bin/bash\nvllm serve m --gpu-memory-utilization 0.99 --max-model-len 8192\n"
    as_script = run_cli("check", "--output-format", "json", "--stdin-filename", "bin/serve", cwd=tmp_path, stdin=script)
    assert json_rows(as_script.stdout) == [("bin/serve", "VLL403", 2), ("bin/serve", "VLL202", 2)]


def test_per_file_ignores_and_force_exclude_use_the_filename(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vllm-lint]\nextend-exclude = ["generated/"]\nper-file-ignores = {"scripts/*.py" = ["VLL203"]}\n',
        encoding="utf-8",
    )
    (tmp_path / "scripts").mkdir()
    result = run_cli("check", "--output-format", "json", "--stdin-filename", "scripts/run.py", cwd=tmp_path, stdin=BAD)
    assert [code for _, code, _ in json_rows(result.stdout)] == ["VLL202", "VLL301"]
    # An excluded name is linted when named without --force-exclude (ruff's rule for explicit files) ...
    named = run_cli("check", "--output-format", "json", "--stdin-filename", "generated/app.py", cwd=tmp_path, stdin=BAD)
    assert [code for _, code, _ in json_rows(named.stdout)] == ["VLL203", "VLL202", "VLL301"]
    # ... and skipped with it, even though no such file exists; --fix echoes the source untouched.
    skipped = run_cli("check", "--force-exclude", "--stdin-filename", "generated/app.py", cwd=tmp_path, stdin=BAD)
    assert skipped.returncode == 0 and skipped.stdout == "All checks passed!\n"
    echoed = run_cli("check", "--fix", "--force-exclude", "--stdin-filename", "generated/app.py", cwd=tmp_path, stdin=BAD)
    assert echoed.returncode == 0 and echoed.stdout == BAD


def test_configuration_is_found_from_the_filename(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "vllm-lint.toml").write_text('ignore = ["VLL203"]\n', encoding="utf-8")
    # src/new.py does not exist yet (an unsaved buffer): its folder's configuration applies.
    result = run_cli("check", "--output-format", "json", "--stdin-filename", "project/src/new.py", cwd=tmp_path, stdin=BAD)
    assert [code for _, code, _ in json_rows(result.stdout)] == ["VLL202", "VLL301"]


def test_fix_writes_the_fixed_source_to_stdout_and_the_report_to_stderr(tmp_path):
    result = run_cli("check", "--fix", "--stdin-filename", "app.py", cwd=tmp_path, stdin=BAD)
    assert result.stdout == FIXED
    assert result.returncode == 1  # VLL202 and VLL203 are left (their fixes are unsafe)
    assert "app.py:2:45: VLL202" in result.stderr and "Fixed 1 finding." in result.stderr
    assert not (tmp_path / "app.py").exists()
    unsafe = run_cli("check", "--fix", "--unsafe-fixes", "--output-format", "json", "-", cwd=tmp_path, stdin=BAD)
    assert unsafe.returncode == 0 and json.loads(unsafe.stderr) == []
    assert "gpu_memory_utilization=0.90" in unsafe.stdout and "max_model_len=" in unsafe.stdout
    only = run_cli("check", "--fix-only", "--exit-non-zero-on-fix", "-", cwd=tmp_path, stdin=BAD)
    assert (only.returncode, only.stdout, only.stderr) == (1, FIXED, "Fixed 1 finding.\n")


def test_fix_echoes_source_it_cannot_fix(tmp_path):
    broken = "from vllm import LLM\nllm = LLM(model='m'\n"
    result = run_cli("check", "--fix", "-", cwd=tmp_path, stdin=broken)
    assert result.stdout == broken and result.returncode == 1 and "VLL000" in result.stderr
    empty = run_cli("check", "--fix", "-", cwd=tmp_path, stdin="")
    assert (empty.returncode, empty.stdout) == (0, "")


def test_fix_keeps_the_bytes_it_does_not_fix(tmp_path):
    source = "# -*- coding: latin-1 -*-\r\nfrom vllm import SamplingParams\r\n# caf\xe9\r\np = SamplingParams(max_new_tokens=8)\r\n"
    raw = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "check", "--fix", "-"],
        input=source.encode("latin-1"), capture_output=True, cwd=tmp_path, timeout=300,
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == source.replace("max_new_tokens", "max_tokens").encode("latin-1")


def test_diff_and_output_file(tmp_path):
    diff = run_cli("check", "--diff", "--stdin-filename", "app.py", cwd=tmp_path, stdin=BAD)
    assert diff.returncode == 1
    assert "--- a/app.py" in diff.stdout and "+p = SamplingParams(max_tokens=8)" in diff.stdout
    none = run_cli("check", "--diff", "-", cwd=tmp_path, stdin="print(1)\n")
    assert none.returncode == 0 and none.stdout == "" and "No fixes available." in none.stderr
    report = tmp_path / "out" / "report.json"
    fixed = run_cli("check", "--fix", "--output-format", "json", "-o", str(report), "-", cwd=tmp_path, stdin=BAD)
    assert fixed.stdout == FIXED and fixed.stderr == ""
    assert json_rows(report.read_text(encoding="utf-8")) == [("-", "VLL203", 2), ("-", "VLL202", 2)]


def test_usage_errors(tmp_path):
    mixed = run_cli("check", "-", "app.py", cwd=tmp_path, stdin=BAD)
    assert mixed.returncode == 2 and "cannot be combined" in mixed.stderr and "Traceback" not in mixed.stderr
    ignored = run_cli("check", "--output-format", "json", "--stdin-filename", "x.py", "missing.py", cwd=tmp_path, stdin=BAD)
    assert ignored.returncode == 1 and "ignoring missing.py in favor of standard input" in ignored.stderr
    assert json_rows(ignored.stdout) == [("x.py", "VLL203", 2), ("x.py", "VLL202", 2), ("x.py", "VLL301", 3)]
    empty = run_cli("check", "--stdin-filename", "", cwd=tmp_path, stdin=BAD)
    assert empty.returncode == 2 and "must name a file" in empty.stderr
    binary = run_cli("check", "--stdin-filename", "Dockerfile", cwd=tmp_path, stdin="vllm serve \x00 m\n")
    assert binary.returncode == 1 and "VLL000" in binary.stdout and "Traceback" not in binary.stderr

