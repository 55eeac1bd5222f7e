"""Files pre-commit tags dockerfile or shell are linted as such, whatever their name."""

from __future__ import annotations

import json

import pytest

from lintutil import run_cli

LAUNCH = "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.99 --max-model-len 8192\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("Containerfile", f"FROM vllm/vllm-openai:v0.32.0\nCMD {LAUNCH}"),
        ("Containerfile.gpu", f"FROM vllm/vllm-openai:v0.32.0\nCMD {LAUNCH}"),
        ("serve.zsh", LAUNCH),
        ("serve.ksh", LAUNCH),
    ],
)
def test_named_file_is_linted_by_its_surface(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = run_cli("check", "--no-cache", "--output-format", "json", "--select", "VLL202,VLL000", str(path))
    codes = [item["code"] for item in json.loads(result.stdout)]
    assert codes == ["VLL202"], result.stdout  # not a VLL000 from reading it as Python


def test_subprocess_value_fix_is_offered_as_unsafe(tmp_path):
    path = tmp_path / "launch.py"
    path.write_text(
        'import subprocess\n\nsubprocess.run(["vllm", "serve", "m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"])\n',
        encoding="utf-8",
    )
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "VLL202", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"--gpu-memory-utilization", "0.90"' in path.read_text(encoding="utf-8")
