"""Every launch a file's reading saw, for ``check --explain-opaque``.

The launch records live only while one file is linted (in a worker, maybe from the cache next time), so a
launch seen travels to the command line as a diagnostic of the pseudo code ``LAUNCH_SEEN``, placed where the
launch is written (embedded texts, Markdown blocks and notebook cells, move it as they move findings).
Only ``--explain-opaque`` enables that code; its message is a JSON object (``seen_message``).
"""

from __future__ import annotations

import json

LAUNCH_SEEN = "launch-seen"

# The launch as people name what starts the engine; "module" launches (``python -m vllm.X`` of a module
# vLLM lacks) start no engine and are not counted.
_LABELS = {"serve": "vllm serve", "api_server": "api_server", "image": "image entrypoint"}


def launch_label(launch) -> str | None:
    if launch.kind == "module":
        return None
    if launch.entrypoint == "image":
        return _LABELS["image"]
    return _LABELS.get(launch.kind, launch.kind)


def seen_message(launch, reader: str) -> str | None:
    """What ``--explain-opaque`` reports of ``launch`` (read as ``reader``), or None when it is not counted."""
    label = launch_label(launch)
    if label is None:
        return None
    reasons = list(launch.opaque_reasons) or (["reason not recorded"] if launch.opaque else [])
    return json.dumps({"reader": reader, "launch": label, "opaque": bool(launch.opaque), "reasons": reasons})


def read_message(message: str) -> dict:
    return json.loads(message)
