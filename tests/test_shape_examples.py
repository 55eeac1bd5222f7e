"""Issue 38's shapes (the files a launch is written in, the launchers it starts through, what is no launch, the
facts a file pins) against the rule examples that show them. An example names its shape (``shape:`` in
rules/*.yaml); the audit table in docs/realworld.md says, for each shape, which rules have an example of it and
which sides (bad, good). The table and the examples must agree, so that neither gains or loses a pair alone; the
examples themselves are cases of test_rule_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

from vllm_lint.rulebook import load_rules

DOC = Path(__file__).resolve().parents[1] / "docs" / "realworld.md"
SECTION = "## Issue 38's shapes as rule examples"
_ROW = re.compile(r"^\| `(?P<shape>[a-z0-9-]+)` \| .+? \| (?P<rules>VLL\d{3} [a-z/]+(?:; VLL\d{3} [a-z/]+)*) \| [^|]+ \|$")

# The places a launch is written in, each with the rules its launches commonly meet (a launch rule reads any
# launch; these are the ones the new kinds' findings hit, docs/realworld.md "issue 38"). CI launches are tests'
# launches: VLL204 and VLL403 stay silent there, so a CI shape shows only their good side.
LAUNCH_PLACES = ("systemd", "makefile", "justfile", "taskfile", "github-actions", "composite-action", "gitlab-ci",
                 "buildkite", "cloud-init-runcmd", "cloud-init-write-files", "procfile", "supervisord", "dstack", "slurm")
CI = frozenset({"github-actions", "composite-action", "gitlab-ci", "buildkite"})
COMMON_LAUNCH_RULES = ("VLL201", "VLL202", "VLL203", "VLL204", "VLL206", "VLL401", "VLL403")
SILENT_IN_CI = frozenset({"VLL204", "VLL403"})
# The shapes that declare the launch's GPUs, and the rules that read them.
GPU_SHAPES = {"slurm": ("VLL205", "VLL211", "VLL212"), "dstack": ("VLL205", "VLL211", "VLL212")}


def audit_table() -> dict[str, dict[str, set[str]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[: section.find("\n## ", len(SECTION))]
    table: dict[str, dict[str, set[str]]] = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            rules = (cell.split(" ") for cell in match.group("rules").split("; "))
            table[match.group("shape")] = {code: set(sides.split("/")) for code, sides in rules}
    return table


def shown_by_examples() -> dict[str, dict[str, set[str]]]:
    shown: dict[str, dict[str, set[str]]] = {}
    for rule in load_rules().values():
        for example in rule.examples:
            if example.shape:
                shown.setdefault(example.shape, {}).setdefault(rule.code, set()).add(example.kind)
    return shown


def test_the_audit_table_is_what_the_rule_examples_show():
    table, shown = audit_table(), shown_by_examples()
    assert table, f"no audit rows under {SECTION!r} in {DOC.name}"
    differences = [
        f"{shape} {code}: table says {sorted(table.get(shape, {}).get(code, ()))}, examples show {sorted(shown.get(shape, {}).get(code, ()))}"
        for shape in sorted(set(table) | set(shown))
        for code in sorted(set(table.get(shape, {})) | set(shown.get(shape, {})))
        if table.get(shape, {}).get(code) != shown.get(shape, {}).get(code)
    ]
    assert not differences, "\n".join(differences)


def test_each_launch_place_has_examples_of_the_common_launch_rules():
    shown = shown_by_examples()
    missing = []
    for shape in LAUNCH_PLACES:
        wanted = [(code, {"good"} if shape in CI and code in SILENT_IN_CI else {"bad", "good"}) for code in COMMON_LAUNCH_RULES]
        wanted += [(code, {"bad", "good"}) for code in GPU_SHAPES.get(shape, ())]
        missing += [f"{shape} {code} {sorted(sides)}" for code, sides in wanted if shown.get(shape, {}).get(code) != sides]
    assert not missing, missing
