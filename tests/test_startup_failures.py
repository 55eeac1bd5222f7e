"""benchmarks/startup_failures: the two tables of real launches are well formed, and the runner turns each row into
a launch file, lints it and tallies what it reports."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import re
import sys

import pytest

from lintutil import REPO

FOLDER = REPO / "benchmarks" / "startup_failures"
_spec = importlib.util.spec_from_file_location("startup_failures_run", FOLDER / "run.py")
assert _spec is not None and _spec.loader is not None
runner = sys.modules["startup_failures_run"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(runner)

FAILURE_COLUMNS = [
    "id",
    "expected",
    "source",
    "launch_kind",
    "launch",
    "model",
    "gpu_reported",
    "gpu",
    "vllm_version",
    "error",
    "reconstructed",
    "note",
]
# A started launch has the words that say it started in place of the expected rule and the error.
STARTED_COLUMNS = [column for column in FAILURE_COLUMNS if column not in ("expected", "error")]
STARTED_COLUMNS.insert(STARTED_COLUMNS.index("reconstructed"), "evidence")
THREAD = re.compile(
    r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+|https://github\.com/[\w.-]+/[\w.-]+/blob/"
    r"[0-9a-f]{40}/\S+"
)


def _rows(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with (FOLDER / name).open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return list(reader.fieldnames or ()), list(reader)


@pytest.mark.parametrize(
    ("name", "columns", "prefix", "minimum"),
    [
        ("failures.tsv", FAILURE_COLUMNS, "f", 30),
        ("started.tsv", STARTED_COLUMNS, "s", 10),
        ("excluded.tsv", [*FAILURE_COLUMNS, "reason"], "f", 1),
    ],
)
def test_each_row_is_a_sourced_launch(name, columns, prefix, minimum):
    header, rows = _rows(name)
    assert header == columns
    assert len(rows) >= minimum
    if name != "excluded.tsv":  # a row moved out to excluded.tsv keeps its id there
        ids = [row["id"] for row in rows] + ([row["id"] for row in _rows("excluded.tsv")[1]] if prefix == "f" else [])
        assert sorted(ids) == [f"{prefix}{number:02d}" for number in range(1, len(ids) + 1)]
        assert [row["id"] for row in rows] == sorted(row["id"] for row in rows)
    for row in rows:
        assert row.get("reason", "-"), row["id"]  # an excluded row says why
        assert None not in row and all(row[column] is not None for column in columns), row["id"]
        assert THREAD.fullmatch(row["source"]), row["id"]
        assert row["launch_kind"] in ("shell", "python"), row["id"]
        assert row["model"] and row["model"] in row["launch"], row["id"]
        assert row["gpu"] == "-" or re.fullmatch(r"[A-Z0-9][A-Z0-9-]*(GB)?", row["gpu"]), row["id"]
        assert row["reconstructed"] in ("no", "partly", "yes"), row["id"]
        assert row["reconstructed"] == "no" or row["note"], row["id"]  # a reconstruction says what it rests on
        assert row["gpu_reported"] and row["vllm_version"], row["id"]
        assert row.get("error", row.get("evidence")), row["id"]
        if row["launch_kind"] == "python":
            compile(row["launch"].replace("; ", "\n"), row["id"], "exec")
        if "expected" in row:
            assert row["expected"] in runner.RULES, row["id"]


def test_each_inference_names_the_release_its_report_date_gives():
    releases = runner.read_releases(FOLDER / "releases.tsv")
    cases = runner.read_cases(FOLDER / "failures.tsv")
    inferences = runner.read_inferences(FOLDER / "inferred.tsv")
    runner.check_inferences(inferences, cases, releases)  # exits on a release that is not the newest before
    assert all(inference.why for inference in inferences.values())
    assert runner.newest_release("2023-08-10", releases) == "0.1.3"
    assert runner.newest_release("2024-08", releases) == "0.5.3.post1"  # a month: releases before its first day
    assert runner.newest_release("2023-01-01", releases) is None
    case = runner.Case("f01", "VLL212", "s", "shell", "vllm serve m", "m", "T4", "not reported (2023-08-10)")
    assert runner.report_date(case) == "2023-08-10"
    assert runner.report_date(dataclasses.replace(case, vllm_version="main (2025-06-15)")) is None
    with pytest.raises(SystemExit):
        runner.check_inferences({"f01": runner.Inference("f01", "2023-08-10", "0.1.2", "why")}, [case], releases)


@pytest.mark.parametrize(
    ("release", "build", "accepted"),
    [
        ("0.8.0", "main", True),  # a main build of 2025-03-14: the first release after it (published 2025-03-18)
        ("0.7.3", "main", False),
        ("0.8.1", "main", False),
        ("0.7.3", "release", True),
        ("0.8.0", "release", False),
        ("0.8.0", "nightly", False),
    ],
)
def test_a_main_build_is_judged_as_the_first_release_after_its_report(release, build, accepted):
    releases = runner.read_releases(FOLDER / "releases.tsv")
    assert runner.first_release_after("2025-03-14", releases) == "0.8.0"
    assert runner.first_release_after("2025-03-18", releases) == "0.8.1"  # published that day: it could have run it
    case = runner.Case("f01", "VLL212", "s", "shell", "vllm serve m", "m", "T4", "not reported (2025-03-14)")
    inference = runner.Inference("f01", "2025-03-14", release, "why", build)
    if accepted:
        runner.check_inferences({"f01": inference}, [case], releases)
    else:
        with pytest.raises(SystemExit):
            runner.check_inferences({"f01": inference}, [case], releases)


def test_every_rule_has_failures():
    _, rows = _rows("failures.tsv")
    assert {row["expected"] for row in rows} == set(runner.RULES)


def test_a_row_becomes_a_launch_file_of_its_kind(tmp_path):
    shell = runner.Case(
        "f01", "VLL210", "s", "shell", "vllm serve org/m --tensor-parallel-size 3", "org/m", "T4", "0.5.4"
    )
    python = runner.Case(
        "f02", "VLL212", "s", "python", "from vllm import LLM; llm = LLM(model='org/m')", "org/m", "-", "not reported"
    )
    assert runner.write_launch(shell, tmp_path).read_text() == "#!/bin/sh\nvllm serve org/m --tensor-parallel-size 3\n"
    assert runner.write_launch(python, tmp_path).read_text() == "from vllm import LLM\nllm = LLM(model='org/m')\n"
    assert [runner.release(text) for text in ("0.8.5.post1", "main (2024-03-28)", "recipe: vLLM >= 0.12.0")] == [
        "0.8.5",
        None,
        "0.12.0",
    ]


def test_the_tally_counts_recall_on_known_models_and_false_positives():
    def case(id_, expected, model, gpu):
        return runner.Case(id_, expected, "s", "shell", f"vllm serve {model}", model, gpu, "-")

    failures = {
        case("f01", "VLL209", "Known/A", "-"): frozenset({"VLL209"}),  # matched as the Hub matches ids
        case("f02", "VLL209", "other/b", "-"): frozenset(),
        case("f03", "VLL211", "known/a", "-"): frozenset(),  # VLL211 needs the GPU: not judged
        case("f04", "VLL211", "known/a", "H100"): frozenset({"VLL211", "VLL209"}),
    }
    started = {case("s01", "", "known/a", "H100"): frozenset({"VLL209"}), case("s02", "", "x/y", "-"): frozenset()}
    results = runner.summarize(failures, started, frozenset({"known/a"}))
    assert runner.render(results, failures, started, "") == (
        "| rule | cases | reported | model known | reported (known) | recall (known) | false positives on 2 started "
        "launches |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |\n"
        "| VLL209 | 2 | 1 | 1 | 1 | 100% | s01 |\n"
        "| VLL210 | 0 | 0 | 0 | 0 | n/a | none |\n"
        "| VLL211 | 2 | 1 | 1 | 1 | 100% | none |\n"
        "| VLL212 | 0 | 0 | 0 | 0 | n/a | none |\n"
        "\n"
        "All rules: 2 of the 2 failures whose model is known reported (100%).\n"
        "\n"
        "| case | expected | reported |\n"
        "| --- | --- | --- |\n"
        "| f01 | VLL209 | VLL209 |\n"
        "| f02 | VLL209 | - |\n"
        "| f03 | VLL211 | - |\n"
        "| f04 | VLL211 | VLL209, VLL211 |\n"
        "| s01 | started | VLL209 |\n"
        "| s02 | started | - |\n"
    )


def test_the_runner_lints_each_row(tmp_path, capsys):
    failures, started, docs = tmp_path / "failures.tsv", tmp_path / "started.tsv", tmp_path / "report.md"
    failures.write_text(
        "\t".join(FAILURE_COLUMNS)
        + "\n"
        + "\t".join(
            [
                "f01",
                "VLL210",
                "https://github.com/o/r/issues/1",
                "shell",
                "vllm serve no-such-org/no-such-model --tensor-parallel-size 3",
                "no-such-org/no-such-model",
                "-",
                "-",
                "0.8.5",
                "error",
                "no",
                "",
            ]
        )
        + "\n"
    )
    started.write_text(
        "\t".join(STARTED_COLUMNS)
        + "\n"
        + "\t".join(
            [
                "s01",
                "https://github.com/o/r/issues/2",
                "python",
                "from vllm import LLM; llm = LLM(model='no-such-org/m2')",
                "no-such-org/m2",
                "-",
                "-",
                "not reported",
                "it works",
                "no",
                "",
            ]
        )
        + "\n"
    )
    inferred = tmp_path / "inferred.tsv"
    inferred.write_text("id\treported\trelease\tbuild\twhy\n")
    docs.write_text("# old figures\n\n## Reading it\n\nprose kept\n")
    arguments = ["--failures", str(failures), "--started", str(started), "--inferred", str(inferred)]
    assert runner.main([*arguments, "--docs", str(docs)]) == 0
    printed = capsys.readouterr().out
    # an unknown model is never judged: nothing reported, and the rows are listed
    assert "| VLL210 | 1 | 0 | 0 | 0 | n/a | none |\n" in printed
    assert printed.endswith(
        (
            "| f01 | VLL210 | - |\n| s01 | started | - |\n",
            "| s01 | started | - |\n\nThis vllm-lint has no --gpu option: the launches were linted "
            "without their GPU.\n",
        )
    )
    assert docs.read_text().startswith(f"# Start-up failures: what vllm-lint reports ({runner.DATE})\n")
    assert docs.read_text().endswith("\n## Reading it\n\nprose kept\n")  # the written part is kept


def test_the_inferred_run_lists_each_case_judged_as_a_release():
    failure = runner.Case("f01", "VLL212", "s", "shell", "vllm serve a/b", "a/b", "T4", "not reported (2023-08-10)")
    other = runner.Case("f02", "VLL212", "s", "shell", "vllm serve c/d", "c/d", "T4", "0.5.4")
    started = runner.Case("s01", "", "s", "shell", "vllm serve a/b", "a/b", "T4", "not reported (2024-12)")
    failures = {failure: frozenset({"VLL212"}), other: frozenset()}
    results = runner.summarize(failures, {started: frozenset()}, frozenset({"a/b"}))
    inference = runner.Inference("f01", "2023-08-10", "0.1.3", "every release up to it refuses alike")
    shown = runner.render_inferred(
        results, failures, {started: frozenset()}, {"f01": "0.1.3", "s01": "0.6.4.post1"}, {"f01": inference}
    )
    assert "| VLL212 | 2 | 1 | 1 | 1 | 100% | none |\n" in shown
    assert shown.endswith(
        "| f01 | 0.1.3 | VLL212 | VLL212 | every release up to it refuses alike |\n"
        "| s01 | 0.6.4.post1 | started | - | (a started launch) |\n"
    )
    assert "| f02 |" not in shown
