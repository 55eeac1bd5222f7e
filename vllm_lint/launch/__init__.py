"""The neutral launch record: one vLLM engine launch, whatever surface it was written on.

Front-ends (Python calls, command lines in shell, Dockerfile, YAML, Markdown)
turn each engine launch into a ``Launch``; the VLL2xx rules in
``vllm_lint.launch.rules`` are written once against it. A rule states *what* to
change (``SetValue``, ``AddSetting``, ``Rename``, ``RemoveSetting``); the
front-end renders that into text edits that keep the file's own style.
"""

from __future__ import annotations

__all__ = ["AddSetting", "Launch", "LaunchFinding", "RemoveSetting", "Rename", "SetValue", "Setting"]


def __getattr__(name: str) -> object:
    # Lazy, so that importing ``vllm_lint.launch.settings`` (every run) does not load the record.
    if name in __all__:
        from vllm_lint.launch import record

        return getattr(record, name)
    raise AttributeError(name)
