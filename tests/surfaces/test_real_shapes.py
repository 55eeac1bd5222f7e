"""Shapes real deployment files write that the readers once missed: nested defaults and ``${VAR:?}`` in a
script ``bash -n`` accepts, the interpreter through a variable, comment lines inside a Dockerfile's
continued RUN, ``COPY <<EOF`` here-documents, and an exec-form ``sh -c`` script continued over lines."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest

from lintutil import lint_text, run_cli

NESTED_DEFAULTS = """\
    #!/bin/bash
    set -euo pipefail
    MODEL="${MODEL_ID:-${MODEL_NAME:-}}"
    : "${MODEL:?set MODEL_ID or MODEL_NAME}"
    KEY="${SSH_KEY_FILE:-${HOME}/.ssh/id_rsa}"
    LABEL="${TAG:-"{latest}"}"
    vllm serve "$MODEL" --max-model-len 4096 --gpu-memory-utilization 0.9 --host 127.0.0.1
    """

VENV_INTERPRETER = """\
    #!/bin/bash
    VENV="${VENV:-$(pwd)/.venv}"
    nohup "$VENV/bin/python" -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct \\
        --max-model-len 8192 --gpu-memory-utilization 0.9 --host 127.0.0.1 > vllm.log 2>&1 &
    """

DOCKERFILE = """\
    FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
    ENV MODEL=Qwen/Qwen2.5-7B-Instruct PORT=8000
    RUN apt-get update && apt-get install -y \\
            python3-pip \\
            # RDMA libraries
            libibverbs-dev \\

            curl
    COPY <<EOF /usr/local/bin/check
    #!/bin/bash
    echo ready
    EOF
    RUN pip install vllm==0.6.3
    CMD ["sh", "-c", "python3 -m vllm.entrypoints.openai.api_server \\
         --model ${MODEL} --port ${PORT} \\
         --max-model-len 4096 --gpu-memory-utilization 0.9"]
    """


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash checks the script is valid")
def test_a_script_bash_accepts_is_read(tmp_path):
    script = textwrap.dedent(NESTED_DEFAULTS)
    (tmp_path / "serve.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "serve.sh")]).returncode == 0
    found = lint_text(tmp_path, "serve.sh", script)
    # read in full: no VLL000, and the launch's own findings (it has no API key; the model is unknown)
    assert [(d.start.line, d.code) for d in found] == []
    explained = run_cli("check", "--no-cache", "--explain-opaque", "serve.sh", cwd=tmp_path)
    assert explained.stdout == "1 launches seen, 1 read in full, 0 opaque\n"


def test_interpreter_through_a_variable_is_a_launch_and_its_fix_keeps_the_environment(tmp_path):
    script = textwrap.dedent(VENV_INTERPRETER)
    found = lint_text(tmp_path, "serve.sh", script)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(3, 7, "VLL401")]
    (tmp_path / "serve.sh").write_text(script)
    run_cli("check", "--no-cache", "--fix", "--select", "VLL401", "serve.sh", cwd=tmp_path)
    assert (tmp_path / "serve.sh").read_text() == script.replace(
        '"$VENV/bin/python" -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct',
        '"$VENV/bin/vllm" serve Qwen/Qwen2.5-7B-Instruct',
    )


def test_dockerfile_comment_lines_heredocs_and_a_continued_exec_form_script(tmp_path):
    found = lint_text(tmp_path, "Dockerfile", textwrap.dedent(DOCKERFILE))
    # the CMD's script is read with ENV's values: vLLM 0.6.3 (the pip pin) has prefix caching off;
    # the server listens on all interfaces with no API key
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(14, 19, "VLL204"), (14, 19, "VLL403")]
