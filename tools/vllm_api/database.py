"""Merging one snapshot per vLLM release into the database the linter ships
(``vllm_lint/vllm_api/data/vllm-api.json``, read by ``vllm_lint.vllm_api.database``).

Each name is stored once with the releases that have it, as ranges of positions in ``versions``
(``"0-27"``). Names with the same ranges are stored together (``{"0-27": "a b c"}``), which is
what keeps ~30 releases of ~3,000 modules small. Only what the linter reads is kept:

* ``keywords``: EngineArgs / AsyncEngineArgs fields, SamplingParams keywords, ``LLM(...)`` parameters;
* ``defaults``: the defaults of those fields that the rules read (``RULE_DEFAULTS``), per release, and
  under ``effective`` the value vLLM resolves a None default to where that is known
  (``static_read.effective_defaults``: prefix caching is off until 0.8 though its default is None from 0.6.5);
* ``flags``: every distinct ``vllm serve`` / api_server flag record with the releases of each surface;
* ``positional``, ``allow_abbrev``: per surface; ``api_server_deprecated``: the releases whose
  ``python -m vllm.entrypoints.openai.api_server`` warns that it is deprecated;
* ``modules``: each module's releases, the releases where its name list is open, and its public names
  (names with a leading underscore are never reported, so they are not stored);
* ``class_attributes``, ``implicit_module_names``;
* ``entrypoints``: the ``vllm/vllm-openai`` image's ENTRYPOINT per release and where it was read;
* ``releases``: every release read, to the database entry with the same API (a patch release that
  changed nothing shares its minor's entry);
* ``history``: what replaced a removed name, where vLLM's own code says it (``history.py``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from tools.vllm_api.history import replacements
from vllm_lint.vllm_api.versionsets import minor_of, release_key, to_ranges

SCHEMA = 2
KEYWORD_KINDS = ("engine_args", "async_engine_args", "sampling_params", "llm_init_params")
SURFACES = ("serve", "api_server")
FLAG_FIELDS = ("dest", "option_strings", "kind", "nargs", "choices", "known_values", "known_values_enforced", "repeatable")
# Defaults the rules read: VLL201 (how much of the GPU vLLM takes), VLL204 (prefix caching), VLL302.
RULE_DEFAULTS = {
    "engine_args": ("gpu_memory_utilization", "enable_prefix_caching", "enable_chunked_prefill", "max_model_len"),
    "sampling_params": ("max_tokens",),
}


def api_signature(snapshot: dict) -> str:
    """What the linter would read from one snapshot, as text: two releases with the same
    signature share one database entry."""
    kept = {key: sorted(snapshot[key]) for key in KEYWORD_KINDS}
    kept["defaults"] = {
        kind: {name: snapshot[kind].get(name, {}).get("default") for name in names} for kind, names in RULE_DEFAULTS.items()
    }
    for surface in SURFACES:
        kept[surface] = [[flag.get(key) for key in FLAG_FIELDS] for flag in snapshot[surface]["flags"]]
        kept[f"{surface}_positional"] = snapshot[surface]["positional"]
    kept["modules"] = {
        module: [entry["open"], sorted(public_names(entry["names"]))] for module, entry in snapshot["module_attributes"].items()
    }
    kept["class_attributes"] = snapshot["class_attributes"]
    kept["api_server_deprecated"] = snapshot.get("api_server_deprecated", False)
    kept["effective_defaults"] = snapshot.get("effective_defaults", {})
    return json.dumps(kept, sort_keys=True)


def public_names(names: Iterable[str]) -> list[str]:
    return [name for name in names if not name.startswith("_")]


def choose_entries(snapshots: dict[str, dict], entrypoints: dict[str, dict] | None = None) -> tuple[list[str], dict[str, str]]:
    """(the releases that get an entry, every release -> the entry it reads).

    Each minor's last patch release gets one; an earlier patch release gets its own only when its
    API (or its image's entrypoint) differs from the next patch release's.
    """
    ordered = sorted(snapshots, key=release_key)  # type: ignore[arg-type]
    entries: list[str] = []
    releases: dict[str, str] = {}
    for position in range(len(ordered) - 1, -1, -1):
        version = ordered[position]
        later = ordered[position + 1] if position + 1 < len(ordered) else None
        argv = (entrypoints or {}).get(version, {}).get("argv")
        later_argv = (entrypoints or {}).get(later, {}).get("argv") if later is not None else None
        if (
            later is not None
            and minor_of(later) == minor_of(version)
            and argv == later_argv
            and api_signature(snapshots[version]) == api_signature(snapshots[later])
        ):
            releases[version] = releases[later]
            continue
        entries.append(version)
        releases[version] = version
    entries.reverse()
    return entries, dict(sorted(releases.items(), key=lambda item: release_key(item[0])))  # type: ignore[arg-type, return-value]


def grouped(masks: dict[str, int]) -> dict[str, str]:
    """{name: mask} -> {ranges: "name name ..."}, names sorted within a group."""
    groups: dict[int, list[str]] = defaultdict(list)
    for name, mask in masks.items():
        groups[mask].append(name)
    return {to_ranges(mask): " ".join(sorted(names)) for mask, names in sorted(groups.items(), key=lambda item: -item[0])}


def build(snapshots: dict[str, dict], entrypoints: dict[str, dict]) -> dict:
    """The database from one snapshot per release (``static_read.py``) and the image entrypoints."""
    versions, releases = choose_entries(snapshots, entrypoints)
    chosen = [snapshots[version] for version in versions]
    bit = {version: 1 << index for index, version in enumerate(versions)}

    keywords: dict[str, dict[str, str]] = {}
    for kind in KEYWORD_KINDS:
        masks: dict[str, int] = defaultdict(int)
        for version, snapshot in zip(versions, chosen):
            for name in snapshot[kind]:
                masks[name] |= bit[version]
        keywords[kind] = grouped(masks)

    defaults: dict[str, dict[str, list]] = {}
    for kind, names in RULE_DEFAULTS.items():
        defaults[kind] = {}
        for name in names:
            by_value: dict[str, int] = defaultdict(int)
            for version, snapshot in zip(versions, chosen):
                entry = snapshot[kind].get(name)
                if entry is not None and not entry.get("unknown") and not entry.get("repr"):
                    by_value[json.dumps(entry.get("default"))] |= bit[version]
            defaults[kind][name] = [[json.loads(value), to_ranges(mask)] for value, mask in by_value.items()]

    effective: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for version, snapshot in zip(versions, chosen):
        for name, value in snapshot.get("effective_defaults", {}).items():
            effective[name][json.dumps(value)] |= bit[version]
    defaults["effective"] = {
        name: [[json.loads(value), to_ranges(mask)] for value, mask in values.items()] for name, values in sorted(effective.items())
    }

    flag_masks: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    records: dict[str, dict] = {}
    for version, snapshot in zip(versions, chosen):
        for surface in SURFACES:
            for flag in snapshot[surface]["flags"]:
                # (nargs 0 is kept: `0 in (None, False)` would drop it)
                record = {key: flag[key] for key in FLAG_FIELDS if flag.get(key) is not None and flag.get(key) is not False}
                record["option_strings"] = flag["option_strings"]
                record.setdefault("nargs", None)
                key = json.dumps(record, sort_keys=True)
                records[key] = record
                flag_masks[key][surface] |= bit[version]
    flags = []
    for key, record in sorted(records.items(), key=lambda item: (item[1]["option_strings"][0], item[0])):
        flags.append({**record, **{surface: to_ranges(mask) for surface, mask in flag_masks[key].items()}})

    positional: dict[str, dict[str, str]] = {}
    allow_abbrev: dict[str, str] = {}
    for surface in SURFACES:
        by_list: dict[str, int] = defaultdict(int)
        abbrev = 0
        for version, snapshot in zip(versions, chosen):
            by_list[" ".join(snapshot[surface]["positional"])] |= bit[version]
            if snapshot[surface]["allow_abbrev"]:
                abbrev |= bit[version]
        positional[surface] = {to_ranges(mask): names for names, mask in by_list.items()}
        allow_abbrev[surface] = to_ranges(abbrev)

    module_masks: dict[str, int] = defaultdict(int)
    open_masks: dict[str, int] = defaultdict(int)
    name_masks: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for version, snapshot in zip(versions, chosen):
        for module, entry in snapshot["module_attributes"].items():
            module_masks[module] |= bit[version]
            if entry["open"]:
                open_masks[module] |= bit[version]
            for name in public_names(entry["names"]):
                name_masks[module][name] |= bit[version]
    modules = {
        module: {
            "in": to_ranges(module_masks[module]),
            **({"open": to_ranges(open_masks[module])} if open_masks[module] else {}),
            "names": grouped(name_masks[module]),
        }
        for module in sorted(module_masks)
    }

    class_masks: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for version, snapshot in zip(versions, chosen):
        for klass, names in snapshot["class_attributes"].items():
            for name in names:
                class_masks[klass][name] |= bit[version]
    class_attributes = {klass: grouped(masks) for klass, masks in sorted(class_masks.items())}

    implicit = sorted({name for snapshot in chosen for name in snapshot["implicit_module_names"]})
    deprecated = sum(bit[version] for version, snapshot in zip(versions, chosen) if snapshot.get("api_server_deprecated"))
    return {
        "schema": SCHEMA,
        "versions": versions,
        "releases": releases,
        "keywords": keywords,
        "defaults": defaults,
        "flags": flags,
        "positional": positional,
        "allow_abbrev": allow_abbrev,
        "api_server_deprecated": to_ranges(deprecated),
        "implicit_module_names": implicit,
        "modules": modules,
        "class_attributes": class_attributes,
        "entrypoints": {version: entrypoints[version] for version in versions if version in entrypoints},
        "history": replacements(versions, chosen),
    }


def render(database: dict) -> str:
    """One line per module, flag and group: a refresh shows up as a readable diff."""
    lines = ["{"]
    items = list(database.items())
    for position, (key, value) in enumerate(items):
        comma = "," if position < len(items) - 1 else ""
        if isinstance(value, dict) and value and key in ("modules", "keywords", "class_attributes", "releases", "entrypoints", "history", "defaults"):
            inner = [f"  {json.dumps(name)}: {_compact(item)}" for name, item in value.items()]
            lines.append(f" {json.dumps(key)}: {{\n" + ",\n".join(inner) + f"\n }}{comma}")
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            inner = [f"  {_compact(item)}" for item in value]
            lines.append(f" {json.dumps(key)}: [\n" + ",\n".join(inner) + f"\n ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write(database: dict, out: Path) -> int:
    text = render(database)
    json.loads(text)  # the hand-written layout must still be JSON
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(out)
    return len(text.encode("utf-8"))
