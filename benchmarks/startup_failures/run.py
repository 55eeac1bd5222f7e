"""Run vllm-lint on real vLLM start-up failures and on real launches that started.

    PYTHONPATH=$PWD python benchmarks/startup_failures/run.py [--docs docs/startup-failures.md]

Each row of ``failures.tsv`` and ``started.tsv`` (README.md says where they come from) becomes one launch file in a
temporary folder: a shell script holding the command, or a Python file holding the call. ``vllm-lint check --preview
--output-format json`` runs on it, with ``--gpu TYPE`` when the row names the GPU type (the GPU count comes from the
launch's own parallel sizes) and ``--target-vllm-version X.Y.Z`` when the row names the release.

Per rule (VLL209-VLL212) it reports: ``cases``, the failures that expect it; ``reported``, those it reported;
``known``, the cases the linter can judge (the model, as the launch names it, is in the shipped model table, and for
VLL211/VLL212 the row names the GPU type); ``recall`` on those; and ``false positives``, the started launches it
reported on. With ``--docs`` the table is also written to that file, dated, with the vllm-lint commit measured.

A second run judges the failures of ``inferred.tsv`` (reports that give a date, not a release) as the newest vLLM
release published on or before the report's date (``releases.tsv``, PyPI's publication dates), where the row says
why every release up to that date fails the launch in the same way; or, for a row whose ``build`` is ``main`` (a
report that can only have run a build of ``main``: no release before its date serves the model), as the first
release published after the date, where the row says why every ``main`` build the report can have run and that
release fail the launch in the same way. The runner checks that the release named is that one. The started
launches whose report gives only a date are judged as the newest release before it, all of them: a harsher test of
the false positives. Both runs' figures are printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TABLE = REPO / "vllm_lint" / "data" / "model_configs.jsonl"
RULES = ("VLL209", "VLL210", "VLL211", "VLL212")
NEEDS_GPU = frozenset({"VLL211", "VLL212"})
DATE = "2026-12-07"
FAILED = "vllm-lint failed"
_RELEASE = re.compile(r"\d+\.\d+(?:\.\d+)?")
_DATE = re.compile(r"\((\d{4}-\d{2}(?:-\d{2})?)\)")


@dataclass(frozen=True)
class Case:
    id: str
    expected: str  # "" for a launch that started
    source: str
    launch_kind: str  # "shell" or "python"
    launch: str
    model: str
    gpu: str  # a GPU type for --gpu, or "-"
    vllm_version: str


def read_cases(path: Path) -> list[Case]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        Case(
            row["id"],
            row.get("expected", ""),
            row["source"],
            row["launch_kind"],
            row["launch"],
            row["model"],
            row["gpu"],
            row["vllm_version"],
        )
        for row in rows
    ]


@dataclass(frozen=True)
class Inference:
    id: str
    reported: str  # the report's date, YYYY-MM-DD
    release: str  # the release the case is judged as
    why: str  # why every release up to the date (or every main build it can have run) fails alike, with sources
    build: str = "release"  # "release": the newest release on or before the date; "main": the first one after it


def read_inferences(path: Path) -> dict[str, Inference]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {
        row["id"]: Inference(row["id"], row["reported"], row["release"], row["why"], row["build"]) for row in rows
    }


def read_releases(path: Path) -> list[tuple[str, str]]:
    """(release, publication date) pairs, oldest first."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return sorted(((row["release"], row["published"]) for row in rows), key=lambda pair: pair[1])


def newest_release(date: str, releases: list[tuple[str, str]]) -> str | None:
    """The newest release published on or before ``date`` (YYYY-MM-DD; a month, YYYY-MM, stands for its first
    day, the latest a release the report could use may have been published)."""
    day = date if len(date) == 10 else f"{date}-01"
    published = [release for release, when in releases if when <= day]
    return published[-1] if published else None


def first_release_after(date: str, releases: list[tuple[str, str]]) -> str | None:
    """The first release published after ``date`` (YYYY-MM-DD): the one a report that ran a build of ``main`` that
    day is judged as."""
    later = [release for release, when in releases if when > date]
    return later[0] if later else None


def report_date(case: Case) -> str | None:
    """The date a row's version gives where it gives no release ("not reported (2024-12)"), else None."""
    if release(case.vllm_version) is not None or not case.vllm_version.startswith("not reported"):
        return None
    match = _DATE.search(case.vllm_version)
    return match.group(1) if match else None


