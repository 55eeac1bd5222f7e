"""Big generated inputs for the benchmark: what a user may point vllm-lint at that is far larger than code
people write by hand. Each should cost in proportion to its size.

    python benchmarks/big_inputs.py FOLDER      # writes the files below into FOLDER

- ``server_4mb.py``: a FastAPI app with 50,000 small functions whose one handler calls a transformers
  pipeline (VLL101 must still be reported);
- ``no_vllm_4mb.py``: the same 50,000 functions without the server: no word any rule looks for, so a byte scan;
- ``generated_50k_lines.py``: a generated module of 50,000 lines (a table of sampling settings per model) that
  imports vLLM, so it is parsed;
- ``notebook_20mb.ipynb``: a 20 MB notebook, cells of code and large outputs, one cell serving with vLLM;
- ``nested_expression.py``: a vLLM script with a deeply nested expression (brackets 2,000 deep), which the
  parser must refuse quickly rather than recurse into.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FUNCTIONS = 50_000


def _helpers() -> str:
    return "".join(
        f"def helper_{i:05d}(value: int) -> int:\n    total = value * 3\n    return total + {i}\n\n\n"
        for i in range(FUNCTIONS)
    )


def server_module() -> str:
    head = (
        "from fastapi import FastAPI\n"
        "from transformers import pipeline\n\n"
        "app = FastAPI()\n"
        'generator = pipeline("text-generation", model="gpt2")\n\n\n'
    )
    handler = (
        '@app.post("/generate")\n'
        "def generate(prompt: str) -> dict:\n"
        "    output = generator(prompt, max_new_tokens=64)\n"
        '    return {"text": output[0]["generated_text"], "check": helper_00001(1)}\n'
    )
    return head + _helpers() + handler


def no_vllm_module() -> str:
    return '"""Generated arithmetic helpers."""\n\n\n' + _helpers()


def generated_module() -> str:
    lines = ["from vllm import SamplingParams\n", "\n", "SETTINGS = {\n"]
    lines += [
        f'    "model-{i:05d}": SamplingParams(temperature=0.{i % 10}, max_tokens={64 + i % 512}),\n'
        for i in range(50_000 - 4)
    ]
    lines.append("}\n")
    return "".join(lines)


def notebook() -> str:
    output = "".join(f"row {i}: " + "x" * 180 + "\n" for i in range(500))  # ~100 kB of printed output per cell
    cells = [
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "id": "serve",
            "source": ["from vllm import LLM\n", "llm = LLM(model='facebook/opt-125m')\n"],
            "outputs": [],
        }
    ]
    for i in range(200):
        cells.append(
            {
                "cell_type": "code",
                "execution_count": i + 2,
                "metadata": {},
                "id": f"c{i}",
                "source": ["for i in range(500):\n", f"    print('row', i, {i})\n"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": output.splitlines(True)}],
            }
        )
    document = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1) + "\n"


def nested_expression() -> str:
    depth = 2_000
    return "from vllm import LLM\n\nllm = LLM(model='m')\nvalue = " + "(" * depth + "1" + ")" * depth + "\n"


FILES = {
    "server_4mb.py": server_module,
    "no_vllm_4mb.py": no_vllm_module,
    "generated_50k_lines.py": generated_module,
    "notebook_20mb.ipynb": notebook,
    "nested_expression.py": nested_expression,
}


def write(folder: Path) -> dict[str, Path]:
    """Each file of FILES written into ``folder``, by name."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, make in FILES.items():
        path = folder / name
        path.write_text(make(), encoding="utf-8")
        written[name] = path
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1])).values():
        print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")
