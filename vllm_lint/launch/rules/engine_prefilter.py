"""VLL201-VLL208 (engine.py) read the launch record only: a file can give them only where it launches vLLM."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = {
    "VLL201": (LAUNCH,),
    "VLL202": (LAUNCH,),
    "VLL203": (LAUNCH,),
    "VLL204": (LAUNCH,),
    "VLL205": (LAUNCH,),
    "VLL206": (LAUNCH,),
    "VLL207": (LAUNCH,),
    "VLL208": (LAUNCH,),
}
