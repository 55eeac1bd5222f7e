"""Test helpers for tests that start a server: wait until it answers, or fail the test with its log's tail."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from vllm_lint.reference.processes import ServerExited, ServerNotReady, wait_ready


def wait_serving(url: str, proc: subprocess.Popen, log_tail: Callable[[], str], *, what: str, timeout: float,
                 request_timeout: float = 2.0, interval: float = 0.5,
                 exited: Callable[[str], None] | None = None) -> None:
    """Return once a GET of ``url`` answers 200; fail the test (naming ``what``, with the log's tail) when
    ``proc`` exits first or ``timeout`` seconds pass. ``exited`` sees the tail of a server that exited before
    the test fails (to skip instead, say)."""
    try:
        wait_ready(url, proc, timeout=timeout, status=200, request_timeout=request_timeout, interval=interval)
    except ServerExited as exc:
        tail = log_tail()
        if exited is not None:
            exited(tail)
        pytest.fail(f"{what} exited with {exc.returncode}:\n{tail}", pytrace=False)
    except ServerNotReady:
        pytest.fail(f"{what} did not start in {timeout:g} s:\n{log_tail()}", pytrace=False)
