"""Jupyter notebooks: code cells as Python, ``!`` lines and ``%%bash`` cells as shell, findings by cell, fixes
that rewrite only the cells they fix.

The fixtures in tests/fixtures/notebooks were written with nbformat (its own layout: indent 1, sorted keys,
a final newline), each standing for a kind of notebook found in public repositories: a Colab quick-start
that starts a server and queries it, a Kaggle-style offline batch inference notebook, a client-only
notebook, and a benchmark notebook that launches SGLang and llama.cpp.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from lintutil import REPO, lint_file_paths, lint_text, run_cli
from vllm_lint.engine.fixer import fix_file

NOTEBOOKS = REPO / "tests" / "fixtures" / "notebooks"


def located(diagnostics) -> list[tuple[int, int, int, str]]:
    return sorted((d.cell.cell, d.cell.start.line, d.cell.start.column, d.code) for d in diagnostics)


def test_colab_server_notebook():
    found = lint_file_paths([NOTEBOOKS / "colab_serve.ipynb"])
    assert located(found) == [
        # !nohup python -m vllm.entrypoints.openai.api_server --model {model_id} \ (line 2 of cell 3)
        (3, 2, 8, "VLL401"),
        (3, 2, 8, "VLL403"),
        (3, 3, 30, "VLL202"),  # --gpu-memory-utilization 0.98, on the continuation line
        # %%bash cell: vllm serve Qwen/... --dtype halff
        (4, 3, 1, "VLL201"),
        (4, 3, 1, "VLL203"),
        (4, 3, 1, "VLL403"),
        (4, 3, 47, "VLL206"),
    ]


def test_offline_notebook_resolves_names_across_cells():
    # `from vllm import LLM` in cell 2, `LLM(...)` in cell 4; `%pip`, `%%time` and `LLM?` are IPython
    found = lint_file_paths([NOTEBOOKS / "offline_inference.ipynb"])
    assert located(found) == [(4, 1, 7, "VLL203"), (4, 4, 28, "VLL202")]


@pytest.mark.parametrize("name", ["client_only.ipynb", "other_engines.ipynb"])
def test_notebooks_without_a_vllm_launch(name):
    assert lint_file_paths([NOTEBOOKS / name]) == []


def test_text_output_names_the_cell_as_ruff_does():
    out = run_cli("check", "--no-cache", "--output-format", "full", str(NOTEBOOKS / "offline_inference.ipynb"))
    lines = out.stdout.splitlines()
    assert lines[0].endswith("offline_inference.ipynb:cell 4:1:7: VLL203 [warning] vLLM engine launched without an "
                             "explicit max_model_len: it reserves KV cache for the model's whole context window, which "
                             "fails at start-up on smaller GPUs or leaves room for few concurrent requests")
    # the snippet is the cell's line, not the JSON's
    assert lines[1:4] == ["  |", "1 | llm = LLM(", "  |       ^^^^"]


def test_json_and_sarif_carry_the_cell():
    path = str(NOTEBOOKS / "offline_inference.ipynb")
    items = json.loads(run_cli("check", "--no-cache", "--output-format", "json", path).stdout)
    assert [(i["cell"], i["location"], i["noqa_row"], i["code"]) for i in items] == [
        (4, {"row": 1, "column": 7}, 1, "VLL203"),
        (4, {"row": 4, "column": 28}, 4, "VLL202"),
    ]
    log = json.loads(run_cli("check", "--no-cache", "--output-format", "sarif", path).stdout)
    results = log["runs"][0]["results"]
    # the region is where the line sits in the .ipynb file; the cell travels as properties
    text = (NOTEBOOKS / "offline_inference.ipynb").read_text(encoding="utf-8").split("\n")
    region = results[1]["locations"][0]["physicalLocation"]["region"]
    assert text[region["startLine"] - 1][region["startColumn"] - 1 :].startswith('0.97,\\n"')
    assert results[1]["properties"] == {"cell": 4, "cellRegion": {"startLine": 4, "startColumn": 28, "endLine": 4, "endColumn": 32}}


def _cells_and_rest(path: Path):
    document = json.loads(path.read_text(encoding="utf-8"))
    sources = [cell.pop("source") for cell in document["cells"]]
    return sources, document


def test_fix_rewrites_only_the_cells_it_fixes(tmp_path):
    target = tmp_path / "colab_serve.ipynb"
    shutil.copy(NOTEBOOKS / "colab_serve.ipynb", target)
    before = target.read_text(encoding="utf-8")
    out = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(target))
    assert "Fixed 4 findings." in out.stdout, out.stdout + out.stderr
    after = target.read_text(encoding="utf-8")
    nbformat.validate(nbformat.reads(after, as_version=4))
    old_sources, old_rest = _cells_and_rest(NOTEBOOKS / "colab_serve.ipynb")
    new_sources, new_rest = _cells_and_rest(target)
    assert new_rest == old_rest  # outputs, metadata, execution counts
    changed = [n for n, (a, b) in enumerate(zip(old_sources, new_sources), 1) if a != b]
    assert changed == [3, 4]
    assert "".join(new_sources[2]) == (
        'model_id = "meta-llama/Llama-3.1-8B-Instruct"\n'
        "!nohup vllm serve {model_id} \\\n"
        "    --gpu-memory-utilization 0.90 --max-model-len 4096 > vllm.log 2>&1 &"
    )
    assert "".join(new_sources[3]).endswith("--dtype halff --port 8001 --gpu-memory-utilization 0.90 --max-model-len 8192 &")
    # every line of the file outside the two sources is byte for byte what it was
    old_lines, new_lines = before.split("\n"), after.split("\n")
    assert len(old_lines) == len(new_lines)
    assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b] == [
        i for i, line in enumerate(old_lines) if "api_server" in line or "0.98" in line or "halff" in line
    ]
    # a second run finds nothing more to fix
    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(target))
    assert "Fixed" not in again.stdout and target.read_text(encoding="utf-8") == after


# A notebook written by another tool: indent 2, keys in their own order, a source held as one string,
# non-ASCII characters escaped, no final newline. The fix keeps each of those.
_OTHER_LAYOUT = (
    '{\n  "nbformat": 4,\n  "nbformat_minor": 2,\n  "metadata": {"kernelspec": {"name": "python3", "language": "python", '
    '"display_name": "Python 3"}},\n  "cells": [\n    {\n      "cell_type": "code",\n      "source": "# mod\\u00e8le\\n'
    'from vllm import LLM\\nllm = LLM(model=\\"m\\", max_model_len=4096, gpu_memory_utilization=0.99)\\n",\n'
    '      "metadata": {},\n      "outputs": [],\n      "execution_count": null\n    }\n  ]\n}'
)


def test_fix_keeps_another_tools_layout(tmp_path):
    target = tmp_path / "layout.ipynb"
    target.write_text(_OTHER_LAYOUT, encoding="utf-8")
    [finding] = lint_file_paths([target])
    assert (finding.code, finding.cell.start.line, finding.cell.start.column, finding.start.line) == ("VLL202", 3, 65, 8)
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(target))
    assert target.read_text(encoding="utf-8") == _OTHER_LAYOUT.replace("0.99", "0.90")
    nbformat.validate(nbformat.reads(target.read_text(encoding="utf-8"), as_version=4))


def test_noqa_in_a_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.5)  # noqa: VLL203"),
        nbformat.v4.new_code_cell("!vllm serve m --max-model-len 4096 --gpu-memory-utilization 0.5  # noqa: VLL403\n"
                                  "!vllm serve m --max-model-len 4096 --gpu-memory-utilization 0.5"),
    ]
    found = lint_text(tmp_path, "nb.ipynb", nbformat.writes(nb))
    assert located(found) == [(2, 2, 2, "VLL403")]


def test_a_cell_that_does_not_parse_stops_only_itself(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.99, max_model_len=4096)"),
        nbformat.v4.new_code_cell("def broken(:\n    pass"),
    ]
    found = lint_text(tmp_path, "nb.ipynb", nbformat.writes(nb))
    assert [(d.cell.cell, d.code) for d in found] == [(1, "VLL202"), (2, "VLL000")]


def test_a_cell_indented_as_a_whole_is_run_as_ipython_runs_it(tmp_path):
    # IPython removes the first line's indentation from each line that starts with it (leading_indent)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(" !pip install vllm\n from vllm import LLM\n llm = LLM(model='m', swap_space=4)"),
        nbformat.v4.new_code_cell("\n\t!vllm serve m --swap-space 4\n\tx = 1"),
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    assert located(lint_file_paths([path], ("VLL000", "VLL206"))) == [(1, 3, 23, "VLL206"), (2, 2, 16, "VLL206")]
    outcome = fix_file(path, select=("VLL201",))
    assert json.loads(outcome.fixed)["cells"][0]["source"][2] == " llm = LLM(model='m', swap_space=4, gpu_memory_utilization=0.90)"


@pytest.mark.parametrize(
    "text, message",
    [
        ('{\n "cells": [\n<<<<<<< HEAD\n', "invalid notebook: not valid JSON (Expecting value)"),
        ('{"worksheets": [{"cells": []}], "nbformat": 3}', "notebook in nbformat 3 (it has \"worksheets\"), which is not "
         "read: convert it with `jupyter nbconvert --to notebook --inplace`"),
        ('{"metadata": {}}', 'invalid notebook: the JSON has no "cells" list (is it a Jupyter notebook?)'),
        ('{"cells": [{"source": "x"}]}', "invalid notebook: cell 1 has no cell_type"),
        ('{"cells": [{"cell_type": "code", "source": [1, 2]}]}', "invalid notebook: the source of cell 1 is not text"),
    ],
)
def test_invalid_notebook_is_vll000(tmp_path, text, message):
    path = tmp_path / "bad.ipynb"
    path.write_text(text, encoding="utf-8")
    out = run_cli("check", "--no-cache", "--output-format", "full", str(path))  # the whole message
    assert "All checks passed!" not in out.stdout
    [line] = [line for line in out.stdout.splitlines() if "VLL000" in line]
    assert line.split(" [error] ", 1)[1] == message


def test_notebooks_are_discovered_in_a_folder(tmp_path):
    shutil.copy(NOTEBOOKS / "offline_inference.ipynb", tmp_path / "nb.ipynb")
    out = run_cli("check", "--no-cache", "--output-format", "concise", str(tmp_path))
    assert out.stdout.count("nb.ipynb:cell 4:") == 2


def test_writefile_cell_is_linted_as_the_file_it_writes(tmp_path):
    # notebooks that write a launch script or a compose file and then run it
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%%writefile serve.sh\nvllm serve m --max-model-len 4096 --gpu-memory-utilization 0.99 --api-key k"),
        nbformat.v4.new_code_cell("%%writefile notes.txt\nvllm serve m --gpu-memory-utilization 0.99"),
        nbformat.v4.new_code_cell("%%html\n<b>vllm serve m --gpu-memory-utilization 0.99</b>"),
    ]
    found = lint_text(tmp_path, "nb.ipynb", nbformat.writes(nb))
    assert located(found) == [(1, 2, 60, "VLL202")]


def test_env_magic_and_os_environ_reach_shell_escapes(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import os\nos.environ['VLLM_API_KEY'] = open('key').read()"),
        nbformat.v4.new_code_cell("%env MAX_LEN=4096\n!vllm serve m --max-model-len $MAX_LEN --gpu-memory-utilization 0.8"),
        nbformat.v4.new_code_cell("!vllm serve m --max-model-len {max_len} --dtype {dtype} --gpu-memory-utilization 0.8"),
    ]
    assert lint_text(tmp_path, "nb.ipynb", nbformat.writes(nb)) == []


def test_nothing_heavy_is_imported_for_notebooks_with_nothing_to_report():
    code = (
        "import sys\nfrom vllm_lint.cli.entry import main\n"
        f"try:\n    main(['check', '--no-cache', {str(NOTEBOOKS / 'client_only.ipynb')!r}, {str(NOTEBOOKS / 'other_engines.ipynb')!r}])\n"
        "except SystemExit:\n    pass\n"
        "print([m for m in ('libcst', 'yaml', 'nbformat', 'jsonschema') if m in sys.modules])\n"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.stdout.splitlines()[-1] == "[]", out.stderr
