"""A compose service that ``extends`` another (in the same file or another one) runs with what the base sets
and the service does not: its image, environment, IPC, shared memory and GPUs."""

from __future__ import annotations

from findings import code_lines
from lintutil import lint_text

_BASE = """services:
  vllm-base:
    image: vllm/vllm-openai:v0.8.5
{extra}    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 2
              capabilities: [gpu]
"""
_COMMAND = (
    '    command: ["--model", "m", "--tensor-parallel-size", "2", "--disable-log-requests", '
    '"--gpu-memory-utilization", "0.9", "--max-model-len", "8192"]\n'
)
_FROM_FILE = "services:\n  vllm:\n    extends:\n      file: common.yml\n      service: vllm-base\n" + _COMMAND


def _lint(tmp_path, base_extra: str):
    (tmp_path / "common.yml").write_text(_BASE.format(extra=base_extra))
    return code_lines(lint_text(tmp_path, "docker-compose.yml", _FROM_FILE))


def test_a_base_in_another_file_gives_its_image_ipc_gpus_and_key(tmp_path):
    # v0.8.5's image has --disable-log-requests; host IPC and the key come from the base
    assert _lint(tmp_path, "    ipc: host\n    environment:\n      - VLLM_API_KEY=${KEY}\n") == []


def test_what_the_base_does_not_set_is_still_missing(tmp_path):
    assert _lint(tmp_path, "") == [("VLL403", 6), ("VLL404", 6)]


def test_a_base_in_the_same_file_is_merged(tmp_path):
    # read with the base's image (v0.8.5 has --disable-log-requests), IPC and GPUs; no key anywhere
    text = "services:\n  vllm:\n    extends: vllm-base\n" + _COMMAND + _BASE.format(extra="    ipc: host\n")[10:]
    found = code_lines(lint_text(tmp_path, "docker-compose.yml", text))
    assert [f for f in found if f[1] <= 4] == [("VLL403", 4)]


def test_a_base_file_that_cannot_be_read_may_set_the_key(tmp_path):
    text = _FROM_FILE.replace("common.yml", "missing.yml").replace(
        "    command:", "    image: vllm/vllm-openai:v0.8.5\n    ipc: host\n    command:"
    )
    assert code_lines(lint_text(tmp_path, "docker-compose.yml", text)) == []


def test_a_command_written_in_the_base_file_is_linted_there(tmp_path):
    (tmp_path / "common.yml").write_text(_BASE.format(extra=_COMMAND))
    text = "services:\n  vllm:\n    extends:\n      file: common.yml\n      service: vllm-base\n    ipc: host\n"
    assert code_lines(lint_text(tmp_path, "docker-compose.yml", text)) == []
