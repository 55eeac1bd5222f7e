"""What ``check --fix`` writes: atomically (SIGKILL/SIGINT at any moment leaves each file exactly old or exactly
new), with its mode kept, never outside the folder it runs in through a symlink, never over an edit made while
it ran, and never a byte of the user's file lost to an encoding, BOM, line ending or form feed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import (
    GOOD_PY,
    SAFE_FIX_PY,
    SAFE_FIXED_PY,
    TEMP_SUFFIX,
    assert_no_traceback,
    cli_env,
    kill_strays,
    resume,
    run_vllm_lint,
    stopping_env,
    summary,
    temp_files,
    vllm_lint_command,
    wait_stopped,
)

SMALL_FILES = 6
BIG_README_LINES = 40_000  # ~3.5 MB: a write that takes a while
PROSE = b"Some prose about serving models with plenty of words in it, nothing to see here at all.\n"
README_HEAD = (b"# Serving\n\n```bash\npython -m vllm.entrypoints.openai.api_server --model m --max-model-len 4096"
               b" --gpu-memory-utilization 0.9\n```\n\n")
README_HEAD_FIXED = b"# Serving\n\n```bash\nvllm serve m --max-model-len 4096 --gpu-memory-utilization 0.9\n```\n\n"
README = README_HEAD + PROSE * BIG_README_LINES
TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX) + "$")


SCRIPT = b"#!/bin/sh\npython -m vllm.entrypoints.openai.api_server --model m%d --max-model-len 4096 --gpu-memory-utilization 0.9\n"
SCRIPT_FIXED = b"#!/bin/sh\nvllm serve m%d --max-model-len 4096 --gpu-memory-utilization 0.9\n"


def _originals() -> dict[str, bytes]:
    # Shell scripts and Markdown: no LibCST start-up, so each run reaches its writes quickly.
    files = {f"s{i:02d}.sh": SCRIPT % i for i in range(SMALL_FILES)}
    files["zz_README.md"] = README  # fixed last: kills find some small files already new
    return files


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)


def _fixed_versions(originals: dict[str, bytes]) -> dict[str, bytes]:
    """The bytes an uninterrupted ``check --fix`` writes (VLL401 rewrites the api_server line to vllm serve)."""
    fixed = {f"s{i:02d}.sh": SCRIPT_FIXED % i for i in range(SMALL_FILES)}
    fixed["zz_README.md"] = README_HEAD_FIXED + PROSE * BIG_README_LINES
    return fixed


def _assert_old_or_new(root: Path, originals: dict[str, bytes], fixed: dict[str, bytes]) -> dict[str, int]:
    states = {"old": 0, "new": 0}
    for name, old in originals.items():
        data = (root / name).read_bytes()
        assert data in (old, fixed[name]), f"{name}: neither the old nor the new bytes ({len(data)} bytes)"
        states["old" if data == old else "new"] += 1
    return states


def _assert_temp_files_named(root: Path, originals: dict[str, bytes]) -> list[Path]:
    left = temp_files(root)
    for path in left:
        match = TEMP_NAME.match(path.name)
        assert match and match.group("name") in originals, f"unexpected leftover {path.name}"
    assert {p.name for p in root.iterdir()} <= set(originals) | {p.name for p in left}
    return left


# Where a run is stopped, and what each file then holds: inside the first write, between two files, inside the
# last (big) write. The files are fixed in the order they are found (s00.sh ... s05.sh, then zz_README.md).
_KILL_POINTS = {
    "written:s00.sh": (0, True),  # (files already new, a temporary file left)
    "after:3": (3, False),
    "written:zz_README.md": (SMALL_FILES, True),
}


@pytest.mark.parametrize("point", list(_KILL_POINTS))
def test_sigkill_inside_or_between_writes_leaves_old_or_new_bytes(tmp_path, point):
    """The run stops itself at ``point`` (``stopping_env``), is SIGKILLed there, and every file is exactly old or
    exactly new; a temporary file left by a kill inside a write is never linted, and the next run finishes."""
    originals = _originals()
    fixed = _fixed_versions(originals)
    work = tmp_path
    _write(work, originals)
    proc = subprocess.Popen([*vllm_lint_command(), "check", "--fix", "--no-cache", "."], cwd=work,
                            env=stopping_env(point), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_stopped(proc)
    proc.kill()
    proc.wait()
    kill_strays(work)
    assert proc.returncode == -signal.SIGKILL
    new, temp_left = _KILL_POINTS[point]
    names = sorted(originals)
    assert {name: (work / name).read_bytes() for name in names} == {
        name: fixed[name] if index < new else originals[name] for index, name in enumerate(names)
    }
    left = _assert_temp_files_named(work, originals)
    assert len(left) == (1 if temp_left else 0), left

    # Leftover temporary files are never linted, and the next run finishes the job.
    run = run_vllm_lint("check", "--fix", "--no-cache", "--output-format", "json", ".", cwd=work)
    assert_no_traceback(run)
    assert not any(f["filename"].endswith(TEMP_SUFFIX) for f in run.findings())
    assert {name: (work / name).read_bytes() for name in originals} == fixed


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_polite_signal_while_writing_leaves_no_temp_file(tmp_path, signum):
    """Ctrl-C (SIGINT to the process group) and SIGTERM (what CI sends on cancel) are held back while a temporary
    file exists, so, unlike SIGKILL, they never leave one: sent while the big file's temporary file is written
    and not yet renamed, the rename is done first."""
    originals = _originals()
    fixed = _fixed_versions(originals)
    work = tmp_path
    _write(work, originals)
    proc = subprocess.Popen([*vllm_lint_command(), "check", "--fix", "--no-cache", "."], cwd=work,
                            env=stopping_env("before:zz_README.md"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    wait_stopped(proc)
    assert len(temp_files(work)) == 1
    os.killpg(proc.pid, signum)
    resume(proc)
    _, err = proc.communicate(timeout=60)
    kill_strays(work)
    assert "Traceback" not in err
    assert {name: (work / name).read_bytes() for name in originals} == fixed
    assert temp_files(work) == []


def test_ctrl_c_exit_code_is_130(tmp_path):
    (tmp_path / "README.md").write_bytes(README)
    # A shell runs background jobs with SIGINT ignored, and children inherit that (CI scripts often do):
    # give the child the default disposition a terminal would, so that Python installs its Ctrl-C handler.
    proc = subprocess.Popen([*vllm_lint_command(), "check", "--fix", "--no-cache", "."], cwd=tmp_path,
                            env=stopping_env("before:README.md"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_stopped(proc)
    os.killpg(proc.pid, signal.SIGINT)
    resume(proc)
    proc.communicate(timeout=60)
    kill_strays(tmp_path)
    assert proc.returncode == 130


@pytest.mark.parametrize("mode", [0o755, 0o2640])
def test_fix_keeps_the_file_mode(tmp_path, invoke, mode):
    script = tmp_path / "serve.py"
    script.write_bytes(b"#!/usr/bin/env python\n" + SAFE_FIX_PY)
    script.chmod(mode)
    run = invoke("check", "--fix", "--no-cache", "serve.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert script.read_bytes() == b"#!/usr/bin/env python\n" + SAFE_FIXED_PY
    assert oct(script.stat().st_mode & 0o7777) == oct(mode)
    assert temp_files(tmp_path) == []


def test_symlink_inside_the_project_is_fixed_at_its_target(tmp_path, invoke):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_bytes(SAFE_FIX_PY)
    (tmp_path / "app.py").symlink_to("src/app.py")
    run = invoke("check", "--fix", "--no-cache", "app.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "app.py").is_symlink()
    assert (tmp_path / "src" / "app.py").read_bytes() == SAFE_FIXED_PY


@pytest.mark.parametrize("link", ["file", "folder"])
def test_symlink_out_of_the_project_is_not_written(tmp_path, invoke, link):
    """A checked-out pull request can carry symlinks; --fix must not write where they point outside the project."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lib.py").write_bytes(SAFE_FIX_PY)
    project = tmp_path / "project"
    project.mkdir()
    (project / "own.py").write_bytes(SAFE_FIX_PY)
    if link == "file":
        (project / "lib.py").symlink_to(outside / "lib.py")
        shown = "lib.py"
    else:
        (project / "vendor").symlink_to(outside, target_is_directory=True)
        shown = "vendor/lib.py"
    run = invoke("check", "--fix", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert (outside / "lib.py").read_bytes() == SAFE_FIX_PY
    assert (project / "own.py").read_bytes() == SAFE_FIXED_PY
    assert f"{shown}: not fixed: through a symlink it is {(outside / 'lib.py').resolve()}, outside" in run.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["lib.py"]
    assert run.returncode in (0, 1)


def test_a_refused_write_still_reports_the_findings(tmp_path, invoke):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lib.py").write_bytes(SAFE_FIX_PY)
    project = tmp_path / "project"
    project.mkdir()
    (project / "lib.py").symlink_to(outside / "lib.py")
    run = invoke("check", "--fix", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert (outside / "lib.py").read_bytes() == SAFE_FIX_PY
    assert summary(run.findings()) == {("lib.py", "VLL301", 2, 20)}
    assert run.returncode == 1


def test_a_file_edited_during_the_run_is_left_alone(tmp_path):
    """The changed-on-disk check: fix computed from the bytes read, file edited, write refused, the edit kept."""
    from vllm_lint.config import Settings, enabled_codes
    from vllm_lint.engine.fixer import fix_bytes, fix_policy, write_atomically
    from vllm_lint.surfaces.python import PYTHON
    from vllm_lint.rulebook import all_codes
    from vllm_lint.engine.runner import RunOptions

    path = tmp_path / "app.py"
    path.write_bytes(SAFE_FIX_PY)
    codes = all_codes()
    settings = Settings(root=tmp_path)
    options = RunOptions(settings, enabled_codes(settings, codes), codes)
    outcome = fix_bytes(path, path.read_bytes(), PYTHON, options, fix_policy(options, unsafe=False))
    assert outcome.fixed == SAFE_FIXED_PY
    edited = SAFE_FIX_PY + b"# typed by a person while vllm-lint ran\n"
    path.write_bytes(edited)
    warning = write_atomically(path, outcome.original, outcome.fixed)
    assert warning == f"{path}: not fixed: the file changed on disk while vllm-lint ran"
    assert path.read_bytes() == edited
    assert temp_files(tmp_path) == []


def test_edits_racing_a_real_fix_run_are_never_lost(tmp_path):
    """A person appends to a big file around a real ``--fix`` run on it: the edit survives. Made before the run
    reads the file, it is fixed on top of; made while the fixed file's temporary copy is written (the run stopped
    there by ``stopping_env``), the write is refused: the file's identity (inode, size, mtime, ctime) is compared
    again just before the rename."""
    readme = tmp_path / "README.md"
    big = README_HEAD + PROSE * 100_000
    outcomes = []
    for point in (None, "written:README.md"):
        readme.write_bytes(big)
        if point is None:
            with readme.open("ab") as handle:
                handle.write(b"A line a person typed.\n")
        proc = subprocess.Popen([*vllm_lint_command(), "check", "--fix", "--no-cache", "README.md"], cwd=tmp_path,
                                env=cli_env() if point is None else stopping_env(point), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if point is not None:
            wait_stopped(proc)
            with readme.open("ab") as handle:
                handle.write(b"A line a person typed.\n")
            resume(proc)
        _, err = proc.communicate(timeout=120)
        kill_strays(tmp_path)
        data = readme.read_bytes()
        assert data.endswith(b"A line a person typed.\n"), f"the edit was lost ({point})"
        assert "Traceback" not in err
        refused = "README.md: not fixed: the file changed on disk while vllm-lint ran" in err
        fixed = b"vllm serve m" in data
        assert refused != fixed, err  # exactly one of the two happened
        outcomes.append("refused" if refused else "fixed on top")
    assert outcomes == ["fixed on top", "refused"]
    assert temp_files(tmp_path) == []


# Bytes the user wrote that a fix must carry over exactly: encoding, BOM, line endings, tabs.
ENCODINGS = {
    "latin1_cookie.py": (b"# -*- coding: latin-1 -*-\nfrom vllm import LLM\nx = '\xe9'\r\nllm = LLM(model='m', gpu_memory_utilization=0.98)\r\n",
                         b"# -*- coding: latin-1 -*-\nfrom vllm import LLM\nx = '\xe9'\r\nllm = LLM(model='m', gpu_memory_utilization=0.90)\r\n"),
    "bom_crlf.py": (b"\xef\xbb\xbf" + GOOD_PY.replace(b"\n", b"\r\n"),
                    b"\xef\xbb\xbf" + GOOD_PY.replace(b"0.98", b"0.90").replace(b"\n", b"\r\n")),
    "tabs.py": (b"from vllm import LLM\nif True:\n\tllm = LLM(model='m', gpu_memory_utilization=0.98)  # \xc3\xa9\n",
                b"from vllm import LLM\nif True:\n\tllm = LLM(model='m', gpu_memory_utilization=0.90)  # \xc3\xa9\n"),
    "crlf.sh": (b"#!/bin/sh\r\nvllm serve m --gpu-memory-utilization 0.98\r\n", b"#!/bin/sh\r\nvllm serve m --gpu-memory-utilization 0.90\r\n"),
    "bom.md": (b"\xef\xbb\xbf# x\r\n\r\n```bash\r\nvllm serve m --gpu-memory-utilization 0.98\r\n```\r\n",
               b"\xef\xbb\xbf# x\r\n\r\n```bash\r\nvllm serve m --gpu-memory-utilization 0.90\r\n```\r\n"),
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_fix_keeps_every_other_byte(tmp_path, invoke, name):
    before, after = ENCODINGS[name]
    (tmp_path / name).write_bytes(before)
    run = invoke("check", "--fix", "--unsafe-fixes", "--select", "VLL202", "--no-cache", name, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / name).read_bytes() == after


def test_cr_only_line_endings_are_left_alone(tmp_path, invoke):
    """Old-Mac ``\\r`` line endings: statement edits find no line start to anchor on, and regenerating the
    module would drop the last ``\\r`` (LibCST does), so no fix is made: the file stays byte for byte."""
    before = GOOD_PY.replace(b"\n", b"\r")
    (tmp_path / "cr.py").write_bytes(before)
    run = invoke("check", "--fix", "--unsafe-fixes", "--select", "VLL202", "--no-cache", "--output-format", "json",
                 "cr.py", cwd=tmp_path)
    assert (tmp_path / "cr.py").read_bytes() == before
    assert summary(run.findings()) == {("cr.py", "VLL202", 2, 45)}
    assert run.returncode == 1


def test_form_feed_at_a_line_start_is_kept_and_the_fix_lands_where_it_belongs(tmp_path, invoke):
    """LibCST drops a form feed that starts a line; fix offsets computed on its rendering landed one character
    off (this once wrote ``gpu_memory_utilization=0.9, max_model_len=81928)``). Edits are placed in the file's
    own text, after the form feed, which stays."""
    (tmp_path / "ff.py").write_bytes(b"from vllm import LLM\n\x0cllm = LLM(model='m', gpu_memory_utilization=0.98)\n")
    run = invoke("check", "--fix", "--unsafe-fixes", "--no-cache", "--select", "VLL202,VLL203", "--output-format", "json",
                 "ff.py", cwd=tmp_path)
    assert (tmp_path / "ff.py").read_bytes() == (
        b"from vllm import LLM\n\x0cllm = LLM(model='m', gpu_memory_utilization=0.90, max_model_len=8192)\n")
    assert run.findings() == []
    assert run.returncode == 0


def test_a_whole_module_rewrite_is_not_applied_where_it_would_drop_a_form_feed(tmp_path, invoke):
    """The server rewrite regenerates the whole module, which would lose the form feed: file untouched."""
    from vllm_lint.rulebook import load_rules

    bad = next(e.clean_code for e in load_rules()["VLL101"].bad_examples if "FastAPI" in e.code)
    plain, with_form_feed = tmp_path / "plain.py", tmp_path / "ff.py"
    plain.write_text(bad)
    with_form_feed.write_bytes(b"\x0c" + bad.encode())
    run = invoke("check", "--fix", "--unsafe-fixes", "--no-cache", "--select", "VLL101", "--output-format", "json",
                 "plain.py", "ff.py", cwd=tmp_path)
    assert plain.read_text() != bad  # the same server without the form feed is rewritten
    assert with_form_feed.read_bytes() == b"\x0c" + bad.encode()
    assert {(f["filename"], f["code"]) for f in run.findings()} == {("ff.py", "VLL101")}


def test_stale_temp_file_is_never_linted_or_fixed(tmp_path, invoke):
    """A temporary file left by a SIGKILLed run holds lintable text; it is neither reported nor rewritten."""
    (tmp_path / "app.py").write_bytes(SAFE_FIX_PY)
    stale = tmp_path / f".app.py.k3j2h1{TEMP_SUFFIX}"
    stale.write_bytes(SAFE_FIX_PY)
    run = invoke("check", "--fix", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "app.py").read_bytes() == SAFE_FIXED_PY
    assert stale.read_bytes() == SAFE_FIX_PY
    assert run.findings() == []


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the parser processes")
def test_sigkill_leaves_no_parser_process_behind(tmp_path):
    for i in range(60):
        (tmp_path / f"m{i:02d}.py").write_bytes(SAFE_FIX_PY)
    proc = subprocess.Popen([*vllm_lint_command(), "check", "--no-cache", "."], cwd=tmp_path, env=stopping_env("forked:1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_stopped(proc)  # right after it started its first parser process
        children = _children(proc.pid)
        assert children, "vllm-lint started no parser process"
        proc.kill()
        proc.wait()
        # A child that sees its parent's end of the pipe close exits at once; the limit only fails one that stays.
        deadline = time.monotonic() + 60
        while [pid for pid in children if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in children if _alive(pid)] == []
    finally:
        kill_strays(tmp_path)


def test_a_symlinked_cache_folder_does_not_write_outside(tmp_path, invoke):
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_bytes(GOOD_PY)
    (project / ".vllm_lint_cache").symlink_to(outside, target_is_directory=True)
    run = invoke("check", "--select", "VLL202", "--output-format", "json", ".", cwd=project)
    assert summary(run.findings()) == {("a.py", "VLL202", 2, 45)}
    assert sorted(p.name for p in outside.iterdir()) == []
