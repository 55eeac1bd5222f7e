"""What replaced a name vLLM removed, where vLLM's own code says so.

A name is removed in the first release after the last one that has it (the database shows that by
itself); what replaced it is kept only when vLLM says it, in one of three ways:

* ``alias``: in the last release that had it, the flag was another spelling of a flag that is still
  there (the same argparse action, or the same ``dest`` and kind): renaming it changes nothing;
* ``said``: a deprecation message or help text of that release names the old flag or field and
  exactly one other that the removing release has ("`--cuda-graph-sizes` is deprecated ... Please use
  `--cudagraph-capture-sizes`"); ``one_to_one`` when the new one takes the same kind of value (then
  the rename is offered as an unsafe fix: the two may not behave the same);
* ``no_effect``: vLLM said the flag had no effect any more, or its default was already the value it
  set: deleting it changes nothing;
* ``moved``: a class that left its module and is defined, in the removing release, by exactly one
  other module (``vllm.utils.FlexibleArgumentParser`` -> ``vllm.utils.argparse_utils``), or a module
  that is gone while one new module of the same last name has most of its names.

The words come from ``deprecation_texts`` and flag help texts that ``static_read.py`` collects.
"""

from __future__ import annotations

import re
from collections import defaultdict

_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_REPLACING = re.compile(r"\b(use|instead|replaced|renamed|in favou?r of|switch to|migrate to|superseded)\b", re.IGNORECASE)
_NO_EFFECT = re.compile(r"no effect|no-op|is ignored|has been removed and|does nothing", re.IGNORECASE)
_SURFACES = ("serve", "api_server")


def _options(snapshot: dict) -> dict[str, dict]:
    return {option: flag for surface in _SURFACES for flag in snapshot[surface]["flags"] for option in flag["option_strings"]}


def _texts_about(snapshot: dict, flag: dict | None) -> list[str]:
    texts = list(snapshot.get("deprecation_texts", ()))
    if flag is not None and flag.get("help"):
        texts.insert(0, flag["help"])
    return texts


def flag_replacement(option: str, before: dict, after: dict) -> dict | None:
    """How ``option`` (in ``before``, gone from ``after``) was replaced, or None when vLLM does not say."""
    old_flags, new_flags = _options(before), _options(after)
    flag = old_flags[option]
    for other in flag["option_strings"]:
        if other != option and other in new_flags and not other.startswith("--no-"):
            return {"replaced_by": other, "how": "alias"}
    for other, new in new_flags.items():
        if other.startswith("--") and not other.startswith("--no-") and new["dest"] == flag["dest"] and new["kind"] == flag["kind"]:
            if other not in old_flags or old_flags[other] is flag:
                return {"replaced_by": other, "how": "alias"}
    if _sets_its_default(flag):
        return {"how": "no_effect", "default": flag["default"]}
    for text in _texts_about(before, flag):
        mentioned = set(_FLAG.findall(text))
        if option not in mentioned:
            continue
        if _NO_EFFECT.search(text):
            return {"how": "no_effect", "said": text}
        candidates = {other for other in mentioned - {option} if other in new_flags and not other.startswith("--no-")}
        if len(candidates) == 1 and _REPLACING.search(text):
            new = candidates.pop()
            return {"replaced_by": new, "how": "said", "said": text, "one_to_one": _same_shape(flag, new_flags[new])}
    return None


_AGGREGATE = re.compile(r"(config|overrides)$")


def _without_none(text: str | None) -> str:
    """``int | None`` -> ``int``: a default of None does not change what a field takes."""
    return " | ".join(part for part in (text or "").split(" | ") if part not in ("None", "NoneType"))


def _same_shape(old: dict, new: dict) -> bool:
    """Whether the new flag takes what the old one took (kind, number of values, their type, choices):
    then the old spelling maps onto the new one; otherwise the user has to rewrite the value too."""
    keys = ("kind", "nargs", "type")
    if _AGGREGATE.search(new["dest"]):
        return False  # --speculative-config, --hf-overrides: one JSON for several settings, another value
    return all(old.get(key) == new.get(key) for key in keys) and (old.get("choices") or []) == (new.get("choices") or [])


