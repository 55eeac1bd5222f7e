"""Lint many files across processes; a file that crashes or hangs the parser costs only itself.

LibCST's parser is native code: a pathological file can overflow its stack
(a segfault, measured with 10,000 nested parentheses) or take unbounded time.
So every file that needs parsing is parsed in a child process. The parent
hands out batches, and each child says "parsing N" before it starts on the
expensive (and dangerous) part of file N. When a child dies, the file it was
parsing gets a VLL000 and the rest of its batch goes to a fresh child; when a
file takes longer than the time limit, its child is killed the same way.

The common cases stay cheap: the byte pre-filter runs wherever the file is
read, so a small run (one file from pre-commit) never starts a process unless
some file really needs parsing, and a large tree is pre-filtered in parallel.
A command-line run with one small file to parse that CPython's own parser reads
parses it in its own process (``parse_one_here``; see _parses_safely_here).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from vllm_lint.engine.runner import FileResult, NeedsParsing, RunOptions, guarded, lint_file
from vllm_lint.surfaces import Surface, all_surfaces, parse_error

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from vllm_lint.engine.processes import Backend, Channel, ChildProcess

# Up to this many files the parent reads and pre-filters them itself: starting processes costs
# more than it saves, and most small runs (pre-commit) need no parsing at all.
_IN_PROCESS_FILES = 48
_BATCH_FILES = 64
_MIN_BATCH_FILES = 8
_DEFAULT_FILE_TIMEOUT = 60.0
# The largest file parse_one_here parses in this process. LibCST's parser overflows the main thread's stack on
# deep nesting that CPython's parser also refuses ("(" nested 1,500 deep: 3 KB; CPython stops at 200) or that
# needs more bytes than this (lambdas nested 3,400 deep, 24 KB; CPython refuses 3,000, and 16 KB holds 2,340):
# measured with LibCST 1.9 and CPython 3.11. A child process costs a fork and the pages it copies, ~15 ms of
# CPU: most of what a one-file run spends beyond its parse, nothing beside a big file's.
_HERE_BYTES = 16 << 10


def file_timeout() -> float:
    """Seconds one file may take to analyse (``VLLM_LINT_FILE_TIMEOUT``; default 60)."""
    raw = os.environ.get("VLLM_LINT_FILE_TIMEOUT", "")
    try:
        value = float(raw)
    except ValueError:
        return _DEFAULT_FILE_TIMEOUT
    return value if value > 0 else _DEFAULT_FILE_TIMEOUT


def in_process() -> bool:
    """``VLLM_LINT_JOBS=0``: every file is linted in this process, with no worker process, so no crash
    isolation and no per-file time limit; for a debugger or a profiler, which see only their own process."""
    return os.environ.get("VLLM_LINT_JOBS", "").strip() == "0"


def worker_count(files: int) -> int:
    raw = os.environ.get("VLLM_LINT_JOBS", "")
    if raw.isdigit() and int(raw) > 0:
        return min(int(raw), max(files, 1))
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, files))


@dataclass(frozen=True)
class Task:
    """One file of a run, for a process to lint."""
    index: int
    path: Path
    surface: str | None  # the claiming surface's name; None: unreadable, report it
    # The parent read the file and the pre-filter let it through: the child parses it without asking again.
    passed_prefilter: bool = False


def lint_tasks(tasks: Sequence[Task], options: RunOptions, parse_one_here: bool = False) -> list[FileResult]:
    """Results in task order, whatever happened to the processes that produced them. ``parse_one_here``: a
    single file to parse that _parses_safely_here is parsed in this process (a command-line run, which ends
    after it; never a server, which a crash would take down)."""
    results: dict[int, FileResult] = {}
    surfaces = {s.name: s for s in all_surfaces()}
    if in_process():
        if len(tasks) > _IN_PROCESS_FILES:
            _bound_memory()
        for task in tasks:
            result = _lint_one(task, surfaces, options, allow_parsing=True)
            assert result is not None
            results[task.index] = result
    elif len(tasks) <= _IN_PROCESS_FILES:
        to_parse = []
        limit = file_timeout()
        for task in tasks:
            result = _read_in_time(task, surfaces, options, limit)
            if result is None:
                to_parse.append(Task(task.index, task.path, task.surface, passed_prefilter=True))
            else:
                results[task.index] = result
        if len(to_parse) == 1 and parse_one_here and to_parse[0].surface == "python" and _parses_safely_here(to_parse[0].path):
            [task] = to_parse
            result = _lint_one(task, surfaces, options, allow_parsing=True)
            assert result is not None
            results[task.index] = result
        elif to_parse:
            results.update(_Pool(options, worker_count(len(to_parse))).run(to_parse))
    else:
        results.update(_Pool(options, worker_count(len(tasks) // 8 or 1)).run(list(tasks)))
    return [results[task.index] for task in tasks]


def _read_in_time(task: Task, surfaces: dict[str, Surface], options: RunOptions, limit: float) -> FileResult | None:
    """``_lint_one`` up to a parse, in this process, its reading bounded by ``limit`` where the time limit can be
    kept here: in the main thread, with SIGALRM and the real-time timer unused (a server embedding vllm-lint may
    use them; its reading then has no limit)."""
    threading = sys.modules.get("threading")  # never imported: no other thread runs
    if (
        not hasattr(signal, "setitimer")
        or threading is not None and threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
        or signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0)
    ):
        return _lint_one(task, surfaces, options, allow_parsing=False)
    return _lint_in_time(task, surfaces, options, limit, allow_parsing=False)


def _lint_in_time(task: Task, surfaces: dict[str, Surface], options: RunOptions, limit: float, allow_parsing: bool,
                  before_parse: Callable[[], None] | None = None) -> FileResult | None:
    """``_lint_one`` with its reading bounded by ``limit`` (SIGALRM and the real-time timer, which the caller may
    use): a file over it gets its VLL000. ``before_parse`` stops this clock where another takes over."""
    signal.signal(signal.SIGALRM, _overran)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return _lint_one(task, surfaces, options, allow_parsing, before_parse)
    except _Overran:
        return _over_the_limit_result(task, limit)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def _parses_safely_here(path: Path) -> bool:
    """Whether a Python file is small (_HERE_BYTES) and CPython's parser reads it (which refuses the nesting that
    crashes LibCST's, within that size); any doubt leaves it to a child process."""
    import ast
    import warnings

    try:
        with open(path, "rb") as handle:
            data = handle.read(_HERE_BYTES + 1)
    except OSError:
        return False
    if len(data) > _HERE_BYTES:
        return False
    try:
        # Quietly: CPython warns of some code it reads (an invalid escape sequence: a SyntaxWarning on stderr from
        # Python 3.12), which the user did not ask it to read.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, str(path), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def _bound_memory() -> None:
    """The program leaves the cyclic garbage collector off (cli/entry.py); a process that parses file after file
    of a large run turns it on, so that its memory stays bounded however many files it is given. A collection
    every 50,000 allocations instead of Python's 700: a parse allocates millions of nodes, none of them cyclic
    garbage, and the collector walked them over and over (h2ogpt, 380 files with three of 300-500 KB: 12.7 s ->
    6.9 s wall at the same peak memory; vLLM's source: a tenth less CPU)."""
    import gc

    gc.set_threshold(50_000, 20, 20)
    gc.enable()


