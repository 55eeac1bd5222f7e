"""What happened to a name a file's target releases lack: removed (when, and what replaced it),
not added yet, or never in vLLM at all.

"Removed" is read off the database alone: the name is in some release older than the newest one the
file targets and in none after it. What replaced it is kept only where vLLM's own code says so
(``tools/vllm_api/history.py`` explains the four ways: ``alias``, ``said``, ``no_effect``, ``moved``).
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_lint.vllm_api import VllmApi
from vllm_lint.vllm_api.versionsets import newest, oldest

_SURFACE_FIELD = {"serve": 7, "api_server": 8}


@dataclass(frozen=True, slots=True)
class Fate:
    """What became of a name of vLLM's API: removed (and when, and for what), only in newer releases, or in none."""
    status: str  # "removed", "added" (only in releases newer than the target) or "unknown" (in none)
    release: str | None = None  # the first release without it ("removed") or with it ("added")
    replaced_by: str | None = None
    how: str | None = None  # "alias" (same behaviour), "said", "no_effect", "moved"
    said: str | None = None  # vLLM's words, when it said them
    one_to_one: bool = False  # "said": the new name takes the same kind of value, so a rename can do

    @property
    def known_elsewhere(self) -> bool:
        return self.status != "unknown"


def _fate(api: VllmApi, presence: int, kind: str, name: str) -> Fate | None:
    """None when a release in the target range has the name."""
    if presence & api.mask:
        return None
    if not presence:
        return Fate("unknown")
    database = api.database
    before = presence & ((1 << api.newest_entry) - 1)
    if before:
        gone = newest(before) + 1
        removed_in = database.versions[gone]
        record = database.history.get(kind, {}).get(name)
        release = database.first_release(gone)
        if record is not None and record.get("removed_in") == removed_in:
            return Fate(
                "removed", release, record.get("replaced_by"), record.get("how"), record.get("said"), bool(record.get("one_to_one"))
            )
        return Fate("removed", release)
    return Fate("added", database.first_release(oldest(presence)))


def flag_presence(api: VllmApi, option: str, surface: str = "serve") -> int:
    field = _SURFACE_FIELD[surface]
    presence = 0
    for record in api.database.flags:
        if option in record[1]:
            presence |= record[field]
    return presence


def flag_fate(api: VllmApi, option: str, surface: str = "serve") -> Fate | None:
    """``--disable-log-requests`` on ``vllm serve`` (or the api_server module)."""
    return _fate(api, flag_presence(api, option, surface), "flags", option)


def keyword_fate(api: VllmApi, kind: str, name: str) -> Fate | None:
    """A keyword of ``EngineArgs`` (``engine_args``), ``AsyncEngineArgs``, ``SamplingParams``
    (``sampling_params``) or ``LLM`` (``llm_init_params``, which also takes every EngineArgs field)."""
    masks = api.database.keyword_masks
    presence = masks(kind).get(name, 0)
    # What replaced a field is recorded once, under EngineArgs, for every class that takes it.
    history_kind = kind
    if kind == "async_engine_args" or (kind == "llm_init_params" and not presence):
        history_kind = "engine_args"
    if kind == "llm_init_params":
        presence |= masks("engine_args").get(name, 0)
    return _fate(api, presence, history_kind, name)


def module_fate(api: VllmApi, prefix: str, name: str) -> Fate | None:
    """``prefix.name``: a submodule of ``prefix`` or a name it defines."""
    database = api.database
    dotted = f"{prefix}.{name}"
    presence = database.module_masks().get(dotted, 0) | database.module_name_masks(prefix).get(name, 0)
    return _fate(api, presence, "modules", dotted)


def class_attribute_fate(api: VllmApi, klass: str, name: str) -> Fate | None:
    masks = api.database.class_attribute_masks(klass) or {}
    return _fate(api, masks.get(name, 0), "class_attributes", f"{klass}.{name}")


def names_in_any_release(api: VllmApi, kind: str) -> frozenset[str]:
    """Every name of a keyword kind some release had, for did-you-mean across releases."""
    return frozenset(api.database.keyword_masks(kind))


def options_in_any_release(api: VllmApi, surface: str = "serve") -> frozenset[str]:
    field = _SURFACE_FIELD[surface]
    return frozenset(option for record in api.database.flags if record[field] for option in record[1])


# --- wording shared by the rules that report names --------------------------------------

_SAID_LIMIT = 160


def target_phrase(api: VllmApi, image: str | None = None) -> str:
    """``this file targets 0.6.3`` (or, for a container, ``its image vllm/vllm-openai:v0.6.3 runs 0.6.3``)."""
    if image:
        return f"its image {image} runs {api.label}"
    return f"this file targets {api.label}"


def fate_phrase(fate: Fate, name: str, api: VllmApi, failure: str, image: str | None = None) -> str:
    """``X was removed in vLLM 0.12.0 (this file targets 0.33.0, ...): <failure>``, then what replaced it."""
    where = target_phrase(api, image)
    if fate.status == "added":
        return f"{name} is not in vLLM {api.label.partition(',')[0]} ({where}), it came in {fate.release}: {failure}"
    return f"{name} was removed in vLLM {fate.release} ({where}): {failure}{replacement_advice(fate)}"


def replacement_advice(fate: Fate) -> str:
    if fate.how == "alias" and fate.replaced_by:
        return f"; it is spelled {fate.replaced_by} now"
    if fate.how == "moved" and fate.replaced_by:
        return f"; it is {fate.replaced_by} now"
    said = ""
    if fate.said:
        text = fate.said if len(fate.said) <= _SAID_LIMIT else fate.said[: _SAID_LIMIT - 3].rstrip() + "..."
        said = f' (vLLM: "{text}")'
    if fate.how == "no_effect" and not fate.said:
        return "; it only set what already was the default, so deleting it changes nothing"
    if fate.how == "no_effect":
        return f"; it had no effect any more, so delete it{said}"
    if fate.how == "said" and fate.replaced_by:
        return f"; vLLM's deprecation note points to {fate.replaced_by}{said}"
    return ""


def unknown_range(api: VllmApi) -> str:
    """``0.6.0 to 0.33.0``: the releases the database covers."""
    versions = api.database.versions
    return f"{api.database.first_release(0)} to {versions[-1]}"
