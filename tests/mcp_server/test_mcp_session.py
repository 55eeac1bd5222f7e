"""A session with `vllm-lint mcp` through the MCP SDK's own client, over stdio, with the server as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the `mcp` extra (the `test` extra installs it)")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from lintutil import run_cli  # noqa: E402
from vllm_lint.resources import rules_dir  # noqa: E402

BAD_SERVER = '''from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="meta-llama/Llama-3.1-8B-Instruct")


@app.post("/chat")
def chat(prompt: str):
    output = pipe(prompt, max_new_tokens=256)
    return output[0]["generated_text"]
'''


def _session(project: Path, steps):
    """Start the server in ``project`` and run ``steps(session)`` in one SDK session; its result."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vllm_lint", "mcp"],
        cwd=str(project),
        env={"XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(project / ".cache"))},
    )

    async def run():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await steps(session)

    return anyio.run(run)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "server.py").write_text(BAD_SERVER)
    return tmp_path


def test_list_lint_fix_explain(project):
    async def steps(session):
        tools = await session.list_tools()
        lint_path = await session.call_tool("lint", {"path": "server.py"})
        lint_text = await session.call_tool("lint", {"source": BAD_SERVER, "filename": "app.py"})
        fixed = await session.call_tool("fix", {"path": "server.py", "unsafe": True})
        relint = await session.call_tool("lint", {"source": fixed.structured_content["fixed_source"], "filename": "server.py"})
        explained = await session.call_tool("explain_rule", {"code": "VLL101"})
        listed = await session.call_tool("list_rules", {})
        return tools, lint_path, lint_text, fixed, relint, explained, listed

    tools, lint_path, lint_text, fixed, relint, explained, listed = _session(project, steps)
    by_name = {tool.name: tool for tool in tools.tools}
    assert sorted(by_name) == ["explain_rule", "fix", "lint", "list_rules"]
    assert all(tool.output_schema for tool in tools.tools)
    assert set(by_name["fix"].input_schema["properties"]) == {"source", "filename", "path", "unsafe", "write"}

    for result, shown in ((lint_path, "server.py"), (lint_text, "app.py")):
        assert not result.is_error
        assert [f["code"] for f in result.structured_content["findings"]] == ["VLL101"]
        assert result.structured_content["findings"][0]["line"] == 10
        assert result.content[0].text.startswith(f"{shown}:10:14: VLL101 [error] transformers pipeline called inside a request handler (chat)")

    assert not fixed.is_error
    assert fixed.structured_content["applied"] == {"VLL101": 1}
    assert fixed.structured_content["written"] is False
    assert "+from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams\n" in fixed.structured_content["diff"]
    assert "async def chat(prompt: str):" in fixed.structured_content["fixed_source"]
    assert fixed.content[0].text.startswith("server.py: applied 1 fix(es) (nothing written; pass write=true with a path to write).\n--- a/server.py\n+++ b/server.py\n")
    assert (project / "server.py").read_text() == BAD_SERVER  # never written unless asked
    assert [f["code"] for f in relint.structured_content["findings"]] == []
    # the fix the CLI makes, to the byte
    cli_diff = run_cli("check", "--diff", "--unsafe-fixes", "--isolated", "server.py", cwd=project).stdout
    assert fixed.structured_content["diff"] == cli_diff

    assert explained.structured_content["code"] == "VLL101" and explained.structured_content["name"] == "sync-pipeline-in-handler"
    assert explained.content[0].text.startswith("# sync-pipeline-in-handler (VLL101)\n")
    codes = [rule["code"] for rule in listed.structured_content["rules"]]
    assert codes == sorted(p.stem for p in rules_dir().glob("VLL*.yaml"))


def test_fix_writes_only_when_asked(project):
    async def steps(session):
        return await session.call_tool("fix", {"path": "server.py", "unsafe": True, "write": True})

    result = _session(project, steps)
    assert result.structured_content["written"] is True
    assert (project / "server.py").read_text() == result.structured_content["fixed_source"]


def test_requests_it_cannot_serve_are_tool_errors(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "x.py"
    outside.write_text(BAD_SERVER)

    async def steps(session):
        return (
            await session.call_tool("lint", {"path": str(outside)}),
            await session.call_tool("explain_rule", {"code": "VLL999"}),
            await session.call_tool("fix", {"source": BAD_SERVER, "write": True}),
            await session.call_tool("lint", {}),
        )

    outside_path, unknown_rule, write_text, nothing = _session(project, steps)
    assert outside_path.is_error and f"{outside} is outside the project" in outside_path.content[0].text
    assert unknown_rule.is_error and "unknown rule code 'VLL999'" in unknown_rule.content[0].text
    assert write_text.is_error and "`write` needs a `path`" in write_text.content[0].text
    assert nothing.is_error and "give either `source` (with `filename`) or `path`" in nothing.content[0].text
