"""Parallel checking: a file that crashes or hangs the parser costs only itself.

The crash is real: LibCST's native parser overflows its stack on 10,000 nested
lambdas and the process dies with SIGSEGV (measured). Written one per line they
get past the complexity guard (python/complexity.py, which refuses the shapes it
knows before LibCST sees them), so the worker's crash isolation is what catches
them. The hang is a file that takes longer than the time limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lintutil import run_cli

TRIGGER = "from vllm import LLM\nllm = LLM(model='m')\n"  # gets past the pre-filter; VLL201 + VLL203
CRASHER = "from vllm import LLM\nllm = LLM(model=(\n" + "lambda:\n" * 10_000 + "'m'))\n"


def findings(result) -> set[tuple[str, str]]:
    return {(item["filename"].rsplit("/", 1)[-1], item["code"]) for item in json.loads(result.stdout)}


def messages(result, name: str) -> list[str]:
    return [item["message"] for item in json.loads(result.stdout) if item["filename"].endswith(name)]


@pytest.mark.parametrize("many", [False, True], ids=["few-files", "many-files"])
def test_a_parser_crash_is_reported_for_that_file_and_the_run_goes_on(tmp_path, many):
    (tmp_path / "crash.py").write_text(CRASHER, encoding="utf-8")
    count = 120 if many else 3  # above and below the in-process threshold
    for index in range(count):
        (tmp_path / f"good_{index:03d}.py").write_text(TRIGGER if index % 10 == 0 else "x = 1\n", encoding="utf-8")
    result = run_cli("check", "--no-cache", "--output-format", "json", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert messages(result, "crash.py") == ["the parser process crashed (SIGSEGV) on this file; skipped"]
    expected = {(f"good_{i:03d}.py", code) for i in range(0, count, 10) for code in ("VLL201", "VLL203")}
    assert findings(result) == expected | {("crash.py", "VLL000")}


# One file to parse: a small one CPython's parser reads is parsed in the check command's own process; one it refuses
# (brackets nested past its limit of 200: 6 KB that crash LibCST's parser) still goes to a child, whose crash is the
# file's VLL000. (engine/workers.py: _parses_safely_here)
_NO_POOL = ("import sys; from vllm_lint.engine import workers\n"
            "class NoPool:\n    def __init__(self, *a, **k): raise AssertionError('a worker pool was started')\n"
            "workers._Pool = NoPool\nfrom vllm_lint.cli.entry import main\n"
            "main(['check', '--no-cache', '--output-format', 'json', sys.argv[1]])\n")


@pytest.mark.parametrize("shape", ["small", "crasher"])
def test_one_small_file_is_parsed_here_and_a_crasher_in_a_child(tmp_path, shape):
    path = tmp_path / f"{shape}.py"
    # (an invalid escape sequence: CPython warns of it as it reads the file, which must not reach stderr)
    path.write_text(TRIGGER + ('pattern = "\\d"\n' if shape == "small" else "x = (\n" + "(\n" * 3000), encoding="utf-8")
    if shape == "small":
        here = subprocess.run([sys.executable, "-W", "always", "-c", _NO_POOL, str(path)], capture_output=True, text=True,
                              timeout=120)
        assert here.returncode == 1, here.stderr
        assert "escape sequence" not in here.stderr
        assert findings(here) == {("small.py", "VLL201"), ("small.py", "VLL203")}
        return
    result = run_cli("check", "--no-cache", "--output-format", "json", str(path))
    assert result.returncode == 1, result.stderr
    assert messages(result, "crasher.py") == ["the parser process crashed (SIGSEGV) on this file; skipped"]


def test_a_file_over_the_time_limit_is_reported_and_the_run_goes_on(tmp_path):
    # ~60,000 lines that must be parsed: seconds of LibCST work, far over a 3 s limit.
    slow = TRIGGER + "".join(f"value_{i} = [{i}, {i + 1}, {{'k': {i}}}]\n" for i in range(60_000))
    (tmp_path / "slow.py").write_text(slow, encoding="utf-8")
    (tmp_path / "quick.py").write_text(TRIGGER, encoding="utf-8")
    env = {**os.environ, "VLLM_LINT_FILE_TIMEOUT": "3"}
    result = run_cli("check", "--no-cache", "--output-format", "json", str(tmp_path), env=env)
    assert result.returncode == 1, result.stderr
    assert messages(result, "slow.py") == [
        "the parser process took longer than 3 s to analyse (VLLM_LINT_FILE_TIMEOUT); skipped"
    ]
    assert findings(result) == {("slow.py", "VLL000"), ("quick.py", "VLL201"), ("quick.py", "VLL203")}


# A pre-filter that never ends on one file (none is known since h2ogpt's import lists: api_prefilter._IMPORT), put in
# place before the run forks its children, which inherit it.
_HANGING_PREFILTER = (
    "import sys\nfrom vllm_lint.python import prefilter\nreal = prefilter.may_match\n"
    "def may_match(data, path, *rest):\n    while path.name == 'hang.py':\n        pass\n    return real(data, path, *rest)\n"
    "prefilter.may_match = may_match\nfrom vllm_lint.cli.entry import main\n"
    "main(['check', '--no-cache', '--output-format', 'json', sys.argv[1]])\n"
)


@pytest.mark.parametrize("many", [False, True], ids=["read-here", "read-in-children"])
def test_a_file_whose_reading_never_ends_before_any_parse_is_reported_and_the_run_goes_on(tmp_path, many):
    """The time limit covers the pre-filter too: a child, which has told the parent of no parse, keeps its clock;
    a small run's files are read in the check command's own process, which keeps one too."""
    (tmp_path / "hang.py").write_text(TRIGGER, encoding="utf-8")
    count = 60 if many else 20  # either side of the in-process threshold (48 files)
    for index in range(count):
        (tmp_path / f"good_{index:03d}.py").write_text(TRIGGER if index % 10 == 0 else "x = 1\n", encoding="utf-8")
    env = {**os.environ, "VLLM_LINT_FILE_TIMEOUT": "2"}
    result = subprocess.run([sys.executable, "-c", _HANGING_PREFILTER, str(tmp_path)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 1, result.stderr
    assert messages(result, "hang.py") == [
        "the file took longer than 2 s to analyse (VLLM_LINT_FILE_TIMEOUT); skipped"
    ]
    expected = {(f"good_{i:03d}.py", code) for i in range(0, count, 10) for code in ("VLL201", "VLL203")}
    assert findings(result) == expected | {("hang.py", "VLL000")}


def test_parallel_results_equal_serial_results(tmp_path):
    for index in range(150):
        body = TRIGGER if index % 3 == 0 else "from vllm import SamplingParams\np = SamplingParams(temperature=0)\n"
        (tmp_path / f"m{index:03d}.py").write_text(body, encoding="utf-8")
    parallel = run_cli("check", "--no-cache", "--output-format", "json", str(tmp_path))
    serial = run_cli("check", "--no-cache", "--output-format", "json", str(tmp_path), env={**os.environ, "VLLM_LINT_JOBS": "1"})
    assert parallel.returncode == serial.returncode == 1
    assert json.loads(parallel.stdout) == json.loads(serial.stdout)
    assert len(json.loads(parallel.stdout)) == 50 * 2 + 100  # VLL201+VLL203 per engine, VLL302 per SamplingParams
    # VLLM_LINT_JOBS=0: the same report from this one process (a profiler's or a debugger's view), no child started.
    script = ("import sys; from vllm_lint.engine import workers\n"
              "class NoPool:\n    def __init__(self, *a, **k): raise AssertionError('a worker pool was started')\n"
              "workers._Pool = NoPool\nfrom vllm_lint.cli.entry import main\n"
              f"main(['check', '--no-cache', '--output-format', 'json', {str(tmp_path)!r}])\n")
    here = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "VLLM_LINT_JOBS": "0"})
    assert here.returncode == 1, here.stderr
    assert json.loads(here.stdout) == json.loads(parallel.stdout)


# Run in a process of its own: multiprocessing's spawn leaves a resource tracker running until its parent ends.
_POOL_SCRIPT = """
import json, sys
from pathlib import Path
from vllm_lint.config import Settings, enabled_codes
from vllm_lint.engine.processes import ForkBackend, MultiprocessingBackend
from vllm_lint.rulebook import all_codes
from vllm_lint.engine.runner import RunOptions
from vllm_lint.engine.workers import Task, _Pool

