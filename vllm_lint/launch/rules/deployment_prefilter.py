"""VLL401-VLL404 (deployment.py) read the launch record only: a file can give them only where it launches vLLM."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = {
    "VLL401": (LAUNCH,),
    "VLL402": (LAUNCH,),
    "VLL403": (LAUNCH,),
    "VLL404": (LAUNCH,),
}
