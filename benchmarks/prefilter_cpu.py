"""CPU seconds of a cold run's work short of parsing, in one process: for comparing two trees' pre-filters.

    PYTHONPATH=TREE python benchmarks/prefilter_cpu.py [FOLDER] [--rounds 3] [--list] [--scans]

Runs the check command's per-file path (``engine.runner.lint_file``: reading, the pre-filter, the noqa rules, the
target) over what ``vllm-lint check --isolated --no-respect-gitignore FOLDER`` discovers, with the parse refused
(each file the pre-filter lets through is counted, not parsed), ``--rounds`` times in one process; prints each
round's CPU seconds (the first pays the per-process caches: the vLLM API snapshot's lookups, the compiled
expressions). Without the worker processes and LibCST it holds what a pre-filter change touches, with less of a
shared machine's noise than whole runs. ``--list``: the files let through. ``--scans``: the substring scans of the
files' bytes (``in``, ``find``, ``count`` on the bytes read, not on the texts derived from them), by word.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Parse(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "bench-data" / "vllm-src")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--scans", action="store_true")
    args = parser.parse_args()

    from vllm_lint.config import Settings, enabled_codes, pin_search_tops
    from vllm_lint.engine import runner
    from vllm_lint.engine.discovery import discover
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    paths = [args.folder]
    settings = Settings(respect_gitignore=False, pin_search_tops=pin_search_tops(paths, None))
    codes = all_codes()
    options = runner.RunOptions(settings, enabled_codes(settings, codes), codes)
    files = list(discover(paths, settings, all_surfaces()))
    scans: collections.Counter[tuple[str, bytes]] = collections.Counter()
    if args.scans:
        _count_scans(runner, scans)

    def refuse() -> None:
        raise _Parse

    passed: list[str] = []
    for round_number in range(args.rounds):
        passed = []
        start = time.process_time()
        for path, surface in files:
            try:
                runner.lint_file(path, surface, options, before_parse=refuse)
            except _Parse:
                passed.append(str(path))
        print(f"round {round_number + 1}: {time.process_time() - start:.3f} s CPU, {len(files)} files, {len(passed)} let through")
    if args.list:
        print("\n".join(passed))
    if args.scans:
        print(f"scans a file: {sum(scans.values()) / args.rounds / max(1, len(files)):.1f}")
        for (kind, word), count in scans.most_common(40):
            print(f"{count / args.rounds:8.0f} {kind} {word!r}")
    return 0


def _count_scans(runner, scans: collections.Counter) -> None:
    """Every file's bytes read as a ``bytes`` subclass that counts its substring scans."""

    class Counted(bytes):
        def __contains__(self, word: object) -> bool:
            scans["in", bytes(word) if isinstance(word, (bytes, bytearray)) else repr(word).encode()] += 1
            return bytes.__contains__(self, word)  # type: ignore[operator]

        def find(self, word, *bounds) -> int:
            scans["find", bytes(word)] += 1
            return bytes.find(self, word, *bounds)

        def count(self, word, *bounds) -> int:
            scans["count", bytes(word)] += 1
            return bytes.count(self, word, *bounds)

    read = runner.lint_bytes

    def lint_bytes(path, shown, data, *rest, **keywords):
        return read(path, shown, Counted(data), *rest, **keywords)

    runner.lint_bytes = lint_bytes


if __name__ == "__main__":
    sys.exit(main())
