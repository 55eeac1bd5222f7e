"""Helpers of the robustness tests: run vllm-lint for real (in-process or in a subprocess) on hostile trees.

The never-traceback, SIGKILL and never-execute tests need real processes; the rest run in-process through
click's CliRunner, which exercises the same command (workers still fork for parsing).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# A fixable line in Python: VLL202 (gpu_memory_utilization out of range) at column 45; unsafe fix 0.98 -> 0.90.
LLM_LINE = b'llm = LLM(model="m", gpu_memory_utilization=0.98)'
GOOD_PY = b"from vllm import LLM\n" + LLM_LINE + b"\n"
# A safe fix: VLL301 renames max_new_tokens to max_tokens.
SAFE_FIX_PY = b"from vllm import SamplingParams\np = SamplingParams(max_new_tokens=16, temperature=0.5)\n"
SAFE_FIXED_PY = b"from vllm import SamplingParams\np = SamplingParams(max_tokens=16, temperature=0.5)\n"
TEMP_SUFFIX = ".vllm-lint.tmp"


def vllm_lint_command() -> list[str]:
    """The installed console script: unlike ``python -m``, it does not put the working folder on sys.path."""
    script = Path(sys.executable).parent / "vllm-lint"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-P", "-m", "vllm_lint"] if sys.version_info >= (3, 11) else [sys.executable, "-m", "vllm_lint"]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a vllm-lint subprocess: no VLLM_LINT_* settings from outside, and the package under
    test importable by name even where it is not installed (it is put on PYTHONPATH, never the working folder)."""
    import vllm_lint

    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_LINT_")}
    package_root = str(Path(vllm_lint.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env.update(extra)
    return env


STOP_SITE = Path(__file__).resolve().parent / "stop_site"


def stopping_env(point: str) -> dict[str, str]:
    """The environment of a vllm-lint subprocess that stops itself (SIGSTOP) at ``point`` of its atomic writes:
    ``written:NAME`` (NAME's temporary file written, before the changed-meanwhile check), ``before:NAME`` (after
    it, just before the rename onto NAME), ``after:N`` (the Nth file written) or ``forked:N`` (its Nth parser
    process started). ``stop_site/sitecustomize.py`` does it; ``wait_stopped`` waits for it."""
    env = cli_env(VLLM_LINT_TEST_STOP=point)
    env["PYTHONPATH"] = os.pathsep.join([str(STOP_SITE), env["PYTHONPATH"]])
    return env


def wait_stopped(proc: subprocess.Popen) -> None:
    """Block until the process has stopped itself where ``stopping_env`` said; fail if it ended instead."""
    pid, status = os.waitpid(proc.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        proc.returncode = os.waitstatus_to_exitcode(status)
        pytest.fail(f"the run ended (exit code {proc.returncode}) before the point it was to stop at", pytrace=False)


def resume(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGCONT)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def findings(self) -> list[dict]:
        return json.loads(self.stdout) if self.stdout.strip() else []


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr[-3000:]
    assert run.returncode in (0, 1), f"exit code {run.returncode}:\n{run.stderr[-3000:]}"


def run_vllm_lint(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None) -> Run:
    proc = subprocess.run([*vllm_lint_command(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env or cli_env(), check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def invoke(monkeypatch):
    """Run ``vllm-lint ARGS`` in-process with the working folder set to ``cwd``."""
    from click.testing import CliRunner

    from vllm_lint.cli.main import cli

    for name in list(os.environ):
        if name.startswith("VLLM_LINT_"):
            monkeypatch.delenv(name)

    def run(*args: str, cwd: Path) -> Run:
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Run(result.exit_code, result.stdout, result.stderr)

    return run


def summary(findings: list[dict]) -> set[tuple[str, str, int, int]]:
    """(file, code, row, column) of each finding."""
    return {(f["filename"], f["code"], f["location"]["row"], f["location"]["column"]) for f in findings}


def temp_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX))


def skip_unless_chmod_blocks(tmp_path: Path) -> None:
    """Skip when permissions do not bind this process (root, or CAP_DAC_OVERRIDE): chmod 000 cannot be tested."""
    probe = tmp_path / ".chmod-probe"
    probe.write_bytes(b"x")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return
    finally:
        probe.chmod(0o644)
        probe.unlink()
    pytest.skip(f"permissions do not bind this process (euid {os.geteuid()}): chmod 000 does not stop its reads")


def kill_strays(folder: Path) -> list[int]:
    """SIGKILL every vllm-lint process still running in ``folder`` (its working directory) and return their ids.

    A vllm-lint killed with SIGKILL (or SIGTERM) leaves its parser processes running (a known bug: see
    test_sigkill_leaves_no_parser_process_behind); the tests that kill it clean up after it with this, so a
    CI machine is not left with them. Only processes started in this test's own folder are touched.
    """
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        return []
    killed = []
    prefix = str(folder.resolve())
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if (cwd == prefix or cwd.startswith(prefix + os.sep)) and b"vllm-lint" in cmdline:
            try:
                os.kill(int(entry.name), 9)
                killed.append(int(entry.name))
            except OSError:
                pass
    return killed
