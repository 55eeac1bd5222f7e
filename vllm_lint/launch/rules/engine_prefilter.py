"""VLL201-VLL206 (engine.py) read the launch record only: a file can give them only where it launches vLLM."""

from __future__ import annotations

from vllm_lint.registry import LAUNCH

PREFILTER = dict.fromkeys(("VLL201", "VLL202", "VLL203", "VLL204", "VLL205", "VLL206"), (LAUNCH,))
