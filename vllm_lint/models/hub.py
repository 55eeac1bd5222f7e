"""A model's ``config.json`` from the Hugging Face Hub: only when the user asks (``model-facts-from-hub``).

The Hub is ``HF_ENDPOINT`` (as the ``huggingface_hub`` client reads it; by default https://huggingface.co),
a gated model's config is asked for with ``HF_TOKEN`` when it is set, and each config read is kept in the
user's cache folder (``hub-configs/``), so a model is fetched once.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from vllm_lint.models.facts import ModelFacts, read_facts

_TIMEOUT_S = 10


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _cache_file(model: str) -> Path | None:
    from vllm_lint.resources import user_cache_dir

    folder = user_cache_dir()
    if folder is None:
        return None
    return folder / "hub-configs" / (urllib.parse.quote(model.lower(), safe="") + ".json")


def _fetch(url: str) -> dict | None:
    request = urllib.request.Request(url, headers={"User-Agent": "vllm-lint"})
    token = os.environ.get("HF_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            config = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return config if isinstance(config, dict) else None


def hub_facts(model: str) -> ModelFacts | None:
    url = f"{_endpoint()}/{urllib.parse.quote(model)}/resolve/main/config.json"
    cached = _cache_file(model)
    config = None
    if cached is not None:
        try:
            config = json.loads(cached.read_text())
        except (OSError, ValueError):
            config = None
    if not isinstance(config, dict):
        config = _fetch(url)
        if config is None:
            return None
        if cached is not None:
            from vllm_lint.atomic import atomic_write

            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(cached, json.dumps(config).encode())  # a run beside this one never reads half a file
            except OSError:
                pass  # an unwritable cache costs the next run a fetch
    return read_facts(model, url, config)
