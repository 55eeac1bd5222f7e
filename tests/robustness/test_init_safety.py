"""``vllm-lint init`` never writes outside its target directory, keeps modes, reports paths it cannot use
instead of a traceback, and an interrupted write leaves the old or the new file."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from .conftest import (
    kill_strays,
    run_vllm_lint,
    skip_unless_chmod_blocks,
    stopping_env,
    temp_files,
    vllm_lint_command,
    wait_stopped,
)

HAND_WRITTEN = b"# Project notes\n\nUse uv for installs.\n"


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, or where a symlink points, or 'dir'."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = path.read_bytes()
    return out


@pytest.fixture
def init(invoke):
    def run(*args: str, cwd: Path):
        return invoke("init", *args, cwd=cwd)

    return run


def test_symlinked_folder_pointing_outside_is_refused(tmp_path, init):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "copilot-instructions.md").write_bytes(HAND_WRITTEN)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".github").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    run = init("--target", "copilot", ".", cwd=project)
    assert _snapshot(outside) == before
    assert run.returncode == 1
    assert "vllm-lint: error: refusing to write .github/copilot-instructions.md: it resolves outside" in run.stderr
    assert "vllm-lint: error: refusing to write .github/instructions/vllm-serving.instructions.md: it resolves outside" in run.stderr


def test_dangling_symlinked_folder_is_not_created_outside(tmp_path, init):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".cursor").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    run = init("--target", "cursor", ".", cwd=project)
    assert not (tmp_path / "elsewhere").exists()
    assert run.returncode == 1
    assert "refusing to write .cursor/rules/vllm-serving.mdc: it resolves outside" in run.stderr


def test_target_directory_that_is_a_symlink_writes_only_into_what_it_points_at(tmp_path, init):
    real = tmp_path / "real"
    real.mkdir()
    (real / "CLAUDE.md").write_bytes(HAND_WRITTEN)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    others = tmp_path / "sibling"
    others.mkdir()
    run = init("link", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in real.iterdir()) == [".cursorrules", "AGENTS.md", "CLAUDE.md"]
    assert (real / "CLAUDE.md").read_bytes().startswith(HAND_WRITTEN)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real", "sibling"]
    assert list(others.iterdir()) == []
    assert (tmp_path / "link").is_symlink()


def test_dot_dot_in_the_target_path_stays_in_that_directory(tmp_path, init):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run = init("--dir", "a/../b", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [".cursorrules", "AGENTS.md", "CLAUDE.md"]
    assert list((tmp_path / "a").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_file_where_a_folder_should_be_is_an_error_not_a_traceback(tmp_path, init):
    (tmp_path / ".github").write_bytes(b"not a folder\n")
    run = init("--target", "copilot,agents", ".", cwd=tmp_path)
    assert run.returncode == 1
    assert "vllm-lint: error: cannot write .github/copilot-instructions.md: .github exists and is not a directory" in run.stderr
    assert (tmp_path / ".github").read_bytes() == b"not a folder\n"
    assert (tmp_path / "AGENTS.md").is_file()  # the other target was still written


def test_fifo_in_place_of_claude_md_is_refused_without_blocking(tmp_path, init):
    os.mkfifo(tmp_path / "CLAUDE.md")
    result: list = []
    thread = threading.Thread(target=lambda: result.append(init("--target", "claude", ".", cwd=tmp_path)), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "init blocked on a FIFO"
    run = result[0]
    assert run.returncode == 1
    assert "vllm-lint: error: CLAUDE.md exists and is not a regular file" in run.stderr


def test_unwritable_directory_is_an_error_not_a_traceback(tmp_path, init):
    skip_unless_chmod_blocks(tmp_path)
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(0o555)
    try:
        run = init("--target", "agents", "ro", cwd=tmp_path)
    finally:
        target.chmod(0o755)
    assert run.returncode == 2
    assert "vllm-lint: error: cannot write AGENTS.md: Permission denied" in run.stderr


@pytest.mark.parametrize("mode", [0o600, 0o664])
def test_init_keeps_the_mode_of_a_hand_written_file(tmp_path, init, mode):
    claude = tmp_path / "CLAUDE.md"
    claude.write_bytes(HAND_WRITTEN)
    claude.chmod(mode)
    run = init("--target", "claude", ".", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert claude.read_bytes().startswith(HAND_WRITTEN) and b"vllm-lint:begin" in claude.read_bytes()
    assert oct(claude.stat().st_mode & 0o7777) == oct(mode)


@pytest.mark.parametrize("point", ["written:CLAUDE.md", "after:1"])
def test_sigkill_during_init_leaves_old_or_new_claude_md(tmp_path, point):
    """CLAUDE.md with a long hand-written part, init SIGKILLed where it stops itself (``stopping_env``): inside its
    write (the old file stays, with the temporary copy beside it) or right after it (the new one)."""
    big = HAND_WRITTEN + b"A hand-written line of notes about the project.\n" * 120_000  # ~6 MB
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "CLAUDE.md").write_bytes(big)
    run = run_vllm_lint("init", "--target", "claude", ".", cwd=reference)
    assert run.returncode == 0, run.stderr
    new = (reference / "CLAUDE.md").read_bytes()
    assert new.startswith(big) and new != big

    work = tmp_path / "work"
    work.mkdir()
    (work / "CLAUDE.md").write_bytes(big)
    proc = subprocess.Popen([*vllm_lint_command(), "init", "--target", "claude", "."], cwd=work,
                            env=stopping_env(point), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_stopped(proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kill_strays(work)
    inside = point.startswith("written:")
    assert (work / "CLAUDE.md").read_bytes() == (big if inside else new)
    left = temp_files(work)
    assert [p.name.startswith(".CLAUDE.md.") for p in left] == ([True] if inside else [])
