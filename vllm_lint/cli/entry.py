"""The ``vllm-lint`` program.

``--version``, the ``check`` command lines that pre-commit hooks and CI steps use (flags, rule lists, an
output format, paths: see check_options.parse_common) and ``hook`` (run after every edit an agent makes) run
without importing click; every other command line, ``--help`` and any mistake go to the click CLI in
``cli.py``, which parses the same option table.
"""

from __future__ import annotations

import sys

from vllm_lint import EXIT_ERROR, __version__


class _Interrupted(BaseException):
    """Ctrl-C, raised as something click does not catch: click turns KeyboardInterrupt into
    "Aborted!" and exit code 1, which CI would read as "findings"."""


def _interrupt(signum, frame) -> None:
    raise _Interrupted


def main(argv: list[str] | None = None) -> None:
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        try:
            _run(sys.argv[1:] if argv is None else argv)
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


def _flush_stdout() -> None:
    """Flush what is left for stdout; if its reader has gone (``vllm-lint check ... | head``), send the rest to
    devnull, so that Python's own flush at exit has nothing to fail on and prints no traceback."""
    import os

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _run(args: list[str]) -> None:
    if args == ["--version"]:
        print(f"vllm-lint, version {__version__}")  # click's version_option says the same
        sys.exit(0)
    if args[:1] == ["hook"]:
        from vllm_lint.codecache import compiled_dataclasses

        with compiled_dataclasses("hook"):
            from vllm_lint.agent_hooks.main import main as hook

            sys.exit(hook(args[1:]))
    if args[:1] == ["check"]:
        from vllm_lint.codecache import compiled_dataclasses

        with compiled_dataclasses("check"):
            from vllm_lint.cli.check_options import parse_common

            params = parse_common(args[1:])
            if params is not None:
                from vllm_lint.cli.check import CheckRequest, run_check

                sys.exit(run_check(CheckRequest.from_params(params, stdin=False)))
    from vllm_lint.cli.main import cli

    cli(args=args, prog_name="vllm-lint")
