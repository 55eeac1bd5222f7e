"""What a one-file run with findings costs that vllm-lint cannot take away, next to what the run costs.

Usage:
    python benchmarks/one_file_floor.py [--rounds 15] [FILE]

Each row is a whole process, timed as run_lint_benchmark.py times them (a wheel of this tree in a temporary
virtual environment, bytecode kept, a user cache of the run's own filled by an untimed round), interleaved, and
reported as medians:

- the interpreter's start (``python -c pass``);
- LibCST imported as a parser process imports it (through ``vllm_lint.python``, with the dataclass code cache, the
  garbage collector off, no teardown at exit);
- the same, then FILE parsed: the least that any LibCST checker of FILE costs;
- ``vllm-lint check --no-cache --isolated FILE``.

The difference between the last two rows is vllm-lint's own share: its modules, the pre-filter, the model, the
rules, the fix plans, the report. FILE defaults to the seed server the benchmark uses (tests/fixtures/seeds/code/
004_server.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_lint_benchmark import BAD_FILE, ENV, install_working_tree  # noqa: E402

# As a parser process of a one-file run: the collector off, LibCST through vllm_lint.python with the dataclass code
# cache, and no teardown at exit (cli/entry.py, engine/processes.py).
_LIBCST = (
    "import gc, os\n"
    "gc.disable()\n"
    "import vllm_lint.python\n"
    "from vllm_lint.codecache import compiled_dataclasses\n"
    "with compiled_dataclasses('surface-python'):\n"
    "    import libcst\n"
)
_EXIT = "os._exit(0)\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=BAD_FILE)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vllm-lint-floor-"))
    script = install_working_tree(work)
    python = str(script.parent / "python")
    target = str(args.file.resolve())
    env = {**ENV, "XDG_CACHE_HOME": str(work / "user-cache")}
    rows = {
        "interpreter start": [python, "-c", "pass"],
        "LibCST imported (as a parser process does)": [python, "-c", _LIBCST + _EXIT],
        "LibCST imported, the file parsed": [python, "-c", _LIBCST + f"libcst.parse_module(open({target!r}, 'rb').read())\n" + _EXIT],
        "vllm-lint check --no-cache --isolated": [str(script), "check", "--no-cache", "--isolated", "--exit-zero", target],
    }
    times: dict[str, list[float]] = {label: [] for label in rows}
    for round_number in range(args.rounds + 1):
        for label, argv in rows.items():
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=work, check=True)
            if round_number:  # the first round fills the caches
                times[label].append(time.perf_counter() - start)
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values) * 1000:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
