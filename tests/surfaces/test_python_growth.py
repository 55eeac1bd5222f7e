"""Command lines built in Python the way serving code builds them: lists that grow (``+=``, ``append``,
``extend``, under an ``if`` too), ``" ".join(cmd)`` run with ``shell=True``, f-strings for ``os.system``,
Modal's ``subprocess.Popen`` inside ``@modal.web_server``.

tests/fixtures/python_launch/modal_app.py stands for Modal's vLLM serving example.
"""

from __future__ import annotations

import pytest

from lintutil import REPO, lint_file_paths, lint_text


def test_modal_web_server():
    got = sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([REPO / "tests/fixtures/python_launch/modal_app.py"]))
    # 0.99 in the list, awqq appended under an if, 0.995 in an f-string; --max-model-len, --host and --api-key
    # arrive by append/extend, so nothing is missing
    assert got == [(18, 37, "VLL202"), (25, 35, "VLL206"), (31, 15, "VLL202")]


_HEAD = "import subprocess\n\ndef start(extra, model):\n    cmd = ['vllm', 'serve', model, '--host', '127.0.0.1', '--gpu-memory-utilization', '0.9']\n"


@pytest.mark.parametrize(
    "growth, codes",
    [
        ("    cmd += ['--max-model-len', '4096']\n", []),
        ("    cmd.append('--max-model-len=4096')\n", []),
        ("    cmd.extend(['--dtype', 'halff', '--max-model-len', '4096'])\n", ["VLL206"]),
        ("    pass\n", ["VLL203"]),  # nothing added: max_model_len is missing
        # changes that cannot be followed: any argument may be there, so nothing is "missing"...
        ("    cmd.extend(extra)\n", []),
        ("    for a in extra:\n        cmd.append(a)\n", []),
        ("    cmd.insert(3, extra)\n", []),
        # ...but what is written is still checked
        ("    cmd.extend(extra)\n    cmd += ['--quantization', 'awqq']\n", ["VLL206"]),
    ],
)
def test_list_growth(tmp_path, growth, codes):
    text = _HEAD + growth + "    subprocess.Popen(cmd)\n"
    assert sorted(d.code for d in lint_text(tmp_path, "launch.py", text)) == codes


def test_join_with_shell_true(tmp_path):
    text = _HEAD + "    cmd += ['--max-model-len', '4096', '--dtype', 'halff']\n    subprocess.run(' '.join(cmd), shell=True)\n"
    assert [(d.start.line, d.code) for d in lint_text(tmp_path, "launch.py", text)] == [(5, "VLL206")]


def test_other_engines_built_in_python_stay_silent(tmp_path):
    # SGLang and llama.cpp servers started from a benchmark harness
    text = (
        "import subprocess\n\ndef start(model):\n"
        "    cmd = ['python3', '-m', 'sglang.launch_server', '--model-path', model, '--mem-fraction-static', '0.98']\n"
        "    cmd += ['--tp', '4']\n    subprocess.Popen(cmd)\n"
        "    llama = ['./llama-server', '-m', 'model.gguf']\n    llama.append('--ctx-size=8192')\n"
        "    subprocess.Popen(' '.join(llama), shell=True)\n"
    )
    assert lint_text(tmp_path, "bench.py", text) == []