if __name__ == "__main__":
    folder, backend = Path(sys.argv[1]), sys.argv[2]
    codes = all_codes()
    settings = Settings(root=folder)
    options = RunOptions(settings, enabled_codes(settings, codes, ()), codes)
    paths = sorted(folder.iterdir())
    tasks = [Task(index, path, "python") for index, path in enumerate(paths)]
    chosen = ForkBackend() if backend == "fork" else MultiprocessingBackend("spawn")
    results = _Pool(options, 2, chosen).run(tasks)
    print(json.dumps(sorted([paths[i].name, d.code, d.message if d.code == "VLL000" else ""]
                            for i, result in results.items() for d in result.diagnostics)))
"""


@pytest.mark.parametrize("backend", ["fork", "spawn"])
def test_each_way_of_starting_children_isolates_a_crash(tmp_path, backend):
    """Linux forks children itself (processes.ForkBackend); elsewhere multiprocessing spawns them. Both are run
    here, on a crash and on files with findings, through the pool the check command uses."""
    import subprocess
    import sys

    from lintutil import REPO

    files = tmp_path / "files"
    files.mkdir()
    (files / "crash.py").write_text(CRASHER, encoding="utf-8")
    for index in range(3):
        (files / f"good_{index}.py").write_text(TRIGGER, encoding="utf-8")
    script = tmp_path / "pool.py"
    script.write_text(_POOL_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, str(script), str(files), backend], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    found = {tuple(item) for item in json.loads(run.stdout)}
    assert found == {("crash.py", "VLL000", "the parser process crashed (SIGSEGV) on this file; skipped")} | {
        (f"good_{index}.py", code, "") for index in range(3) for code in ("VLL201", "VLL203")}


@pytest.mark.parametrize("files", [1, 2, 5, 57, 130, 2642])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_batches_shrink_toward_the_end_and_reach_every_child(files, workers):
    from pathlib import Path

    from vllm_lint.engine.workers import Task, batches

    tasks = [Task(index, Path(f"f{index}.py"), "python") for index in range(files)]
    cut = batches(tasks, workers)
    assert [task for batch in cut for task in batch] == tasks  # each once, in order
    assert len(cut) >= min(files, workers)  # a child for each batch while there are enough files
    sizes = [len(batch) for batch in cut]
    assert max(sizes) <= 64
    assert sizes[:-1] == sorted(sizes[:-1], reverse=True)  # never a big batch after a small one
    if files >= 1000:
        assert sizes[0] == 64 and sizes[-2] <= 8  # a long run ends on small batches, not on a last 64


def test_a_file_the_parent_let_through_is_parsed_without_asking_the_pre_filter_again(tmp_path):
    """A small run pre-filters in the parent; the task it hands on says so, and the child parses the file as it is
    (its second pre-filter was the same answer again, ~2 ms of a one-file run)."""
    import dataclasses

    from vllm_lint.config import Settings
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.engine.workers import Task, _lint_one
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    path = tmp_path / "server.py"
    path.write_text(TRIGGER, encoding="utf-8")
    asked: list[str] = []
    surfaces = {surface.name: surface for surface in all_surfaces()}
    # The pre-filter says "nothing here" (it would be wrong): only a file it is asked about is skipped.
    surfaces["python"] = dataclasses.replace(surfaces["python"], may_match=lambda job: asked.append(job.display) or False)
    options = RunOptions(Settings(), frozenset(all_codes()), all_codes())

    skipped = _lint_one(Task(0, path, "python"), surfaces, options, allow_parsing=True)
    assert asked == [str(path)] and skipped is not None and not skipped.parsed  # asked, and told "no"
    parsed = _lint_one(Task(0, path, "python", passed_prefilter=True), surfaces, options, allow_parsing=True)
    assert asked == [str(path)] and parsed is not None and parsed.parsed  # not asked again
    assert {d.code for d in parsed.diagnostics} == {"VLL201", "VLL203"}


@pytest.mark.parametrize("many_files", [False, True], ids=["small-run", "batches"])
def test_a_parser_process_given_batches_turns_the_garbage_collector_back_on(many_files):
    """The program runs with the cyclic collector off (cli/entry.py); a child of a run over many files turns it on,
    so that its memory stays bounded; a child of a small run (48 files at most) leaves it off."""
    import gc
    import signal

    from vllm_lint.config import Settings
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.engine.workers import _child_main
    from vllm_lint.rulebook import all_codes

    class NoMoreBatches:
        def recv(self):
            return None

    handler = signal.getsignal(signal.SIGINT)
    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.disable()
    try:
        _child_main(NoMoreBatches(), RunOptions(Settings(), frozenset(all_codes()), all_codes()), many_files)
        assert gc.isenabled() is many_files
        # a parse's millions of nodes are no cyclic garbage: collected rarely, not every 700 allocations
        assert gc.get_threshold()[0] == (50_000 if many_files else thresholds[0])
    finally:
        gc.set_threshold(*thresholds)
        signal.signal(signal.SIGINT, handler)
        if was_enabled:
            gc.enable()
