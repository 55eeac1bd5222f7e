"""The facts of the model a launch names, from the first source that has its ``config.json``:

1. a local model folder (the path as written, from the launching file's folder or the project's root);
2. the user's Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``:
   ``models--ORG--NAME/snapshots/REVISION/config.json``, the revision ``refs/main`` names, or the only one);
3. the table shipped with vllm-lint (``table.py``);
4. only when asked (``model-facts-from-hub``), the Hugging Face Hub (``hub.py``).

A model none of them knows is unknown: never guessed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from vllm_lint.models.facts import ModelFacts, read_facts


class ModelSearch:
    """Where a launch's model is looked for (a key of ``find_model``'s cache: compared and hashed by value)."""

    __slots__ = ("folders", "hub", "table")

    def __init__(self, folders: tuple[Path, ...] = (), hub: bool = False, table: Path | None = None) -> None:
        self.folders = folders  # a relative model path is tried from each (the file's folder, the project root)
        self.hub = hub  # ask the Hugging Face Hub for a model no local source knows
        self.table = table  # the shipped table when None

    def _key(self) -> tuple:
        return self.folders, self.hub, self.table

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelSearch) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _read_config(path: Path) -> Mapping | None:
    try:
        with path.open("rb") as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def _looks_like_path(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or model.count("/") > 1 or "\\" in model


def _local_folder(model: str, folders: tuple[Path, ...]) -> Path | None:
    expanded = Path(os.path.expanduser(model))
    candidates = [expanded] if expanded.is_absolute() else [folder / expanded for folder in folders]
    for candidate in candidates:
        if (candidate / "config.json").is_file():
            return candidate
    return None


def hub_cache_root() -> Path | None:
    configured = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if configured:
        return Path(configured)
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home) / "hub"
    try:
        return Path.home() / ".cache" / "huggingface" / "hub"
    except RuntimeError:
        return None


def _cached_snapshot(model: str, root: Path) -> Path | None:
    repo = root / ("models--" + model.replace("/", "--"))
    snapshots = repo / "snapshots"
    try:
        main = (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    if main and (snapshots / main / "config.json").is_file():
        return snapshots / main / "config.json"
    try:
        found = [child / "config.json" for child in snapshots.iterdir() if (child / "config.json").is_file()]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None  # several revisions and no ref to choose: unknown


def _from_cache(model: str) -> ModelFacts | None:
    root = hub_cache_root()
    if root is None or not root.is_dir():
        return None
    path = _cached_snapshot(model, root)
    if path is None:
        # The cache folder keeps the Hub's own spelling; the Hub matches ids whatever their case.
        lowered = "models--" + model.replace("/", "--").lower()
        try:
            spelled = [child.name for child in root.iterdir() if child.name.lower() == lowered]
        except OSError:
            spelled = []
        if len(spelled) == 1:
            path = _cached_snapshot(spelled[0].removeprefix("models--").replace("--", "/"), root)
    config = _read_config(path) if path is not None else None
    if path is None or config is None:
        return None
    return read_facts(model, f"the Hugging Face cache ({path})", config, checkpoint_bytes(path.parent))


def checkpoint_bytes(folder: Path) -> int | None:
    """The size of a model folder's safetensors weights: its index's ``metadata.total_size``, else the size
    of its one ``model.safetensors``; None when neither is there."""
    index = folder / "model.safetensors.index.json"
    try:
        with index.open("rb") as handle:
            total = json.load(handle).get("metadata", {}).get("total_size")
        if isinstance(total, int) and total > 0:
            return total
    except (OSError, ValueError, AttributeError):
        pass
    try:
        return (folder / "model.safetensors").stat().st_size or None
    except OSError:
        return None


@lru_cache(maxsize=256)
def find_model(model: str, search: ModelSearch) -> ModelFacts | None:
    """The facts of ``model`` (a Hub id or a path, as the launch wrote it), or None when no source knows it."""
    model = model.strip()
    if not model:
        return None
    folder = _local_folder(model, search.folders)
    if folder is not None:
        config = _read_config(folder / "config.json")
        if config is not None:
            return read_facts(model, str(folder / "config.json"), config, checkpoint_bytes(folder))
    if _looks_like_path(model):
        return None  # a folder on another machine (a container's volume): its config is not here
    facts = _from_cache(model)
    if facts is not None:
        return facts
    from vllm_lint.models.table import SHIPPED_TABLE, table_facts

    facts = table_facts(model, search.table or SHIPPED_TABLE)
    if facts is not None or not search.hub:
        return facts
    from vllm_lint.models.hub import hub_facts

    return hub_facts(model)