def check_inferences(inferences: dict[str, Inference], cases: list[Case], releases: list[tuple[str, str]]) -> None:
    """Each inference names a failure whose report gives the same date, and the newest release before it (a
    ``main`` build: the first release after it)."""
    by_id = {case.id: case for case in cases}
    for inference in inferences.values():
        case = by_id.get(inference.id)
        if case is None or report_date(case) is None or not inference.reported.startswith(report_date(case) or "-"):
            raise SystemExit(f"inferred.tsv: {inference.id} is not a failure whose report gives {inference.reported}")
        if inference.build == "main" and len(inference.reported) == 10:
            expected, which = first_release_after(inference.reported, releases), "the first after"
        elif inference.build == "release":
            expected, which = newest_release(inference.reported, releases), "the newest before"
        else:
            raise SystemExit(f"inferred.tsv: {inference.id} has build {inference.build!r} (release, or main on a day)")
        if inference.release != expected:
            raise SystemExit(f"inferred.tsv: {inference.id} names {inference.release}; {which} is {expected}")


def write_launch(case: Case, folder: Path) -> Path:
    """The case's launch as a file of its own kind, in a folder of its own."""
    case_folder = folder / case.id
    case_folder.mkdir(parents=True, exist_ok=True)
    if case.launch_kind == "python":
        path = case_folder / "launch.py"
        path.write_text(case.launch.replace("; ", "\n") + "\n", encoding="utf-8")
    else:
        path = case_folder / "launch.sh"
        path.write_text(f"#!/bin/sh\n{case.launch}\n", encoding="utf-8")
    return path


def release(text: str) -> str | None:
    """The X.Y.Z a row's version names, or None (a branch, a date, nothing)."""
    match = _RELEASE.search(text)
    return match.group(0) if match else None


def gpu_flag_supported() -> bool:
    shown = subprocess.run([sys.executable, "-m", "vllm_lint", "check", "--help"], capture_output=True, text=True)
    return "--gpu" in shown.stdout


