"""VLL001 (noqa.py) reads the noqa comments of every file the other rules looked at, linted or let by."""

from __future__ import annotations

from vllm_lint.python.prefilter import AFTER_THE_LINT

PREFILTER = {"VLL001": (AFTER_THE_LINT,)}
