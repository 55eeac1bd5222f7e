"""Launchers (``nohup``, ``srun``, ``uv run``, ``docker exec``, ...) looked through, and commands that print
instead of serving (``vllm serve --help``) left alone."""

from __future__ import annotations

import pytest

from lintutil import lint_text
from vllm_lint.engine.fixer import fix_file


# Each line removes a flag (--swap-space, VLL206): the finding's column says which word the launch was read from.
@pytest.mark.parametrize(
    "prefix",
    [
        "nohup systemd-run --scope -p MemoryMax=1G ",
        "systemd-run --unit vllm --property MemoryMax=1G -E HF_HOME=/data ",
        "timeout -s INT 600 ",
        "timeout --kill-after=5 1h ",
        "srun -N 1 -n1 --gres=gpu:1 --container-image vllm/vllm-openai:v0.32.0 --exclusive ",
        "srun --nodes 1 --ntasks-per-node=1 -G 1 --pty ",
        "numactl --cpunodebind=0 --membind 0 ",
        "numactl -N 0 -m 0 -- ",
        "taskset -c 0-7 ",
        "taskset 0xff ",
        "nice -n 10 stdbuf -oL ",
        "sudo -u svc -E env -u HTTP_PROXY CUDA_VISIBLE_DEVICES=0 ",
        "gosu app ",
        "chrt -r 50 ",
        "flock -w 10 /tmp/vllm.lock ",
        "conda run -n serve --no-capture-output ",
        "micromamba run -r /opt/mamba -n serve ",
        "uv run --with vllm --python 3.12 ",
        "poetry run ",
        "pixi run -e cuda ",
        "docker exec -it -e HF_HOME=/data vllm-ctr ",
        "kubectl exec -it deploy/vllm -c server -n llm -- ",
        "mpirun -np 2 --mca btl tcp,self -x NCCL_DEBUG ",
        "exec setsid ",
    ],
)
def test_launch_found_after_launchers(tmp_path, prefix):
    line = prefix + "vllm serve m --swap-space 4\n"
    found = lint_text(tmp_path, "run.sh", line, select=("VLL206",))
    assert [(d.code, d.start.line, d.start.column) for d in found] == [("VLL206", 1, line.index("--swap-space") + 1)]


@pytest.mark.parametrize(
    "line",
    [
        "torchrun --nproc_per_node 2 -m vllm.entrypoints.openai.api_server --model m --swap-space 4\n",
        "accelerate launch --num_processes 1 -m vllm.entrypoints.openai.api_server --model m --swap-space 4\n",
        "torchrun --nnodes=1 --no-python vllm serve m --swap-space 4\n",
    ],
)
def test_python_launchers_run_a_module_or_a_program(tmp_path, line):
    found = lint_text(tmp_path, "run.sh", line, select=("VLL206",))
    assert [(d.code, d.start.column) for d in found] == [("VLL206", line.index("--swap-space") + 1)]


@pytest.mark.parametrize(
    "line",
    [
        "torchrun --nproc_per_node 2 serve.py --swap-space 4",  # a Python script: its own program
        "kubectl exec pod-0 vllm serve m --swap-space 4",  # no `--`: kubectl refuses it
        "gosu vllm serve m --swap-space 4",  # runs `serve` as the user vllm
        "timeout vllm serve m --swap-space 4",  # `vllm` is timeout's duration
        "pgrep -f 'vllm serve m --swap-space 4'",
        "echo vllm serve m --swap-space 4",
        "grep -r 'vllm serve m --swap-space 4' docs",
        "# vllm serve m --swap-space 4",
    ],
)
def test_no_launch_where_the_words_do_not_start_one(tmp_path, line):
    assert lint_text(tmp_path, "run.sh", line + "\n") == []


@pytest.mark.parametrize(
    "line",
    [
        "vllm serve --help",
        "vllm serve -h",
        "vllm serve --help=all",
        "vllm serve --help=ModelConfig",
        "vllm serve m --swap-space 4 --help",
        "vllm serve --version",
        "python -m vllm.entrypoints.openai.api_server --help",
        "nohup vllm serve --help > flags.txt",
    ],
)
def test_help_and_version_are_not_launches(tmp_path, line):
    assert lint_text(tmp_path, "run.sh", line + "\n") == []


def test_help_is_never_fixed(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text('FROM python:3.12\nRUN pip install vllm==0.8.5\nCMD ["vllm", "serve", "--help"]\n')
    outcome = fix_file(path)
    assert outcome.fixed == path.read_bytes()
    assert dict(outcome.applied) == {}


def test_api_server_rewrite_keeps_the_launchers(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(
        "nohup systemd-run --scope -p MemoryMax=1G python -m vllm.entrypoints.openai.api_server --model m &\n"
    )
    outcome = fix_file(path, select=("VLL401",))
    assert outcome.fixed.decode() == "nohup systemd-run --scope -p MemoryMax=1G vllm serve m &\n"
