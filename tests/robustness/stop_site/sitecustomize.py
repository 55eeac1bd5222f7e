"""Imported by Python's ``site`` as a vllm-lint process under test starts (``conftest.stopping_env`` puts this
folder first on its ``PYTHONPATH``): the process stops itself (SIGSTOP) at the point of its atomic writes that
``VLLM_LINT_TEST_STOP`` names, so that a test kills or signals it there, not at a moment it guesses.

``written:NAME``: NAME's temporary file written and synced, before the check that NAME did not change meanwhile
(``atomic_write``'s ``still_current``) and the rename. ``before:NAME``: after that check, just before the rename
onto NAME. ``after:N``: just after the Nth rename of a temporary file onto its file. ``forked:N``: in the parent,
just after it forked its Nth child (a parser process). The writes and forks are vllm-lint's own
(``vllm_lint.atomic``, ``vllm_lint.engine.processes``); only ``os.chmod`` and ``os.replace`` are wrapped, and a
fork handler registered, to stop around the real ones.
"""

import os
import signal

_STOP = os.environ.get("VLLM_LINT_TEST_STOP", "")
_TEMP_SUFFIX = ".vllm-lint.tmp"


def _install() -> None:
    kind, _, value = _STOP.partition(":")
    real_chmod, real_replace = os.chmod, os.replace
    renames = 0

    def chmod(path, mode, *args, **kwargs):
        real_chmod(path, mode, *args, **kwargs)  # the temporary file's mode: its bytes are written and synced
        name = os.path.basename(os.fspath(path))
        if kind == "written" and name.startswith(f".{value}.") and name.endswith(_TEMP_SUFFIX):
            os.kill(os.getpid(), signal.SIGSTOP)

    def replace(src, dst, *args, **kwargs):
        nonlocal renames
        ours = os.fspath(src).endswith(_TEMP_SUFFIX)
        if ours and kind == "before" and os.path.basename(os.fspath(dst)) == value:
            os.kill(os.getpid(), signal.SIGSTOP)
        real_replace(src, dst, *args, **kwargs)
        if ours:
            renames += 1
            if kind == "after" and renames == int(value):
                os.kill(os.getpid(), signal.SIGSTOP)

    os.chmod, os.replace = chmod, replace

    forks = 0

    def forked() -> None:
        nonlocal forks
        forks += 1
        if kind == "forked" and forks == int(value):
            os.kill(os.getpid(), signal.SIGSTOP)

    os.register_at_fork(after_in_parent=forked)


if _STOP:
    _install()
