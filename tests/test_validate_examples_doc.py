"""benchmarks/validate_examples.py's table: a re-run of some examples replaces their rows, and only theirs."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _benchmark(doc: Path):
    spec = importlib.util.spec_from_file_location("validate_examples", REPO / "benchmarks" / "validate_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.DOC = doc
    return module


def _run(name: str, same: int, bad: float, fixed: float) -> dict:
    return {"name": name, "origin": "rules", "comparison": {"same_text": same, "compared": 8, "passed": same == 8},
            "fixes_applied": {name.split()[0]: 1}, "fixed_over_bad_throughput": fixed / bad,
            "bad": {"tokens_per_s": bad}, "fixed": {"tokens_per_s": fixed}}


def test_a_rerun_replaces_the_rows_of_the_servers_it_ran(tmp_path):
    bench = _benchmark(tmp_path / "validate-examples.md")
    started = dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc)
    full = {"runs": [_run("VLL101 example 1", 8, 10.0, 20.0), _run("VLL101 example 2", 8, 10.0, 30.0)],
            "failed": [{"name": "VLL101 example 55", "error": "no POST route"},
                       {"name": "VLL101 example 56", "error": "the bad server exited with 1:\nLoading | weights\n\n"
                                                              "RuntimeError: no task\n"}],
            "skipped": [], "passed": False}
    args = argparse.Namespace(requests=8, concurrency=4, max_tokens=16, files=[], rerun=[])
    bench.write_doc(full, args, started, 60.0, "1.0")
    before = bench.DOC.read_text().splitlines()
    assert "| VLL101 example 55 | | | could not be run: no POST route | | | | FAIL |" in before
    assert ("| VLL101 example 56 | | | could not be run: the bad server exited with 1: ... RuntimeError: no task "
            "| | | | FAIL |") in before

    again = {"runs": [_run("VLL101 example 55", 8, 5.0, 15.0), _run("VLL102 example 3", 7, 4.0, 4.0)],
             "failed": [], "skipped": [], "passed": False}
    bench.rerun_doc(again, argparse.Namespace(rerun=["VLL101:55", "VLL102:3"]), started, "2.0")
    after = bench.DOC.read_text().splitlines()
    rows = [line for line in after if line.startswith("| VLL")]
    assert rows == [
        next(line for line in before if line.startswith("| VLL101 example 1 ")),
        next(line for line in before if line.startswith("| VLL101 example 2 ")),
        "| VLL101 example 55 | app | 1 x VLL101 | 8/8 same text | 5.0 | 15.0 | 3.00 | PASS |",
        next(line for line in before if line.startswith("| VLL101 example 56 ")),
        "| VLL102 example 3 | app | 1 x VLL102 | 7/8 same text | 4.0 | 4.0 | 1.00 | FAIL |",
    ]
    notes = [line for line in after if line.startswith("Re-run ")]
    assert len(notes) == 1 and "VLL101 example 55, VLL102 example 3" in notes[0] and "load average 2.0" in notes[0]
    assert notes[0].endswith("With them, 3 of the 5 servers below PASS.")
    bench.rerun_doc(again, argparse.Namespace(rerun=["VLL101:55", "VLL102:3"]), started, "3.0")
    assert [line for line in bench.DOC.read_text().splitlines() if line.startswith("| VLL")] == rows
    assert sum(line.startswith("Re-run ") for line in bench.DOC.read_text().splitlines()) == 1


def test_a_later_rerun_keeps_the_note_of_an_earlier_one_on_other_servers(tmp_path):
    bench = _benchmark(tmp_path / "validate-examples.md")
    started = dt.datetime(2026, 12, 2, tzinfo=dt.timezone.utc)
    full = {"runs": [_run("VLL101 example 1", 8, 10.0, 20.0), _run("VLL101 example 2", 8, 10.0, 30.0)],
            "failed": [], "skipped": [], "passed": True}
    bench.write_doc(full, argparse.Namespace(requests=8, concurrency=4, max_tokens=16, files=[], rerun=[]), started, 60.0, "1.0")
    bench.rerun_doc({"runs": [_run("VLL101 example 1", 8, 5.0, 15.0)], "failed": [], "skipped": [], "passed": True},
                    argparse.Namespace(rerun=["VLL101:1"]), started, "2.0")
    bench.rerun_doc({"runs": [_run("VLL101 example 2", 7, 5.0, 5.0)], "failed": [], "skipped": [], "passed": False},
                    argparse.Namespace(rerun=["VLL101:2"]), started, "3.0")
    notes = [line for line in bench.DOC.read_text().splitlines() if line.startswith("Re-run ")]
    assert len(notes) == 2
    assert "VLL101 example 1;" in notes[0] and "With them" not in notes[0]
    assert "VLL101 example 2;" in notes[1] and notes[1].endswith("With them, 1 of the 2 servers below PASS.")
