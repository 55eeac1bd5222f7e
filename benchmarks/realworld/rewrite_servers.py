"""How many real servers the AsyncLLMEngine rewrite rewrites, and why it refuses the rest.

``python benchmarks/realworld/rewrite_servers.py DIR [ROUND]`` reads ``rewrite_servers.tsv`` (repository, commit,
path, file: where each server came from and the name of its copy in DIR, the copies staying outside this
repository; round: the round of shapes it was gathered for, 2 or 3, each set gathered fresh; ROUND counts one)
and, for each server with a VLL101/VLL102/VLL103 finding, runs ``vllm-lint check --fix --unsafe-fixes`` on a
copy. A server counts as rewritten when the fixed file compiles, lints without those codes (an info-level note
aside), and a second ``--fix`` changes nothing; as offloaded when that fix is the fallback where the engine rewrite
is refused (python/rewrite/offload.py: each blocking call in a worker thread, or, in a `def` handler the framework
runs in its worker threads, under a lock, leaving an info-level note that it does not batch); otherwise the refusal's reason (the finding's "no
automatic fix: ..." text) is what is tallied. Prints one line per server and a summary table in Markdown.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

CODES = ("VLL101", "VLL102", "VLL103")
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _check(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vllm_lint", "check", "--isolated", "--exit-zero", "--output-format", "json",
         "--select", ",".join(CODES), *extra, str(path)],
        capture_output=True, text=True, cwd=REPO, check=False,
    )


def _findings(path: Path) -> list[dict]:
    import json

    result = _check(path)
    try:
        return json.loads(result.stdout or "[]")
    except ValueError:
        raise SystemExit(f"{path}: {result.stdout[:200]} {result.stderr[-500:]}") from None


def _reason(message: str) -> str:
    found = re.search(r"no automatic fix: (.*)$", message) or re.search(r"the engine rewrite is refused \((.*)\); the fix", message)
    return found.group(1) if found else message


def outcome(path: Path) -> tuple[str, str]:
    """("rewritten" | "offloaded" | "refused" | "no finding" | "broken", detail)."""
    found = _findings(path)
    if not found:
        return "no finding", ""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copy(path, copy)
        _check(copy, "--fix", "--unsafe-fixes")
        fixed = copy.read_text()
        if fixed == path.read_text():
            return "refused", _reason(found[0]["message"])
        try:
            compile(fixed, str(copy), "exec")
        except SyntaxError as exc:
            return "broken", f"does not compile: {exc}"
        left = [f for f in _findings(copy) if f["severity"] != "info"]
        if left:
            return "broken", f"re-lints with {left[0]['code']}: {left[0]['message'][:120]}"
        _check(copy, "--fix", "--unsafe-fixes")
        if copy.read_text() != fixed:
            return "broken", "a second --fix changes it"
        codes = ",".join(sorted({f["code"] for f in found}))
        if "the engine rewrite is refused" in found[0]["message"]:
            return "offloaded", f"{codes}: {_reason(found[0]['message'])}"
        return "rewritten", codes


def main(argv: list[str]) -> None:
    folder = Path(argv[0])
    rows = list(csv.DictReader((HERE / "rewrite_servers.tsv").open(), delimiter="\t"))
    if len(argv) > 1:
        rows = [row for row in rows if row["round"] == argv[1]]
    tally: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for row in rows:
        kind, detail = outcome(folder / row["file"])
        tally[kind] += 1
        if kind not in ("rewritten", "offloaded"):
            reasons[f"{kind}: {detail}"] += 1
        print(f"{row['repository']}/{row['path']}: {kind} {detail}", flush=True)
    served = tally["rewritten"] + tally["offloaded"] + tally["refused"] + tally["broken"]
    fixed = tally["rewritten"] + tally["offloaded"]
    print(f"\n{tally['rewritten']} of {served} servers with a VLL101/102/103 finding rewritten onto the engine "
          f"({100 * tally['rewritten'] / max(served, 1):.0f}%), {fixed} fixed with the fallback too "
          f"({100 * fixed / max(served, 1):.0f}%); {tally['no finding']} without a finding\n")
    print("| outcome | servers |\n|---|---|")
    print(f"| rewritten | {tally['rewritten']} |")
    print(f"| offloaded (fallback) | {tally['offloaded']} |")
    for reason, count in reasons.most_common():
        print(f"| {reason} | {count} |")


if __name__ == "__main__":
    main(sys.argv[1:])
