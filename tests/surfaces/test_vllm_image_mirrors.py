"""``vllm-images``: repositories that mirror vllm/vllm-openai are read as vLLM's image, their tag as the
release the container runs (compose, Kubernetes, Dockerfile FROM), unpinned ones flagged (VLL405)."""

from __future__ import annotations

import json
import textwrap

from lintutil import run_cli

MIRROR = "registry.corp:5000/ml/llm-server"

COMPOSE = f"""\
    services:
      pinned:
        image: {MIRROR}:v0.6.3
        command: --model Qwen/Qwen2.5-7B-Instruct --max-model-len 4096 --gpu-memory-utilization 0.9 --api-key k
      floating:
        image: {MIRROR}:latest
        command: ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
    """

DOCKERFILE = f"""\
    FROM {MIRROR}:v0.6.3
    CMD ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
    """


def _codes(tmp_path, name: str, text: str, config: str | None) -> list[tuple[int, str, str]]:
    (tmp_path / name).write_text(textwrap.dedent(text))
    if config is not None:
        (tmp_path / "vllm-lint.toml").write_text(config)
    result = run_cli("check", "--no-cache", "--output-format", "json", name, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return [(d["location"]["row"], d["code"], d["message"]) for d in json.loads(result.stdout)]


def test_a_configured_mirror_is_vllms_image_with_its_tag_as_the_pin(tmp_path):
    found = _codes(tmp_path, "compose.yaml", COMPOSE, f'vllm-images = ["{MIRROR}"]\n')
    assert [(row, code) for row, code, _ in found] == [(4, "VLL204"), (6, "VLL405")]
    assert "vLLM 0.6.3 (the release its image runs)" in found[0][2]
    assert f"{MIRROR}:latest is not pinned" in found[1][2]


def test_without_the_setting_the_mirror_is_some_other_image(tmp_path):
    # no vLLM word in the file: the pre-filter skips it, and nothing is read as a vLLM launch
    assert _codes(tmp_path, "compose.yaml", COMPOSE, None) == []


def test_a_mirror_without_its_registry_host_matches_by_repository_path(tmp_path):
    found = _codes(tmp_path, "compose.yaml", COMPOSE, 'vllm-images = ["ml/llm-server"]\n')
    assert [(row, code) for row, code, _ in found] == [(4, "VLL204"), (6, "VLL405")]


def test_a_dockerfile_from_a_mirror_is_judged_by_its_tag(tmp_path):
    found = _codes(tmp_path, "Dockerfile", DOCKERFILE, f'vllm-images = ["{MIRROR}"]\n')
    assert [code for _, code, _ in found] == ["VLL204"]
    assert "vLLM 0.6.3" in found[0][2]


def test_a_mirror_with_a_tag_in_the_setting_is_a_configuration_error(tmp_path):
    (tmp_path / "vllm-lint.toml").write_text(f'vllm-images = ["{MIRROR}:v0.6.3"]\n')
    (tmp_path / "compose.yaml").write_text(textwrap.dedent(COMPOSE))
    result = run_cli("check", "--no-cache", "compose.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "`vllm-images` entries are repositories without a tag or digest" in result.stderr
