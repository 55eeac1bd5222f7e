"""How long a lint run spends loading vLLM's API database on the warm path (the packed form in the user cache).

Usage: python benchmarks/vllm_api_load.py [--repeat 15]
       VLLM_LINT_TREE=/path/to/other/checkout python benchmarks/vllm_api_load.py   # the same on another build

Each repeat drops what the process holds (the loaded stores, the database, the per-target views) and loads
the newest release's view again, with the module list, one module's names and the serve flags read, as a
file importing from vLLM makes the rules do; prints the best and the median in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The tree to measure: this checkout, or another one named by VLLM_LINT_TREE (to compare two builds).
sys.path.insert(0, os.environ.get("VLLM_LINT_TREE") or str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="vllm-api-load-"))
    from vllm_lint import usercache, vllm_api
    from vllm_lint.vllm_api import load_api

    loaded = getattr(vllm_api, "load_database", None)  # absent before the multi-release database
    load_api()  # the first run writes the packed store
    times = []
    for _ in range(args.repeat):
        usercache._stores.clear()
        if loaded is not None:
            loaded.cache_clear()
        load_api.cache_clear()
        start = time.perf_counter()
        api = load_api()
        api.modules, api.module_names("vllm.engine.arg_utils"), api.serve_flags  # noqa: B018 - what the rules read
        times.append((time.perf_counter() - start) * 1000)
    print(f"warm load: best {min(times):.2f} ms, median {statistics.median(times):.2f} ms over {args.repeat} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
