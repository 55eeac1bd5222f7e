"""Where two snapshots of one vLLM release differ, name by name: the static reading against the
import-based one (``introspect.py``), or two static readings.

Usage::

    python -m tools.vllm_api.compare IMPORT_BASED.json STATIC.json

Compared: what the linter reads (the names of fields, keywords and parameters; each serve flag's
option strings, dest, kind, nargs, choices and known values; modules, their names and whether the
list is open; class attributes). Defaults are not: the linter reads none from the database except
the few ``database.py`` keeps, and those are checked by the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

_FLAG_KEYS = ("dest", "kind", "nargs", "choices", "known_values", "known_values_enforced")


def differences(expected: dict, found: dict) -> Iterator[str]:
    for key in ("engine_args", "async_engine_args", "sampling_params", "llm_init_params"):
        yield from _name_sets(key, set(expected.get(key, {})), set(found.get(key, {})))
    yield from _flag_differences("serve", expected["serve"], found["serve"])
    yield from _name_sets("modules", set(expected["modules"]), set(found["modules"]))
    for module in sorted(set(expected["module_attributes"]) & set(found["module_attributes"])):
        left, right = expected["module_attributes"][module], found["module_attributes"][module]
        yield from _name_sets(f"names of {module}", set(left["names"]), set(right["names"]))
        if left["open"] != right["open"]:
            yield f"names of {module}: open {left['open']} -> {right['open']}"
    for klass in sorted(set(expected["class_attributes"]) | set(found["class_attributes"])):
        yield from _name_sets(
            f"attributes of {klass}",
            set(expected["class_attributes"].get(klass, ())),
            set(found["class_attributes"].get(klass, ())),
        )


def _name_sets(what: str, expected: set[str], found: set[str]) -> Iterator[str]:
    for name in sorted(expected - found):
        yield f"{what}: missing {name}"
    for name in sorted(found - expected):
        yield f"{what}: extra {name}"


def _flag_differences(what: str, expected: dict, found: dict) -> Iterator[str]:
    if expected.get("positional") != found.get("positional"):
        yield f"{what} positional: {expected.get('positional')} -> {found.get('positional')}"
    if expected.get("allow_abbrev") != found.get("allow_abbrev"):
        yield f"{what} allow_abbrev: {expected.get('allow_abbrev')} -> {found.get('allow_abbrev')}"
    by_option = {tuple(flag["option_strings"]): flag for flag in found["flags"]}
    seen: set[tuple[str, ...]] = set()
    for flag in expected["flags"]:
        options = tuple(flag["option_strings"])
        other = by_option.get(options)
        if other is None:
            yield f"{what}: missing flag {' '.join(options)}"
            continue
        seen.add(options)
        for key in _FLAG_KEYS:
            if flag.get(key) != other.get(key):
                yield f"{what} {options[0]}: {key} {flag.get(key)!r} -> {other.get(key)!r}"
    for options in by_option:
        if options not in seen:
            yield f"{what}: extra flag {' '.join(options)}"


def name_count(snapshot: dict) -> int:
    """How many names a snapshot holds, the denominator of "at most 1% differ"."""
    count = sum(len(snapshot.get(key, {})) for key in ("engine_args", "async_engine_args", "sampling_params", "llm_init_params"))
    count += sum(len(flag["option_strings"]) for flag in snapshot["serve"]["flags"])
    count += len(snapshot["modules"])
    count += sum(len(entry["names"]) for entry in snapshot["module_attributes"].values())
    count += sum(len(names) for names in snapshot["class_attributes"].values())
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="List where two snapshots of one vLLM release differ.")
    parser.add_argument("expected", type=Path)
    parser.add_argument("found", type=Path)
    args = parser.parse_args(argv)
    expected = json.loads(args.expected.read_text(encoding="utf-8"))
    found = json.loads(args.found.read_text(encoding="utf-8"))
    lines = list(differences(expected, found))
    for line in lines:
        print(line)
    total = name_count(expected)
    print(f"{len(lines)} differences in {total:,} names ({100 * len(lines) / total:.3f}%)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
