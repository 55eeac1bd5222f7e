"""``check --explain-opaque``: every launch a reading saw, and why the ones not read in full were left opaque,
in text (one line per opaque launch, then a summary) and JSON (one object per launch seen)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from lintutil import run_cli

FILES = {
    "serve.sh": """\
        #!/bin/bash
        MODEL=meta-llama/Llama-3.1-8B-Instruct
        vllm serve "$MODEL" --max-model-len 8192 --gpu-memory-utilization 0.9 --enable-prefix-caching
        vllm serve "$MODEL" $EXTRA_ARGS
        exec python3 -m vllm.entrypoints.openai.api_server --model "$MODEL" "${ARGS[@]}"
        vllm serve "$MODEL" --config "$(cat cfg.yaml)"
        """,
    "compose.yaml": """\
        services:
          vllm:
            image: vllm/vllm-openai:v0.10.0
            ipc: host
            command: ["--model", "my-org/private-finetune-7b", "--max-model-len", "8192"]
        """,
    "README.md": """\
        # Serving

        ```bash
        vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ARGS
        ```
        """,
    "app.py": """\
        import subprocess

        from vllm import LLM


        def start(**overrides):
            llm = LLM(model="Qwen/Qwen2.5-7B-Instruct", **overrides)
            subprocess.run(["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", *overrides])
            return llm
        """,
}


def _write(directory: Path) -> None:
    for name, text in FILES.items():
        (directory / name).write_text(textwrap.dedent(text), encoding="utf-8")


def test_text_lists_each_opaque_launch_and_the_counts(tmp_path):
    _write(tmp_path)
    result = run_cli("check", "--no-cache", "--explain-opaque", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "README.md:4:1: markdown launch left opaque: unresolved variable $VLLM_ARGS",
        "app.py:7:11: python launch left opaque: **kwargs",
        "app.py:8:21: python launch left opaque: *args",
        "serve.sh:4:1: shell launch left opaque: unresolved variable $EXTRA_ARGS",
        "serve.sh:5:6: shell launch left opaque: unresolved array $ARGS[@]",
        "serve.sh:6:1: shell launch left opaque: config file (--config)",
        "8 launches seen, 2 read in full, 6 opaque",
        "1 with model facts unknown (the rules over the model and its GPU skip them)",
    ]


def test_json_has_every_launch_seen(tmp_path):
    _write(tmp_path)
    result = run_cli("check", "--no-cache", "--explain-opaque", "--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [
        (r["filename"], r["line"], r["column"], r["surface"], r["launch"], r["opaque"], r["reasons"])
        for r in json.loads(result.stdout)
    ]
    assert rows == [
        ("README.md", 4, 1, "markdown", "vllm serve", True, ["unresolved variable $VLLM_ARGS"]),
        ("app.py", 7, 11, "python", "LLM", True, ["**kwargs"]),
        ("app.py", 8, 21, "python", "vllm serve", True, ["*args"]),
        ("compose.yaml", 5, 15, "compose", "image entrypoint", False, []),
        ("serve.sh", 3, 1, "shell", "vllm serve", False, []),
        ("serve.sh", 4, 1, "shell", "vllm serve", True, ["unresolved variable $EXTRA_ARGS"]),
        ("serve.sh", 5, 6, "shell", "api_server", True, ["unresolved array $ARGS[@]"]),
        ("serve.sh", 6, 1, "shell", "vllm serve", True, ["config file (--config)"]),
    ]


def test_findings_are_not_reported_and_the_cache_keeps_them_apart(tmp_path):
    """The explanation is a view of its own: a normal run after it (same cache) still reports findings."""
    _write(tmp_path)
    explained = run_cli("check", "--explain-opaque", "serve.sh", cwd=tmp_path)
    assert "VLL" not in explained.stdout
    normal = run_cli("check", "serve.sh", cwd=tmp_path)
    assert "launch-seen" not in normal.stdout and "VLL" in normal.stdout
    again = run_cli("check", "--explain-opaque", "serve.sh", cwd=tmp_path)
    assert again.stdout == explained.stdout


def test_the_reason_says_where_an_unknown_value_comes_from(tmp_path):
    (tmp_path / "start.sh").write_text(textwrap.dedent("""\
        #!/bin/bash
        EXTRA=""
        while [[ $# -gt 0 ]]; do
            case "$1" in
                --extra) EXTRA="$2"; shift 2 ;;
                *) shift ;;
            esac
        done
        LEN=$(python3 -c 'print(4096)')
        vllm serve m --max-model-len 4096 $EXTRA
        vllm serve m --max-model-len $LEN --gpu-memory-utilization 0.9 $LEN
        read -ra MORE <<< "$MORE_ARGS"
        vllm serve m "${MORE[@]}"
        if [ "$BIG" = 1 ]; then CONFIG="--tensor-parallel-size 4"; else CONFIG="--tensor-parallel-size 2"; fi
        vllm serve m $CONFIG
        """), encoding="utf-8")
    result = run_cli("check", "--no-cache", "--explain-opaque", "start.sh", cwd=tmp_path)
    assert result.stdout.splitlines()[:4] == [
        "start.sh:10:1: shell launch left opaque: unresolved variable $EXTRA (set from positional arguments ($1...))",
        "start.sh:11:1: shell launch left opaque: unresolved variable $LEN (set from a command's output)",
        "start.sh:13:1: shell launch left opaque: unresolved array $MORE[@] (filled by read at run time)",
        "start.sh:15:1: shell launch left opaque: unresolved variable $CONFIG (set under a condition (if, case, && or a loop))",
    ], result.stdout


def test_json_says_whose_model_facts_are_known(tmp_path):
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}')
    (tmp_path / "serve.sh").write_text(
        "vllm serve ./tiny --max-model-len 1024\nvllm serve my-org/private-model\nvllm serve \"$MODEL\"\n"
        "vllm serve ./tiny --hf-overrides '{\"max_position_embeddings\": 4096}'\n"
    )
    result = run_cli("check", "--no-cache", "--explain-opaque", "--output-format", "json", "serve.sh", cwd=tmp_path)
    assert [(r["line"], r["model_facts"]) for r in json.loads(result.stdout)] == [
        (1, "known"), (2, "unknown"), (3, "model not known"), (4, "unknown")]
    text = run_cli("check", "--no-cache", "--explain-opaque", "serve.sh", cwd=tmp_path)
    assert text.stdout.splitlines()[-1] == "3 with model facts unknown (the rules over the model and its GPU skip them)"
