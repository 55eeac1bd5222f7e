"""The acceptance table of ../shared/spec/RULES.md ("What the seed documents must produce"), held exactly on
the seed code files (tests/fixtures/seeds/code): each file reports the findings seed_table.py lists and no
other, each where the table says. The full output of every seed, and the fixes it gets, are snapshots."""

from __future__ import annotations

import pytest

from fixture_files import SEEDS, lint_seed
from seed_table import TABLE
from snapshot import report_and_fixes



def test_the_table_covers_every_seed():
    assert sorted(TABLE) == sorted(p.name for p in SEEDS.iterdir())


@pytest.mark.parametrize("name", sorted(TABLE))
def test_seed_reports_exactly_the_table(name):
    lines = (SEEDS / name).read_text(encoding="utf-8").splitlines()
    got = []
    for d in lint_seed(name):
        end = d.end.column - 1 if d.end.line == d.start.line else None
        got.append((d.code, d.start.line, d.end.line, lines[d.start.line - 1][d.start.column - 1 : end]))
    assert got == TABLE[name]


def test_seed_findings_carry_concrete_consequences():
    messages = {d.code: d.message for d in lint_seed("004_server.py")}
    assert "TypeError" in messages["VLL301"]
    assert "generate_async" in messages["VLL303"]
    assert "200" in messages["VLL502"]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_seed_output_and_fixes(name, snapshots):
    snapshots.assert_match(f"seeds/{name}", report_and_fixes(name, cwd=SEEDS))


def test_no_stale_seed_snapshots(snapshots):
    snapshots.assert_only("seeds", TABLE)
