"""The whole output for each file of tests/fixtures/commands, as a user in that folder sees it: the full report,
then the diff of every fix, unsafe ones too. The tests beside this one state what each finding is for."""

from __future__ import annotations

import pytest

from fixture_files import COMMAND_FIXTURES
from snapshot import report_and_fixes

NAMES = sorted(p.name for p in COMMAND_FIXTURES.iterdir())


@pytest.mark.parametrize("name", NAMES)
def test_fixture_output_and_fixes(name, snapshots):
    snapshots.assert_match(f"commands/{name}", report_and_fixes(name, cwd=COMMAND_FIXTURES))


def test_no_stale_fixture_snapshots(snapshots):
    snapshots.assert_only("commands", NAMES)