def _sets_its_default(flag: dict) -> bool:
    """A boolean flag whose default is the value it sets (``--disable-log-requests`` once logging was off
    by default): giving it changed nothing."""
    if flag.get("kind") not in ("store_true", "boolean_optional") or "default" not in flag:
        return False
    return flag["default"] is True


def keyword_replacement(name: str, kind: str, before: dict, after: dict) -> dict | None:
    """The same for an EngineArgs field, SamplingParams keyword or LLM parameter."""
    word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
    for text in before.get("deprecation_texts", ()):
        if not word.search(text):
            continue
        if _NO_EFFECT.search(text):
            return {"how": "no_effect", "said": text}
        mentioned = set(re.findall(r"(?<![\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])", text)) - {name}
        candidates = {other for other in mentioned if other in after[kind]}
        if len(candidates) == 1 and _REPLACING.search(text):
            new = candidates.pop()
            old_type, new_type = (_without_none(snapshot[kind][field].get("type")) for snapshot, field in ((before, name), (after, new)))
            same = old_type == new_type and old_type not in ("", "?") and not _AGGREGATE.search(new)
            return {"replaced_by": new, "how": "said", "said": text, "one_to_one": same}
    return None


def moved_name(module: str, name: str, after: dict) -> dict | None:
    """A class that left ``module``: the one module whose top level defines it in the removing release."""
    homes = [home for home in after.get("class_homes", {}).get(name, ()) if home != module]
    if len(homes) == 1:
        return {"replaced_by": f"{homes[0]}.{name}", "how": "moved"}
    return None


def moved_module(module: str, before: dict, after: dict) -> dict | None:
    """A module that is gone: the one new module of the same last name that has most of its names."""
    leaf = "." + module.rpartition(".")[2]
    names = {name for name in before["module_attributes"][module]["names"] if not name.startswith("_")}
    homes = [
        other
        for other, entry in after["module_attributes"].items()
        if other.endswith(leaf) and other not in before["module_attributes"] and len(names & set(entry["names"])) * 2 >= len(names)
    ]
    if len(homes) == 1:
        return {"replaced_by": homes[0], "how": "moved"}
    return None


def replacements(versions: list[str], snapshots: list[dict]) -> dict[str, dict[str, dict]]:
    """``{"flags": {"--x": {...}}, "engine_args": {...}, "modules": {"vllm.m.Name": {...}}}``, each
    record with ``removed_in`` (the release where the name went) and what vLLM says replaced it."""
    history: dict[str, dict[str, dict]] = defaultdict(dict)
    for index in range(1, len(versions)):
        before, after = snapshots[index - 1], snapshots[index]
        removed_in = versions[index]
        old_flags, new_flags = _options(before), _options(after)
        for option in sorted(set(old_flags) - set(new_flags)):
            if option.startswith("--no-"):
                continue
            found = flag_replacement(option, before, after)
            if found is not None:
                history["flags"][option] = {"removed_in": removed_in, **found}
        for kind in ("engine_args", "sampling_params", "llm_init_params"):
            for name in sorted(set(before[kind]) - set(after[kind])):
                found = keyword_replacement(name, kind, before, after)
                if found is None and kind == "engine_args":
                    flag_found = history["flags"].get("--" + name.replace("_", "-"))
                    if flag_found is not None and flag_found["removed_in"] == removed_in and flag_found.get("replaced_by"):
                        candidate = flag_found["replaced_by"].lstrip("-").replace("-", "_")
                        if candidate in after[kind]:
                            found = {**flag_found, "replaced_by": candidate}
                            found.pop("removed_in")
                if found is not None:
                    history[kind][name] = {"removed_in": removed_in, **found}
        for module, entry in before["module_attributes"].items():
            now = after["module_attributes"].get(module)
            if now is None:
                found = moved_module(module, before, after)
                if found is not None:
                    history["modules"][module] = {"removed_in": removed_in, **found}
                continue
            for name in sorted(set(entry["names"]) - set(now["names"])):
                if name.startswith("_") or now["open"]:
                    continue
                found = moved_name(module, name, after)
                if found is not None:
                    history["modules"][f"{module}.{name}"] = {"removed_in": removed_in, **found}
    return {kind: dict(sorted(records.items())) for kind, records in sorted(history.items())}
