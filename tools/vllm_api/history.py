"""What replaced a name vLLM removed, where vLLM's own code says so.

A name is removed in the first release after the last one that has it (the database shows that by
itself); what replaced it is kept only when vLLM says it, in one of three ways:

* ``alias``: in the last release that had it, the flag was another spelling of a flag that is still
  there (the same argparse action, or the same ``dest`` and kind): renaming it changes nothing;
* ``said``: a deprecation message or help text of that release names the old flag or field and
  exactly one other that the removing release has ("--disable-log-requests is deprecated ... use
  --enable-log-requests"): a rename the user should check, since the two may not behave the same;
* ``no_effect``: vLLM said the flag had no effect any more: deleting it changes nothing;
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
    for text in _texts_about(before, flag):
        mentioned = set(_FLAG.findall(text))
        if option not in mentioned:
            continue
        if _NO_EFFECT.search(text):
            return {"how": "no_effect", "said": text}
        candidates = {other for other in mentioned - {option} if other in new_flags and not other.startswith("--no-")}
        if len(candidates) == 1 and _REPLACING.search(text):
            return {"replaced_by": candidates.pop(), "how": "said", "said": text}
    return None


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
            return {"replaced_by": candidates.pop(), "how": "said", "said": text}
    return None


def moved_name(module: str, name: str, homes_of: dict[str, list[str]]) -> dict | None:
    """A name that left ``module``: where it is defined in the removing release, if in one place only."""
    if not name[:1].isupper():
        return None  # functions and constants: too many modules share names like `logger`, `main`
    # The names list cannot tell a definition from an import; the innermost of the modules that have
    # the name is where it is defined, so a module with a submodule that has it does not count.
    having = [other for other in homes_of.get(name, ()) if other != module]
    homes = [other for other in having if not any(deeper.startswith(other + ".") for deeper in having)]
    if len(homes) == 1:
        return {"replaced_by": f"{homes[0]}.{name}", "how": "moved"}
    return None


def _homes(snapshot: dict) -> dict[str, list[str]]:
    """Each public name -> the modules that have it."""
    homes: dict[str, list[str]] = defaultdict(list)
    for module, entry in snapshot["module_attributes"].items():
        for name in entry["names"]:
            if name[:1].isupper():
                homes[name].append(module)
    return homes


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
        homes_of = _homes(after)
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
                found = moved_name(module, name, homes_of)
                if found is not None:
                    history["modules"][f"{module}.{name}"] = {"removed_in": removed_in, **found}
    return {kind: dict(sorted(records.items())) for kind, records in sorted(history.items())}
