"""``vllm-lint hook AGENT`` and ``vllm-lint mcp``: the two commands coding assistants run.

``vllm_lint.cli.entry`` runs ``hook`` without click (it runs after every edit an agent makes); this
click command is for ``--help`` and for callers that enter through the click group.
"""

from __future__ import annotations

import sys

import click


@click.command("hook")
@click.argument("agent")
def hook_command(agent: str) -> None:
    """Lint the file an assistant just edited (its hook payload on stdin) and answer in its protocol.

    AGENT is claude, codex, gemini, cursor, windsurf or cline. `vllm-lint init --hooks` installs it.
    """
    from vllm_lint.agent_hooks.main import main

    sys.exit(main([agent]))


@click.command("mcp")
def mcp_command() -> None:
    """Serve vllm-lint's tools (lint, fix, explain_rule, list_rules) over MCP on stdio.

    Needs the MCP SDK: `pip install 'vllm-lint[mcp]'`. `vllm-lint init --mcp` registers it.
    """
    try:
        from vllm_lint.mcp_server.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "pydantic", "mcp_types"):
            raise click.ClickException("`vllm-lint mcp` needs the MCP SDK: pip install 'vllm-lint[mcp]'") from None
        raise
    serve()
