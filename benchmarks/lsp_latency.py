"""Server time of ``vllm-lint server`` per change: from a document's new text to the diagnostics it publishes
(the lint through ``lsp.linter`` and the conversion to LSP values, as the server's worker does them), without
the debounce wait and the JSON-RPC transport.

    python benchmarks/lsp_latency.py [--rounds 40] [FILE ...]

Each round edits the document (a comment line whose text changes), so nothing is answered from memory of
the same text; the first lint of each file (imports, rule files) is left out, as the server does it at start.
A change is linted as the server lints it: findings and whether each has a fix, without the edits of a fix that
costs a computation of its own (the server rewrite's), which a code action asks for (``Linter.with_edits``);
``--with-edits`` times that request too, once per change, as a client asking for code actions after each one.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from vllm_lint.lsp.convert import Lines, lsp_diagnostic
from vllm_lint.lsp.linter import Linter
from vllm_lint.lsp.server import rule_url
from vllm_lint.rulebook import load_rules

REPO = Path(__file__).resolve().parents[1]
SEED_SERVER = REPO / "tests" / "fixtures" / "seeds" / "code" / "004_server.py"


def cases() -> dict[str, tuple[str, str]]:
    rules = load_rules()
    return {
        "clean, no vLLM (cli/check.py, 412 lines)": ("check.py", (REPO / "vllm_lint/cli/check.py").read_text()),
        "clean vLLM server (VLL101's fixed example)": ("server.py", rules["VLL101"].bad_examples[0].fixed),
        "findings: blocking server (VLL101's example)": ("server.py", rules["VLL101"].bad_examples[0].clean_code),
        "findings: Dockerfile (VLL201's example)": ("Dockerfile", next(
            e for e in rules["VLL201"].bad_examples if e.lang == "dockerfile").clean_code),
        "findings: 101-line FastAPI server (seed 004_server.py)": ("server.py", SEED_SERVER.read_text(encoding="utf-8")),
    }


def measure(linter: Linter, path: Path, text: str, rounds: int, with_edits: bool = False) -> tuple[list[float], list[float], int]:
    """Wall and CPU seconds per change (CPU: this thread's, which a machine shared with other work inflates
    much less than the wall clock), and the findings published."""
    times, cpu, found = [], [], 0
    linter.lint(path, text)  # the first lint: imports and caches the server warms up at start
    for round_ in range(rounds):
        edited = f"{text}# edit {round_}\n"  # a comment in every language measured here
        started, started_cpu = time.perf_counter(), time.thread_time()
        linted = linter.lint(path, edited)
        lines = Lines(edited)
        published = [lsp_diagnostic(d, lines, path, rule_url) for d in linted.diagnostics]
        if with_edits:
            linter.with_edits(linted)
        times.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
        found = len(published)
    return times, cpu, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--with-edits", action="store_true", help="also compute the fixes' edits after each change")
    parser.add_argument("files", nargs="*", type=Path, help="more files to measure (Python, shell, YAML, Dockerfiles)")
    args = parser.parse_args()
    linter = Linter()
    print("| file | findings | wall median ms | wall p90 ms | CPU median ms | CPU p90 ms |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        measured = {**cases(), **{str(path): (path.name, path.read_text(encoding="utf-8")) for path in args.files}}
        for label, (name, text) in measured.items():
            times, cpu, found = measure(linter, Path(folder) / name, text, args.rounds, args.with_edits)
            ms, cpu_ms = sorted(t * 1000 for t in times), sorted(t * 1000 for t in cpu)
            print(f"| {label} | {found} | {statistics.median(ms):.1f} | {ms[int(len(ms) * 0.9) - 1]:.1f} | "
                  f"{statistics.median(cpu_ms):.1f} | {cpu_ms[int(len(cpu_ms) * 0.9) - 1]:.1f} |")


if __name__ == "__main__":
    main()
