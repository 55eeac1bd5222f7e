"""Compose's own variables: ``${VAR}`` filled in from the project's ``.env`` (or a reference's default) before
anything runs, ``$$VAR`` left for the container's shell, ``env_file:`` read for what it sets in the container.

The projects stand for self-hosting repositories that ship a ``compose.yaml`` with a ``.env`` beside it (the
shape of open-webui/vLLM and Dify-style stacks); expectations are every finding, exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_lint.surfaces.compose_env import interpolate, read_dotenv

from lintutil import lint_file_paths, lint_text, run_cli

COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:${VLLM_VERSION:-v0.8.5}
    environment:
      GPU_UTIL: "0.5"
    command: >-
      --model ${MODEL}
      --gpu-memory-utilization ${GPU_UTIL}
      --max-model-len ${MAX_LEN:-8192}
      --api-key ${API_KEY}
    ipc: host
"""

DOTENV = """\
# copied from .env.example
MODEL=Qwen/Qwen2.5-7B-Instruct
GPU_UTIL=0.97
VLLM_VERSION=v0.32.0
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root / "compose.yaml"


def _found(path: Path) -> list[tuple[int, int, str]]:
    return sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([path]))


def test_dotenv_fills_in_the_command(tmp_path):
    path = _project(tmp_path, {"compose.yaml": COMPOSE, ".env": DOTENV})
    # 0.97 from .env (the service's environment: is the container's, not compose's); the v0.32.0 tag from
    # .env runs `vllm serve`, where --model is deprecated
    assert _found(path) == [(7, 7, "VLL401"), (8, 32, "VLL202")]
    [finding] = [d for d in lint_file_paths([path]) if d.code == "VLL202"]
    assert "gpu_memory_utilization 0.97 (.env GPU_UTIL)" in finding.message


def test_without_dotenv_a_variable_only_the_shell_sets_is_unknown(tmp_path):
    # GPU_UTIL could be the shell's: not reported (and not taken from environment:); the image's tag is
    # the default v0.8.5, whose api_server entrypoint needs --model
    assert _found(_project(tmp_path, {"compose.yaml": COMPOSE})) == []


def test_a_dotenv_line_that_is_not_plain_leaves_every_other_variable_unknown(tmp_path):
    text = COMPOSE.replace("${MAX_LEN:-8192}", "8192").replace("${GPU_UTIL}", "${UTIL:-0.99}")
    assert _found(_project(tmp_path, {"compose.yaml": text})) == [(8, 32, "VLL202")]  # the default (the whole reference), no .env
    # a .env read whole that does not set UTIL: still the default
    assert _found(_project(tmp_path, {"compose.yaml": text, ".env": "MODEL=m\n"})) == [(8, 32, "VLL202")]
    # one with a line that is not KEY=value may set UTIL: unknown
    assert _found(_project(tmp_path, {"compose.yaml": text, ".env": "MODEL=m\nUTIL 0.5\n"})) == []


def test_double_dollar_is_the_containers_shell(tmp_path):
    text = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.8.5
    environment:
      UTIL: "0.98"
    command: ["sh", "-c", "vllm serve m --gpu-memory-utilization $$UTIL --max-model-len 8192 --api-key k"]
"""
    assert _found(_project(tmp_path, {"compose.yaml": text, ".env": "UTIL=0.5\n"})) == [(6, 66, "VLL202")]


ENV_FILE_SERVICE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.32.0
    command: m --max-model-len 8192 --gpu-memory-utilization 0.9
    env_file: {env_file}
