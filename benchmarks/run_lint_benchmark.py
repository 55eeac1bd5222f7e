"""Time vllm-lint against ruff (and optionally Fixit) on the same trees, in the same run.

Usage:
    python benchmarks/fetch_vllm_source.py --copies 10     # once: bench-data/vllm-src{,-x10}
    python benchmarks/run_lint_benchmark.py [--fixit] [--repeat 3]

Prints one table: wall time (best of --repeat) and peak RSS per tool and tree,
and the vllm-lint/ruff ratio. Trees: the vllm package source (2,642 files), the
Python standard library (a sparse tree), and 10x the vllm source.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data"


def _tool(name: str) -> list[str] | None:
    found = shutil.which(name) or (str(Path(sys.executable).parent / name) if (Path(sys.executable).parent / name).exists() else None)
    # Absolute: the tools run in a temporary folder, where a relative PATH entry would point nowhere.
    return [os.path.abspath(found)] if found else None


# Bytecode is cached as in any normal install: with PYTHONDONTWRITEBYTECODE set (some sandboxes set it) an
# editable install recompiles vllm-lint's modules on every run, ~50 ms that no user pays.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB of the largest process in the run (the command or a worker), exit code."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    # wait4's usage covers the child and every descendant it waited for (vllm-lint's workers).
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def best_of(command: list[str], cwd: Path, repeat: int, warm_up: bool = True) -> tuple[float, float]:
    if warm_up:
        timed(command, cwd)  # untimed: bytecode written, files in the page cache, for every tool alike
    runs = [timed(command, cwd) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fixit", action="store_true", help="also time Fixit (slow: minutes on the vllm tree)")
    args = parser.parse_args()

    # The console script of this Python's install, as pre-commit and CI run it (``-m`` would add runpy's
    # start-up); ``-m`` where there is none (a checkout without an install).
    script = Path(sys.executable).parent / "vllm-lint"
    vllm_lint = [str(script)] if script.is_file() else [sys.executable, "-m", "vllm_lint"]
    ruff = _tool("ruff")
    fixit = _tool("fixit") if args.fixit else None
    trees = {
        "vllm source (2,642 files)": DATA / "vllm-src",
        "stdlib": Path(sysconfig.get_paths()["stdlib"]),
        "vllm source x10": DATA / "vllm-src-x10",
    }
    missing = [str(path) for path in trees.values() if not path.is_dir()]
    if missing:
        print(f"missing trees: {', '.join(missing)}; run benchmarks/fetch_vllm_source.py --copies 10 first", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="vllm-lint-bench-"))
    rows = []
    for label, tree in trees.items():
        base = [*vllm_lint, "check", "--no-respect-gitignore", "--isolated", "--exit-zero", "--output-format", "concise"]
        seconds, rss = best_of([*base, "--no-cache", str(tree)], work, args.repeat)
        rows.append((label, "vllm-lint check --no-cache (cold)", seconds, rss))
        cache = ["--cache-dir", str(work / "cache")]
        timed([*base, *cache, str(tree)], work)  # fill the cache
        warm_seconds, warm_rss = best_of([*base, *cache, str(tree)], work, args.repeat)
        rows.append((label, "vllm-lint check (warm cache)", warm_seconds, warm_rss))
        if ruff:
            ruff_cmd = [*ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--isolated", "--no-respect-gitignore", "-q", str(tree)]
            ruff_seconds, ruff_rss = best_of(ruff_cmd, work, args.repeat)
            rows.append((label, "ruff check --select ALL --no-cache", ruff_seconds, ruff_rss))
            rows.append((label, "ratio cold vllm-lint / ruff", seconds / ruff_seconds, 0.0))
        if fixit and label.startswith("vllm source ("):
            fixit_seconds, fixit_rss = best_of([*fixit, "lint", str(tree)], work, 1, warm_up=False)
            rows.append((label, "fixit lint (default rules)", fixit_seconds, fixit_rss))
    # One file as pre-commit runs it: a clean file and one with findings.
    clean = work / "clean.py"
    clean.write_text("import os\n\nprint(os.getcwd())\n")
    findings = ROOT.parent / "shared" / "seeds" / "code" / "004_server.py"
    for label, path in (("one clean file", clean), ("one file with findings", findings)):
        if path.exists():
            seconds, rss = best_of([*vllm_lint, "check", "--no-cache", "--exit-zero", "--isolated", str(path)], work, max(args.repeat, 5))
            rows.append((label, "vllm-lint check --no-cache", seconds, rss))
            if ruff:
                ruff_seconds, ruff_rss = best_of([*ruff, "check", "--no-cache", "--exit-zero", "--isolated", str(path)], work, max(args.repeat, 5))
                rows.append((label, "ruff check", ruff_seconds, ruff_rss))
    print(f"{'tree':<28} {'tool':<38} {'seconds':>9} {'peak MiB':>9}")
    for label, tool, seconds, rss in rows:
        shown_rss = f"{rss:9.0f}" if rss else " " * 9
        print(f"{label:<28} {tool:<38} {seconds:9.3f} {shown_rss}")
    print(f"(cores: {os.cpu_count()}, python {sys.version.split()[0]}, best of {args.repeat}; peak MiB: the largest single process)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
