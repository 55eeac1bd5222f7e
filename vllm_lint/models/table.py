"""The table of model configs shipped with vllm-lint (``vllm_lint/data/model_configs.jsonl``).

One JSON object a line: ``{"model": "<hub id>", "config": {...}, "source": "...", "weight_bytes": N,
"weight_source": "..."}``. It is read on the first launch that names a model, and then only as far as each
line's model id: a row's JSON is parsed when a launch names its model.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from vllm_lint.models.facts import ModelFacts, read_facts

SHIPPED_TABLE = Path(__file__).resolve().parent.parent / "data" / "model_configs.jsonl"
_MODEL_ID = re.compile(rb'^\{\s*"model"\s*:\s*"([^"\\]+)"')


@cache
def _index(path: Path) -> dict[str, bytes]:
    """Each row's line by its model id, lower-cased (Hub ids are matched as the Hub matches them)."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    rows = {}
    for line in data.splitlines():
        match = _MODEL_ID.match(line)
        if match:
            rows[match.group(1).decode().lower()] = line
        elif line.strip():
            row = json.loads(line)
            rows[str(row["model"]).lower()] = line
    return rows


# The Hub moved its "canonical" repositories (ids with no namespace) under organizations in 2024 and redirects
# the old ids (huggingface/transformers#28795, #29001: `gpt2` -> `openai-community/gpt2`). A launch that names an
# old id is read as the row of its new one.
_CANONICAL_MOVES = {
    name: f"openai-community/{name}" for name in ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "openai-gpt")
}


def table_facts(model: str, path: Path = SHIPPED_TABLE) -> ModelFacts | None:
    lowered = model.lower()
    line = _index(path).get(_CANONICAL_MOVES.get(lowered, lowered))
    if line is None:
        return None
    row = json.loads(line)
    config = row.get("config")
    if not isinstance(config, dict):
        return None
    weight_bytes = row.get("weight_bytes")
    return read_facts(
        model,
        f"vllm-lint's model table ({row.get('source') or 'no source'})",
        config,
        weight_bytes if isinstance(weight_bytes, int) else None,
    )