def lint(path: Path, case: Case, with_gpu: bool, judged_as: str | None = None) -> frozenset[str]:
    """The codes among ``RULES`` vllm-lint reports on the launch file (``FAILED`` when it did not run), judged
    against the row's release, or ``judged_as`` where given."""
    command = [
        sys.executable,
        "-m",
        "vllm_lint",
        "check",
        "--preview",
        "--output-format",
        "json",
        "--isolated",
        "--no-cache",
        "--exit-zero",
    ]
    if with_gpu and case.gpu != "-":
        command += ["--gpu", case.gpu]
    version = judged_as or release(case.vllm_version)
    if version is not None:
        command += ["--target-vllm-version", version]
    result = subprocess.run([*command, path.name], cwd=path.parent, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:  # a usage error (a GPU name this vllm-lint does not know): shown, not counted
        print(f"{case.id}: vllm-lint exited {result.returncode}: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return frozenset({FAILED})
    return frozenset(finding["code"] for finding in json.loads(result.stdout or "[]") if finding["code"] in RULES)


def table_models() -> frozenset[str]:
    """The shipped table's model ids, lower-cased: the linter matches a launch's model as the Hub does."""
    with TABLE.open(encoding="utf-8") as handle:
        return frozenset(json.loads(line)["model"].lower() for line in handle if line.strip())


def known(case: Case, rule: str, models: frozenset[str]) -> bool:
    return case.model.lower() in models and (rule not in NEEDS_GPU or case.gpu != "-")


@dataclass(frozen=True)
class RuleResult:
    rule: str
    cases: int
    reported: int
    known: int
    reported_known: int
    false_positives: tuple[str, ...]

    @property
    def recall(self) -> str:
        return f"{self.reported_known / self.known:.0%}" if self.known else "n/a"


def summarize(
    failures: dict[Case, frozenset[str]], started: dict[Case, frozenset[str]], models: frozenset[str]
) -> list[RuleResult]:
    results = []
    for rule in RULES:
        cases = [case for case in failures if case.expected == rule]
        judged = [case for case in cases if known(case, rule, models)]
        results.append(
            RuleResult(
                rule,
                len(cases),
                sum(rule in failures[case] for case in cases),
                len(judged),
                sum(rule in failures[case] for case in judged),
                tuple(case.id for case in started if rule in started[case]),
            )
        )
    return results


def render(
    results: list[RuleResult], failures: dict[Case, frozenset[str]], started: dict[Case, frozenset[str]], note: str
) -> str:
    lines = [
        "| rule | cases | reported | model known | reported (known) | recall (known) | false positives on "
        f"{len(started)} started launches |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for result in results:
        positives = ", ".join(result.false_positives) or "none"
        lines.append(
            f"| {result.rule} | {result.cases} | {result.reported} | {result.known} | "
            f"{result.reported_known} | {result.recall} | {positives} |"
        )
    reported, judged = sum(r.reported_known for r in results), sum(r.known for r in results)
    share = f"{reported / judged:.0%}" if judged else "n/a"
    lines += ["", f"All rules: {reported} of the {judged} failures whose model is known reported ({share})."]
    lines += ["", "| case | expected | reported |", "| --- | --- | --- |"]
    for case, codes in [*failures.items(), *started.items()]:
        lines.append(f"| {case.id} | {case.expected or 'started'} | {', '.join(sorted(codes)) or '-'} |")
    if note:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def commit() -> str:
    shown = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return shown.stdout.strip() or "unknown"


def render_inferred(
    results: list[RuleResult],
    failures: dict[Case, frozenset[str]],
    started: dict[Case, frozenset[str]],
    judged_as: dict[str, str],
    inferences: dict[str, Inference],
) -> str:
    """The second run: its summary, then each case judged as an inferred release."""
    summary = render(results, failures, started, "").split("\n\n| case |")[0]
    lines = [
        "",
        "### With the release inferred from the report's date",
        "",
        "The failures of `inferred.tsv` judged as the newest vLLM release published on or before the report's date "
        "(`releases.tsv`), or, where the report can only have run a build of `main`, as the first release published "
        "after it; and every started launch whose report gives only a date judged as the newest release before it (a "
        "harsher test of the false positives).",
        "",
        summary,
        "",
        "| case | judged as | expected | reported | why every release up to the date (or main build) fails alike |",
        "| --- | --- | --- | --- | --- |",
    ]
    for case, codes in [*failures.items(), *started.items()]:
        if case.id in judged_as:
            why = inferences[case.id].why if case.id in inferences else "(a started launch)"
            lines.append(
                f"| {case.id} | {judged_as[case.id]} | {case.expected or 'started'} | "
                f"{', '.join(sorted(codes)) or '-'} | {why} |"
            )
    return "\n".join(lines) + "\n"


def run(failures_tsv: Path, started_tsv: Path, inferred_tsv: Path | None = None, releases_tsv: Path | None = None) -> str:
    with_gpu = gpu_flag_supported()
    note = "" if with_gpu else "This vllm-lint has no --gpu option: the launches were linted without their GPU."
    failure_cases, started_cases = read_cases(failures_tsv), read_cases(started_tsv)
    inferences = read_inferences(inferred_tsv) if inferred_tsv is not None else {}
    releases = read_releases(releases_tsv) if releases_tsv is not None else []
    check_inferences(inferences, failure_cases, releases)
    judged_as = {inference.id: inference.release for inference in inferences.values()}
    for case in started_cases:
        date = report_date(case)
        newest = newest_release(date, releases) if date is not None else None
        if newest is not None:
            judged_as[case.id] = newest
    with tempfile.TemporaryDirectory() as folder:
        failures = {case: lint(write_launch(case, Path(folder)), case, with_gpu) for case in failure_cases}
        started = {case: lint(write_launch(case, Path(folder)), case, with_gpu) for case in started_cases}
        inferred_failures = {
            case: lint(write_launch(case, Path(folder)), case, with_gpu, judged_as[case.id])
            if case.id in judged_as
            else codes
            for case, codes in failures.items()
        }
        inferred_started = {
            case: lint(write_launch(case, Path(folder)), case, with_gpu, judged_as[case.id])
            if case.id in judged_as
            else codes
            for case, codes in started.items()
        }
    models = table_models()
    report = render(summarize(failures, started, models), failures, started, note)
    if not judged_as:
        return report
    return report + render_inferred(
        summarize(inferred_failures, inferred_started, models), inferred_failures, inferred_started, judged_as, inferences
    )


def written_part(docs: Path) -> str:
    """What the file holds from its first second-level heading on: the prose written about the figures, kept."""
    text = docs.read_text(encoding="utf-8") if docs.exists() else ""
    start = text.find("\n## ")
    return "" if start < 0 else text[start:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", type=Path, default=HERE / "failures.tsv")
    parser.add_argument("--started", type=Path, default=HERE / "started.tsv")
    parser.add_argument("--inferred", type=Path, default=HERE / "inferred.tsv")
    parser.add_argument("--releases", type=Path, default=HERE / "releases.tsv")
    parser.add_argument("--docs", type=Path, help="also write the results to this Markdown file")
    args = parser.parse_args(argv)
    report = run(args.failures, args.started, args.inferred, args.releases)
    print(report, end="")
    if args.docs is not None:
        args.docs.write_text(
            f"# Start-up failures: what vllm-lint reports ({DATE})\n\n"
            f"`PYTHONPATH=$PWD python benchmarks/startup_failures/run.py` on vllm-lint {commit()}; the cases and "
            "where they come from: `benchmarks/startup_failures/README.md`.\n\n" + report + written_part(args.docs),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
