"""The MCP server: vllm-lint's tools over stdio, with the official SDK (``pip install 'vllm-lint[mcp]'``).

Each tool returns its result twice, as MCP asks: structured content, checked against the published
output schema, for the client to use, and readable text for the model. A request the tool cannot
serve comes back as a tool error (``isError``) with the reason, never as a crash of the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from vllm_lint import __version__
from vllm_lint.mcp_server import tools

INSTRUCTIONS = (
    "vllm-lint finds the mistakes people make when serving LLMs with vLLM (a transformers pipeline in a "
    "request handler, engine arguments that waste GPU memory, blocking calls in async handlers, unsafe "
    "launch flags) in Python servers, shell scripts, Dockerfiles, compose files and Kubernetes manifests. "
    "Call `lint` on code you write that loads or serves a model, `fix` to get the fixed text and its diff, "
    "and `explain_rule` for what a code such as VLL101 means and what to write instead."
)


class FixInfo(BaseModel):
    applicability: Literal["safe", "unsafe"]
    message: str


class Finding(BaseModel):
    code: str
    severity: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: FixInfo | None


class LintResult(BaseModel):
    file: str
    findings: list[Finding]


class FixResult(BaseModel):
    file: str
    fixed_source: str
    diff: str = Field(description="unified diff from the original to the fixed text; empty when nothing changed")
    applied: dict[str, int] = Field(description="fixes applied, by rule code")
    remaining: list[Finding]
    written: bool


class RuleFix(BaseModel):
    safety: str
    title: str | None


class RuleInfo(BaseModel):
    code: str
    name: str
    severity: str
    summary: str
    why: str
    fix: RuleFix
    directive: str
    surfaces: list[str]
    url: str | None


class RuleList(BaseModel):
    rules: list[RuleInfo]


def _result(call, *args) -> CallToolResult:
    """The tool's data and text as one result; a request it cannot serve becomes a tool error with the reason."""
    try:
        data, text = call(*args)
    except tools.ToolError as exc:
        raise ToolError(str(exc)) from None
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def build(root: Path) -> MCPServer:
    server = MCPServer("vllm-lint", version=__version__, instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def lint(
        source: Annotated[str | None, Field(description="the text to lint (with `filename`)")] = None,
        filename: Annotated[str | None, Field(description="the text's file name: it picks the file kind and the configuration (default snippet.py)")] = None,
        path: Annotated[str | None, Field(description="a file inside the project, instead of `source`")] = None,
    ) -> Annotated[CallToolResult, LintResult]:
        """Lint code that loads or serves LLMs with vLLM: Python, shell, Dockerfile, compose, Kubernetes, Markdown."""
        return _result(tools.lint, root, source, filename, path)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    def fix(
        source: Annotated[str | None, Field(description="the text to fix (with `filename`)")] = None,
        filename: Annotated[str | None, Field(description="the text's file name (default snippet.py)")] = None,
        path: Annotated[str | None, Field(description="a file inside the project, instead of `source`")] = None,
        unsafe: Annotated[bool, Field(description="also apply fixes marked unsafe (they change behaviour)")] = False,
        write: Annotated[bool, Field(description="write the fixed file back (only with `path`)")] = False,
    ) -> Annotated[CallToolResult, FixResult]:
        """Apply vllm-lint's fixes; returns the fixed text and the diff. Writes nothing unless `write` is true."""
        return _result(tools.fix, root, source, filename, path, unsafe, write)

    @server.tool(annotations=read_only)
    def explain_rule(code: Annotated[str, Field(description="a rule code such as VLL101")]) -> Annotated[CallToolResult, RuleInfo]:
        """What a vllm-lint rule finds, why it matters, and what to write instead."""
        return _result(tools.explain_rule, code)

    @server.tool(annotations=read_only)
    def list_rules() -> Annotated[CallToolResult, RuleList]:
        """Every vllm-lint rule: code, name, severity, summary and fix safety."""
        return _result(tools.list_rules)

    return server


def serve(root: Path | None = None) -> None:
    build(root or Path.cwd()).run("stdio")
