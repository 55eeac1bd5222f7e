"""VLL401-VLL405 (deployment.py) read the launch record only: a file can give them only where it launches vLLM
(VLL405: where a command-line file names an image, which its launch extractor reads with its launches)."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = {
    "VLL401": (LAUNCH,),
    "VLL402": (LAUNCH,),
    "VLL403": (LAUNCH,),
    "VLL404": (LAUNCH,),
    "VLL405": (LAUNCH,),
}
