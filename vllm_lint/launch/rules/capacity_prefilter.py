"""The rules of capacity.py read the launch record only: a file can give them only where it launches vLLM."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = {
    "VLL209": (LAUNCH,),
    "VLL210": (LAUNCH,),
    "VLL212": (LAUNCH,),
    "VLL211": (LAUNCH,),
}
