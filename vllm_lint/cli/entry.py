"""The ``vllm-lint`` program.

``--version``, the ``check`` command lines that pre-commit hooks and CI steps use (flags, rule lists, an
output format, paths: see check_options.parse_common) and ``hook`` (run after every edit an agent makes) run
without importing click; every other command line, ``--help`` and any mistake go to the click CLI in
``cli.py``, which parses the same option table.
"""

from __future__ import annotations

import sys

from vllm_lint import EXIT_ERROR, __version__

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class _Interrupted(BaseException):
    """Ctrl-C, raised as something click does not catch: click turns KeyboardInterrupt into
    "Aborted!" and exit code 1, which CI would read as "findings"."""


def _interrupt(signum, frame) -> None:
    raise _Interrupted


def main(argv: list[str] | None = None) -> None:
    """The program (``argv`` None: the command line's own arguments), or a command line run by Python code."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        try:
            code = _run(sys.argv[1:] if argv is None else argv, program=argv is None)
        finally:
            _flush_stdout()
    except BrokenPipeError:
        _flush_stdout()
        sys.exit(EXIT_ERROR)
    except (KeyboardInterrupt, _Interrupted):
        print("vllm-lint: interrupted", file=sys.stderr)
        sys.exit(130)
    except ModuleNotFoundError as exc:
        # A dependency is missing from this environment: say which, not a traceback.
        print(f"vllm-lint: error: the package {exc.name!r} is not installed in this Python environment "
              f"({sys.executable}); reinstall vllm-lint with its dependencies (`pip install vllm-lint`)",
              file=sys.stderr)
        sys.exit(EXIT_ERROR)
    if argv is None:
        _leave(code)
    sys.exit(code)


def _leave(code: int) -> NoReturn:
    """Exit as ``sys.exit(code)`` would, without the interpreter's teardown of every module and object (~6 ms that
    nobody sees). What a normal exit does that can be seen is done first: the atexit callbacks, the buffered
    output. (The program only: a caller in Python gets its SystemExit.)"""
    import atexit
    import os

    atexit._run_exitfuncs()
    _flush_stdout()
    sys.stderr.flush()
    os._exit(code)


def _flush_stdout() -> None:
    """Flush what is left for stdout; if its reader has gone (``vllm-lint check ... | head``), send the rest to
    devnull, so that Python's own flush at exit has nothing to fail on and prints no traceback."""
    import os

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _run(args: list[str], program: bool) -> int:
    """The exit code of a ``hook`` or ``check`` command line run here (the stores of the dataclass code are saved
    when it returns); any other command line exits from click."""
    if args == ["--version"]:
        print(f"vllm-lint, version {__version__}")  # click's version_option says the same
        sys.exit(0)
    if program and args[:1] in (["hook"], ["check"]):
        import gc

        # The cyclic garbage collector scans what imports create (LibCST's classes, vllm-lint's modules) again and
        # again and frees next to nothing: ~10 ms of a one-file run. A run's few cycles are freed at exit; a
        # process that parses many files turns it back on (engine/workers.py, cli/check.py's fixing). (Not for
        # the servers, ``server`` and ``mcp``, nor any other command: they may run for hours.)
        gc.disable()
    if args[:1] == ["hook"]:
        from vllm_lint.codecache import compiled_dataclasses

        with compiled_dataclasses("hook"):
            from vllm_lint.agent_hooks.main import main as hook

            return hook(args[1:])
    if args[:1] == ["check"]:
        from vllm_lint.codecache import compiled_dataclasses

        with compiled_dataclasses("check"):
            from vllm_lint.cli.check_options import parse_common

            params = parse_common(args[1:])
            if params is not None:
                from vllm_lint.cli.check import CheckRequest, run_check

                return run_check(CheckRequest.from_params(params, stdin=False))
    from vllm_lint.cli.main import cli

    cli(args=args, prog_name="vllm-lint")  # click exits by itself (standalone mode)
    return 0
