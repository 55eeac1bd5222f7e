"""What the model and GPU facts cost a run (issue 37: nothing without a launch, at most 10 ms with launches).

Each measurement runs in a fresh interpreter, with the user cache warm (the run before is discarded):

- ``no launch``: a run over a Python file that starts no engine, every rule on (preview too, a GPU set):
  which of ``vllm_lint.models`` / ``vllm_lint.gpus`` it imported (none expected), and whether it read the table.
- ``first launch``: the cost a run with launches pays once, beyond what it imports anyway (the other launch
  rule families): importing the capacity rule family (``vllm_lint.launch.rules.capacity``: the GPU table, the
  model facts and vLLM's derivations), then the first lookup of a model (indexing the shipped table's ids and
  parsing its row). Median of ``--runs``.

    python benchmarks/model_facts_cost.py --runs 21
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_NO_LAUNCH = r"""
import json, sys
from vllm_lint.cli.entry import main
try:
    main(["check", "-n", "--isolated", "--exit-zero", "--preview", "--gpu", "L4", sys.argv[1]])
except SystemExit:
    pass
loaded = sorted(name for name in sys.modules if name.startswith(("vllm_lint.models", "vllm_lint.gpus")))
print(json.dumps(loaded), file=sys.stderr)
"""

_FIRST_LAUNCH = r"""
import time
import vllm_lint.registry
from vllm_lint.codecache import compiled_dataclasses
with compiled_dataclasses("rules-launch"):
    # what every run with a launch imports anyway: the other launch rule families and what they import
    import vllm_lint.launch.rules.api, vllm_lint.launch.rules.deployment, vllm_lint.launch.rules.engine
start = time.perf_counter()
with compiled_dataclasses("rules-launch"):
    import vllm_lint.launch.rules.capacity
imported = time.perf_counter()
from vllm_lint.models.lookup import ModelSearch, find_model
assert find_model("meta-llama/Llama-2-7b-hf", ModelSearch()) is not None
looked_up = time.perf_counter()
print(f"{(imported - start) * 1e3} {(looked_up - imported) * 1e3}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "plain.py"
        plain.write_text("import os\n\nprint(os.getcwd())\n")
        done = subprocess.run(
            [sys.executable, "-c", _NO_LAUNCH, str(plain)], capture_output=True, text=True, check=True
        )
        loaded = json.loads(done.stderr.strip().splitlines()[-1])
    print(f"no launch: modules of vllm_lint.models / vllm_lint.gpus imported: {loaded or 'none'}")
    subprocess.run([sys.executable, "-c", _FIRST_LAUNCH], capture_output=True, check=True)  # warm the user cache
    imports, lookups = [], []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", _FIRST_LAUNCH], capture_output=True, text=True, check=True).stdout
        first, second = map(float, out.split())
        imports.append(first)
        lookups.append(second)
    total = [a + b for a, b in zip(imports, lookups)]
    print(
        f"first launch ({args.runs} runs, median): capacity rules' imports {statistics.median(imports):.1f} ms, "
        f"first model lookup {statistics.median(lookups):.1f} ms, together {statistics.median(total):.1f} ms "
        f"(min {min(total):.1f} ms)"
    )


if __name__ == "__main__":
    main()
