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


def seen_message(launch, reader: str, settings=None) -> str | None:
    """What ``--explain-opaque`` reports of ``launch`` (read as ``reader``), or None when it is not counted.
    With the launch settings, whether the facts of its model are known (VLL209-VLL212 skip it otherwise)."""
    label = launch_label(launch)
    if label is None:
        return None
    reasons = list(launch.opaque_reasons) or (["reason not recorded"] if launch.opaque else [])
    seen = {"reader": reader, "launch": label, "opaque": bool(launch.opaque), "reasons": reasons}
    if settings is not None:
        seen["model_facts"] = model_facts_status(launch, settings)
    return json.dumps(seen)


def model_facts_status(launch, settings) -> str:
    """``known``; ``unknown`` (no local folder, cache, table row or Hub answer has its config.json, or a flag
    changes what vLLM reads of it); ``model not known`` (not written, or not statically known)."""
    from vllm_lint.launch.model import launch_model, model_name

    if model_name(launch) is None:
        return "model not known"
    return "known" if launch_model(launch, settings) is not None else "unknown"


def read_message(message: str) -> dict:
    return json.loads(message)
