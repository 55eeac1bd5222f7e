"""Check that the byte pre-filter never hides a finding: lint a tree with and without it.

    python benchmarks/prefilter_recall.py bench-data/vllm-src [more paths...]

Every file is linted twice in this process: once as vllm-lint does (pre-filter
first), once with every surface forced to parse. Any finding that only the
second run reports is a pre-filter bug, and so is a fact for the project rules
(a vLLM server a file starts, a client request it sends) that only the second
run reports; the script lists them and exits 1. It also prints how many files
each run parsed and how long each took.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from vllm_lint.cli.check import resolve_settings, CheckRequest
from vllm_lint.config import enabled_codes
from vllm_lint.rulebook import all_codes
from vllm_lint.engine.discovery import discover
from vllm_lint.engine.runner import RunOptions, lint_file
from vllm_lint.surfaces import all_surfaces


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or [Path(".")]
    codes = all_codes()
    request = CheckRequest(paths=paths, isolated=True, respect_gitignore=False)
    settings = resolve_settings(request, codes)
    options = RunOptions(settings=settings, enabled=enabled_codes(settings, codes, (), (), ()), codes=codes)
    files = list(discover(paths, settings, all_surfaces()))
    forced = {s.name: dataclasses.replace(s, may_match=lambda job: True) for s in all_surfaces()}

    def run(force: bool) -> tuple[dict[str, set[tuple]], int, float]:
        found: dict[str, set[tuple]] = {}  # findings, and the project facts as ("fact", ...) entries
        parsed = 0
        start = time.perf_counter()
        for path, surface in files:
            if surface is not None and force:
                surface = forced[surface.name]
            try:
                result = lint_file(path, surface, options)
            except Exception as exc:  # noqa: BLE001 - report and go on, as the CLI does
                print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            parsed += result.parsed
            found[str(path)] = {(d.code, d.start.line, d.start.column) for d in result.diagnostics}
            if result.facts:
                found[str(path)] |= {("fact", s.line, 0) for s in result.facts.servers}
                found[str(path)] |= {("fact", r.start.line, r.start.column) for r in result.facts.requests}
        return found, parsed, time.perf_counter() - start

    filtered, filtered_parsed, filtered_seconds = run(force=False)
    everything, all_parsed, all_seconds = run(force=True)
    missed = [
        (path, finding)
        for path, findings in everything.items()
        for finding in sorted(findings - filtered.get(path, set()))
        if finding[0] != "VLL000"  # syntax errors in files no rule could match are not reported, by design
    ]
    total = sum(1 for f in everything.values() for entry in f if entry[0] != "fact")
    print(f"files: {len(files)}")
    print(f"with pre-filter:    parsed {filtered_parsed:5d} files in {filtered_seconds:7.2f} s")
    print(f"without pre-filter: parsed {all_parsed:5d} files in {all_seconds:7.2f} s, {total} findings")
    print(f"findings (and project facts) the pre-filter hid: {len(missed)}")
    for path, (code, line, column) in missed:
        print(f"  {path}:{line}:{column}: {code}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
