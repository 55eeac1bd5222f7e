"""Check that the byte pre-filter never hides a finding: lint a tree with and without it.

    python benchmarks/prefilter_recall.py bench-data/vllm-src [more paths...] [--no-per-code]

Every file is linted with every surface forced to parse (Python blocks in Markdown too), and as vllm-lint does
(pre-filter first): a finding that only the forced run reports is a pre-filter bug. Then each file with
findings is linted again with each of its findings' rules alone enabled (``--select CODE``), where only that
rule's own conditions let the file through. A fact for the project rules (a vLLM server a file starts, a
client request it sends) that only the forced run reports is hidden too (as a "fact" entry). The script lists what was hidden and exits 1 if anything was; it
also prints how many files each run parsed and how long each took. tests/test_prefilter_recall.py does the
same on the rules' examples, the seeds and examples/.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import vllm_lint.python.prefilter
from vllm_lint.cli.check import CheckRequest, resolve_settings
from vllm_lint.config import enabled_codes
from vllm_lint.engine.discovery import discover
from vllm_lint.engine.runner import RunOptions, lint_file
from vllm_lint.rulebook import PARSE_ERROR_CODE, all_codes
from vllm_lint.surfaces import all_surfaces

Finding = tuple[str, int, int]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")])
    parser.add_argument("--no-per-code", dest="per_code", action="store_false",
                        help="skip the runs with one rule enabled at a time")
    args = parser.parse_args(argv)
    codes = all_codes()
    request = CheckRequest(paths=args.paths, isolated=True, respect_gitignore=False)
    settings = resolve_settings(request, codes)

    def options(select: tuple[str, ...] = ()) -> RunOptions:
        return RunOptions(settings=settings, enabled=enabled_codes(settings, codes, select, (), ()), codes=codes)

    files = list(discover(args.paths, settings, all_surfaces()))
    forced = {s.name: dataclasses.replace(s, may_match=lambda job: True) for s in all_surfaces()}

    def run(force: bool, run_options: RunOptions, paths=files) -> tuple[dict[str, set[Finding]], int, float]:
        found: dict[str, set[Finding]] = {}
        parsed = 0
        bytes_may_match = vllm_lint.python.prefilter.may_match
        if force:
            vllm_lint.python.prefilter.may_match = lambda *args: True  # Python blocks in Markdown read it
        start = time.perf_counter()
        try:
            for path, surface in paths:
                if surface is not None and force:
                    surface = forced[surface.name]
                try:
                    result = lint_file(path, surface, run_options)
                except Exception as exc:  # noqa: BLE001 - report and go on, as the CLI does
                    print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
                    continue
                parsed += result.parsed
                # syntax errors in files no rule could match are not reported, by design
                found[str(path)] = {(d.code, d.start.line, d.start.column) for d in result.diagnostics if d.code != PARSE_ERROR_CODE}
                if result.facts:
                    found[str(path)] |= {("fact", s.line, 0) for s in result.facts.servers}
                    found[str(path)] |= {("fact", r.start.line, r.start.column) for r in result.facts.requests}
        finally:
            vllm_lint.python.prefilter.may_match = bytes_may_match
        return found, parsed, time.perf_counter() - start

    filtered, filtered_parsed, filtered_seconds = run(force=False, run_options=options())
    everything, all_parsed, all_seconds = run(force=True, run_options=options())
    missed = [
        (path, finding, "all rules")
        for path, findings in everything.items()
        for finding in sorted(findings - filtered.get(path, set()))
    ]
    if args.per_code:
        with_findings = [(path, surface) for path, surface in files if everything.get(str(path))]
        for code in sorted({finding[0] for findings in everything.values() for finding in findings} - {"fact"}):
            having = [(path, surface) for path, surface in with_findings if any(f[0] == code for f in everything[str(path)])]
            alone, _, _ = run(force=False, run_options=options((code,)), paths=having)
            for path, _ in having:
                wanted = {f for f in everything[str(path)] if f[0] == code}
                missed += [(str(path), finding, f"{code} alone") for finding in sorted(wanted - alone[str(path)])]
    total = sum(1 for f in everything.values() for entry in f if entry[0] != "fact")
    print(f"files: {len(files)}")
    print(f"with pre-filter:    parsed {filtered_parsed:5d} files in {filtered_seconds:7.2f} s")
    print(f"without pre-filter: parsed {all_parsed:5d} files in {all_seconds:7.2f} s, {total} findings")
    print(f"findings the pre-filter hid: {len(missed)}" + (" (every rule, and each rule alone)" if args.per_code else ""))
    for path, (code, line, column), how in missed:
        print(f"  {path}:{line}:{column}: {code} ({how})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
