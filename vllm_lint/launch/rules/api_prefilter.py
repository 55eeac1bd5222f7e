"""VLL303 on command lines (api.py) reads the launch record only: a file can give it only where it launches vLLM."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = {
    "VLL303": (LAUNCH,),
}
