"""Check that the byte pre-filter never hides a finding: lint a tree with and without it.

    python benchmarks/prefilter_recall.py bench-data/vllm-src [more paths...] [--no-per-code]

Every file is linted as vllm-lint does (pre-filter first) and with the pre-filter off (as
``VLLM_LINT_NO_PREFILTER=1 vllm-lint check`` does); then each file with findings once per rule of its findings,
that rule alone enabled (vllm_lint.engine.prefilter_check). Lists what was hidden and exits 1 if anything was;
prints how many files each run parsed and how long each took. tests/test_prefilter_recall.py does the same on
the rules' examples, the seeds and examples/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vllm_lint.engine.prefilter_check import compare


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path(".")])
    parser.add_argument("--no-per-code", dest="per_code", action="store_false",
                        help="skip the runs with one rule enabled at a time")
    args = parser.parse_args(argv)
    result = compare(args.paths, per_code=args.per_code)
    print(f"files: {result.files}")
    print(f"with pre-filter:    parsed {result.parsed_filtered:5d} files in {result.seconds_filtered:7.2f} s")
    print(f"without pre-filter: parsed {result.parsed_forced:5d} files in {result.seconds_forced:7.2f} s, {result.findings} findings")
    print(f"findings the pre-filter hid: {len(result.hidden)}" + (" (every rule, and each rule alone)" if args.per_code else ""))
    for path, (code, line, column), how in result.hidden:
        print(f"  {path}:{line}:{column}: {code} ({how})")
    return 1 if result.hidden else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
