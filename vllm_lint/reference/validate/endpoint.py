"""Which route of a server takes the prompt: found in its OpenAPI schema, or given on the command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_lint.reference.loadgen import RequestSpec
from vllm_lint.reference.validate.errors import ValidationError

PROMPT_FIELDS = ("prompt", "text", "input", "query", "message", "question", "inputs")


@dataclass
class Endpoint:
    path: str
    field: str
    where: str  # "query" or "json"
    messages: bool = False

    def request(self, prompt: str) -> RequestSpec:
        value: Any = [{"role": "user", "content": prompt}] if self.messages else prompt
        if self.where == "query":
            return RequestSpec(self.path, params={self.field: value})
        return RequestSpec(self.path, json={self.field: value})

    def describe(self) -> str:
        return f"POST {self.path} with {self.field!r} in the {'query string' if self.where == 'query' else 'JSON body'}"


def _resolve(schema: dict, openapi: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = openapi
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part, {})
        schema = node
    return schema if isinstance(schema, dict) else {}


def discover_endpoint(openapi: dict) -> Endpoint:
    """The POST route that takes a prompt: a query parameter or a JSON body property named like one."""
    candidates: list[tuple[int, Endpoint]] = []
    for path, ops in (openapi.get("paths") or {}).items():
        op = (ops or {}).get("post")
        if not op:
            continue
        for param in op.get("parameters", []):
            name = param.get("name", "")
            if param.get("in") == "query" and name in PROMPT_FIELDS:
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "query")))
        body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {})
        schema = _resolve(body.get("schema", {}), openapi)
        props = schema.get("properties") or {}
        for name in PROMPT_FIELDS:
            if name in props:
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "json")))
        if "messages" in props:
            candidates.append((len(PROMPT_FIELDS), Endpoint(path, "messages", "json", messages=True)))
    if not candidates:
        raise ValidationError("no POST route with a prompt-like field (" + ", ".join(PROMPT_FIELDS)
                              + ") in the bad server's OpenAPI schema; pass --endpoint/--prompt-field")
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1]