def batches(tasks: Sequence[Task], workers: int) -> list[list[Task]]:
    """The tasks in order, cut for ``workers`` children that each take the next batch when done with one: each
    batch a quarter of what is left per child (at most _BATCH_FILES), so the last ones are small and the children
    finish together instead of one waiting on the other's last big batch; a small run still reaches every child."""
    cut: list[list[Task]] = []
    smallest = max(1, min(_MIN_BATCH_FILES, len(tasks) // workers))  # never fewer batches than children
    start = 0
    while start < len(tasks):
        left = len(tasks) - start
        count = min(_BATCH_FILES, max(smallest, -(-left // (4 * workers))), left)
        cut.append(list(tasks[start : start + count]))
        start += count
    return cut


def _lint_one(task: Task, surfaces: dict[str, Surface], options: RunOptions, allow_parsing: bool, before_parse: Callable[[], None] | None = None) -> FileResult | None:
    """One file's result; None when it needs parsing and ``allow_parsing`` is off."""
    surface = surfaces.get(task.surface) if task.surface else None

    def gate() -> None:
        if not allow_parsing:
            raise NeedsParsing
        if before_parse is not None:
            before_parse()

    try:
        return guarded(str(task.path), lambda: lint_file(task.path, surface, options, before_parse=gate, prefiltered=task.passed_prefilter))
    except NeedsParsing:
        return None


# -- the child side ------------------------------------------------------------------------------


# The parent's ends of the children's pipes. A forked child inherits them all and closes them at
# once: a pipe end kept open in a child would hide the parent's death from it (no EOF), and the
# child would wait forever.
_PARENT_ENDS: list[Channel] = []


def _child_main(connection: Channel, options: RunOptions, many_files: bool) -> None:
    # The parent owns Ctrl-C: it stops the children itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if many_files:
        _bound_memory()
    for inherited in _PARENT_ENDS:
        inherited.close()
    _PARENT_ENDS.clear()
    limit = file_timeout()
    timed = hasattr(signal, "setitimer")
    surfaces = {s.name: s for s in all_surfaces()}
    while True:
        try:
            batch = connection.recv()
        except EOFError:
            return
        if batch is None:
            return
        done: list[tuple[int, FileResult]] = []
        for task in batch:
            announced = False

            def announce(index: int = task.index, surface: str | None = task.surface, done: list = done) -> None:
                # Flush what is finished, then say which file is about to be parsed; its clock
                # starts after the parser's own import, which is not the file's fault.
                nonlocal announced
                if timed:  # the parent's clock takes over from the reading's own
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, signal.SIG_DFL)
                if surface in surfaces:
                    surfaces[surface].warm_up()
                connection.send(("results", done[:]))
                done.clear()
                connection.send(("parsing", index))
                announced = True
                # If the parent dies (SIGKILL) while this parse hangs, nobody would stop it: stop ourselves.
                if timed:
                    signal.alarm(int(limit) + 5)

            # The reading before any parse (the pre-filter) has the same limit, kept here: the parent, told of no
            # parse, has no clock running for it.
            if timed:
                result = _lint_in_time(task, surfaces, options, limit, allow_parsing=True, before_parse=announce)
            else:
                result = _lint_one(task, surfaces, options, allow_parsing=True, before_parse=announce)
            assert result is not None
            done.append((task.index, result))
            if announced:  # the parse is over: its clock was stopped above
                connection.send(("results", done[:]))
                done.clear()
        connection.send(("results", done))
        connection.send(("batch-done", None))


# -- the parent side -----------------------------------------------------------------------------


@dataclass
class _Child:
    """A worker process, the batch it was handed and how far it got."""
    process: ChildProcess
    connection: Channel
    batch: list[Task]
    finished: set[int]
    parsing: int | None = None
    parsing_since: float = 0.0


class _Pool:
    def __init__(self, options: RunOptions, size: int, backend: Backend | None = None) -> None:
        self.options = options
        self.size = max(1, size)
        if backend is None:
            from vllm_lint.engine.processes import default_backend  # lazy: most small runs never start a process

            backend = default_backend()
        self.backend = backend
        self.timeout = file_timeout()

    def run(self, tasks: list[Task]) -> dict[int, FileResult]:
        many_files = len(tasks) > _IN_PROCESS_FILES
        results: dict[int, FileResult] = {}
        pending = deque(batches(tasks, self.size))
        children: list[_Child] = []
        try:
            while pending or children:
                while pending and len(children) < self.size:
                    children.append(self._start(list(pending.popleft()), many_files))
                self._wait(children, pending, results)
        finally:
            for child in children:
                self._stop(child)
        return results

    def _start(self, batch: list[Task], many_files: bool) -> _Child:
        process, parent_end = self.backend.start(_child_main, (self.options, many_files))
        _PARENT_ENDS.append(parent_end)
        parent_end.send(batch)
        return _Child(process, parent_end, batch, set())

    def _wait(self, children: list[_Child], pending: deque, results: dict[int, FileResult]) -> None:
        deadline = min((c.parsing_since + self.timeout for c in children if c.parsing is not None), default=None)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = self.backend.wait([c.connection for c in children], timeout)
        for child in list(children):
            if child.connection in ready:
                self._read(child, children, pending, results)
            elif child.parsing is not None and time.monotonic() - child.parsing_since >= self.timeout:
                self._lose(child, children, pending, results, _over_the_limit(self.timeout))

    def _read(self, child: _Child, children: list[_Child], pending: deque, results: dict[int, FileResult]) -> None:
        while child.connection.poll():
            try:
                kind, payload = child.connection.recv()
            except (EOFError, OSError):
                child.process.join(1)
                self._lose(child, children, pending, results, _death(child.process.exitcode))
                return
            if kind == "results":
                for index, result in payload:
                    results[index] = result
                    child.finished.add(index)
                child.parsing = None
            elif kind == "parsing":
                child.parsing, child.parsing_since = payload, time.monotonic()
            elif kind == "batch-done":
                if pending:
                    child.batch, child.finished = list(pending.popleft()), set()
                    child.connection.send(child.batch)
                else:
                    children.remove(child)
                    self._stop(child)
                return

    def _lose(self, child: _Child, children: list[_Child], pending: deque, results: dict[int, FileResult], why: str) -> None:
        """The child died or hung: blame the file it was parsing, and hand the rest of its batch on."""
        children.remove(child)
        self._stop(child, kill=True)
        unfinished = [t for t in child.batch if t.index not in child.finished]
        culprit = next((t for t in unfinished if t.index == child.parsing), unfinished[0] if unfinished else None)
        if culprit is not None:
            shown = str(culprit.path)
            results[culprit.index] = FileResult(shown, [parse_error(shown, f"the parser process {why}")], cacheable=False)
        rest = [t for t in unfinished if t is not culprit]
        if rest:
            pending.appendleft(rest)

    @staticmethod
    def _stop(child: _Child, kill: bool = False) -> None:
        try:
            if not kill:
                child.connection.send(None)
        except (OSError, ValueError):
            kill = True
        if child.connection in _PARENT_ENDS:
            _PARENT_ENDS.remove(child.connection)
        child.connection.close()
        if kill and child.process.is_alive():
            child.process.kill()
        child.process.join(5)
        if child.process.is_alive():
            child.process.kill()
            child.process.join()


class _Overran(BaseException):
    """A file's reading ran past the time limit (raised by SIGALRM; not an Exception, which guarded would report as
    an internal error)."""


def _overran(signum: int, frame: object) -> None:
    raise _Overran


def _over_the_limit(limit: float) -> str:
    return f"took longer than {limit:g} s to analyse (VLLM_LINT_FILE_TIMEOUT); skipped"


def _over_the_limit_result(task: Task, limit: float) -> FileResult:
    """A file whose reading before any parse (the pre-filter) ran past the limit, in whichever process read it."""
    shown = str(task.path)
    return FileResult(shown, [parse_error(shown, f"the file {_over_the_limit(limit)}")], cacheable=False)


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"crashed ({name}) on this file; skipped"
    return f"exited unexpectedly (status {exitcode}) on this file; skipped"
