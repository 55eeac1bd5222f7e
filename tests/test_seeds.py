"""The acceptance table at the end of shared/spec/RULES.md, for the seed documents' code."""

from __future__ import annotations

import pytest

from lintutil import lint_file_paths

PYTHON_TABLE = {
    "000_bad_pipeline_server.py": ({"VLL101"}, set()),
    "000_good_async_engine_server.py": ({"VLL203", "VLL302", "VLL501"}, {"VLL101", "VLL103", "VLL201"}),
    "004_server.py": ({"VLL103", "VLL301", "VLL303", "VLL502", "VLL503"}, {"VLL202"}),
    "001_vllm_client.py": (set(), "everything"),
    "004_client.py": (set(), "everything"),
}


@pytest.mark.parametrize("name", sorted(PYTHON_TABLE))
def test_python_seed(seeds, name):
    must, must_not = PYTHON_TABLE[name]
    codes = {d.code for d in lint_file_paths([seeds / name])}
    assert must <= codes, f"missing {must - codes}"
    if must_not == "everything":
        assert not codes
    else:
        assert not (must_not & codes)


def test_pipeline_finding_points_at_the_call(seeds):
    [finding] = [d for d in lint_file_paths([seeds / "000_bad_pipeline_server.py"]) if d.code == "VLL101"]
    line = (seeds / "000_bad_pipeline_server.py").read_text().splitlines()[finding.start.line - 1]
    assert line[finding.start.column - 1 :].startswith("pipe(prompt")


def test_seed_findings_carry_concrete_consequences(seeds):
    messages = {d.code: d.message for d in lint_file_paths([seeds / "004_server.py"])}
    assert "TypeError" in messages["VLL301"]
    assert "generate_async" in messages["VLL303"]
    assert "200" in messages["VLL502"]
