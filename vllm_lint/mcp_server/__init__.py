"""``vllm-lint mcp``: the linter as MCP tools over stdio, with the official Python SDK (the ``mcp`` extra).

``tools`` (lint, fix, explain_rule, list_rules as plain functions: data plus readable text, no
SDK), ``server`` (the SDK's MCPServer publishing them with their input and output schemas).
"""