"""


@pytest.mark.parametrize(
    ("env_file", "files", "expected"),
    [
        ("vllm.env", {"vllm.env": "HF_TOKEN=hf_x\n"}, [(4, 14, "VLL403")]),  # read: no key in it
        ("vllm.env", {"vllm.env": "VLLM_API_KEY=secret\n"}, []),
        ("[base.env, vllm.env]", {"base.env": "HF_TOKEN=x\n", "vllm.env": "VLLM_API_KEY=\"s\"\n"}, []),
        ("vllm.env", {}, []),  # not there: compose would stop; nothing is assumed of it
        ("[{path: vllm.env, required: false}]", {}, [(4, 14, "VLL403")]),  # optional and absent: sets nothing
        ("vllm.env", {"vllm.env": "HF_TOKEN=x\nnot plain\n"}, []),  # not read exactly: may set the key
    ],
)
def test_env_file_sets_the_containers_variables(tmp_path, env_file, files, expected):
    path = _project(tmp_path, {"compose.yaml": ENV_FILE_SERVICE.format(env_file=env_file), **files})
    assert _found(path) == expected


def test_a_compose_block_in_documentation_reads_no_dotenv(tmp_path):
    (tmp_path / ".env").write_text("GPU_UTIL=0.97\n")
    text = "# Deploy\n\n```yaml\n" + COMPOSE.replace("${MODEL}", "m") + "```\n"
    assert lint_text(tmp_path, "README.md", text) == []


def test_a_fix_after_a_variable_goes_after_its_brace(tmp_path):
    text = "services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n    command: m --max-model-len 8192 --api-key ${API_KEY}\n"
    path = _project(tmp_path, {"compose.yaml": text})
    result = run_cli("check", "--fix", "--unsafe-fixes", "--isolated", "--select", "VLL201", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == text.replace("${API_KEY}", "${API_KEY} --gpu-memory-utilization 0.90")


def test_the_result_follows_dotenv(tmp_path):
    _project(tmp_path, {"compose.yaml": COMPOSE, ".env": DOTENV})
    assert "VLL202" in run_cli("check", "--output-format", "concise", "compose.yaml", cwd=tmp_path).stdout
    (tmp_path / ".env").write_text(DOTENV.replace("0.97", "0.9"))
    assert "VLL202" not in run_cli("check", "--output-format", "concise", "compose.yaml", cwd=tmp_path).stdout


def test_dotenv_as_compose_reads_it():
    env = read_dotenv("# c\nA=1\nexport B=two words # comment\nC='raw $x'\nD=\"esc\\n\"\nE=$A/x\nF=\nG=\"open\nH=2\n")
    assert env.values == {"A": "1", "B": "two words", "C": "raw $x", "D": None, "E": None, "F": "", "G": None}
    assert not env.complete  # G's quoted value runs on: H is not read


@pytest.mark.parametrize(
    ("text", "value", "unknown"),
    [
        ("--x=${A}", "--x=1", ()),
        ("${MISSING:-0.9}", "0.9", ()),
        ("${F:-d}", "d", ()),  # set but empty: the default
        ("${F-d}", "", ()),  # set: its (empty) value
        ("${MISSING}", "$_", ((0, 2),)),  # only the shell could set it
        ("${MISSING:+--flag}", "$_", ((0, 2),)),
        ("${A:+--flag}", "--flag", ()),
        ("${X:-${A}}", "1", ()),
        ("$$A $A", "$A 1", ()),
        ("${A/1/2}", "$_", ((0, 2),)),  # not compose's syntax
    ],
)
def test_interpolation(text, value, unknown):
    filled = interpolate(text, list(range(len(text) + 1)), read_dotenv("A=1\nF=\n"))
    assert (filled.text, filled.unknown) == (value, unknown)
    assert len(filled.offsets) == len(filled.text)


def test_a_dotenv_created_after_a_cached_run_is_read(tmp_path):
    _project(tmp_path, {"compose.yaml": COMPOSE})
    assert "VLL202" not in run_cli("check", "--output-format", "concise", "compose.yaml", cwd=tmp_path).stdout
    (tmp_path / ".env").write_text(DOTENV)  # absent when the result was cached: the result no longer holds
    assert "VLL202" in run_cli("check", "--output-format", "concise", "compose.yaml", cwd=tmp_path).stdout
