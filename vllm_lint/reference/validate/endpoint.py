"""Which route of a server takes the prompt: found in its OpenAPI schema, or given on the command line.

A boolean ``stream`` field next to the prompt in the JSON body means the route also answers with a stream:
the harness then sends the load a second time with it set."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from vllm_lint.reference.loadgen import RequestSpec
from vllm_lint.reference.validate.errors import ValidationError

PROMPT_FIELDS = ("prompt", "text", "input", "query", "message", "question", "inputs", "input_text")
# A list of prompts in one request (a batch route): each request sends a list of one.
BATCH_FIELDS = ("prompts", "texts", "inputs", "queries", "questions")


_WHERE = {"query": "query string", "json": "JSON body", "form": "form body"}


@dataclass
class Endpoint:
    path: str
    field: str
    where: str  # "query", "json" or "form"
    messages: bool = False
    stream_field: str | None = None  # a boolean field of the JSON body that asks for a streamed response
    method: str = "POST"  # GET only for a route that takes the prompt in its query string
    batch: bool = False  # the field is a list of prompts: each request sends one
    within: str | None = None  # the JSON body's object the field is in (a BentoML API's typed parameter)
    # The smallest JSON body a route that takes the prompt in its query string also requires (FastAPI's
    # ``def chat(message: str, history: list[dict])``: the history is the body, [] for a first turn).
    body: Any = None

    def request(self, prompt: str, stream: bool = False) -> RequestSpec:
        value: Any = [{"role": "user", "content": prompt}] if self.messages else [prompt] if self.batch else prompt
        if self.where == "query":
            return RequestSpec(self.path, method=self.method, params={self.field: value}, json=self.body)
        if self.where == "form":
            return RequestSpec(self.path, data={self.field: value})
        body: dict[str, Any] = {self.field: value}
        if self.within is not None:
            body = {self.within: body}
        if stream:
            assert self.stream_field is not None
            body[self.stream_field] = True
        return RequestSpec(self.path, json=body)

    def describe(self) -> str:
        streamed = f"; streamed with {self.stream_field!r}: true" if self.stream_field else ""
        batch = " (a list of one prompt)" if self.batch else ""
        field = f"{self.within}.{self.field}" if self.within else self.field
        return f"{self.method} {self.path} with {field!r}{batch} in the {_WHERE[self.where]}{streamed}"


def _resolve(schema: dict, openapi: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = openapi
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part, {})
        schema = node
    return schema if isinstance(schema, dict) else {}


def _smallest(schema: dict, openapi: dict) -> Any:
    """The smallest value a JSON schema accepts: its required properties only, empty lists and strings."""
    schema = _resolve(schema, openapi)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: _smallest(properties.get(name, {}), openapi) for name in schema.get("required", [])}
    smallest: dict[str, Any] = {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}
    return smallest.get(kind) if isinstance(kind, str) else None


def _required_body(op: dict, openapi: dict) -> Any:
    body = op.get("requestBody") or {}
    if not body.get("required"):
        return None
    return _smallest(((body.get("content") or {}).get("application/json") or {}).get("schema", {}), openapi)


def as_served(endpoint: Endpoint, openapi: dict) -> Endpoint:
    """A route given on the command line (``--endpoint /ai --prompt-in query``), sent with GET where the server's
    schema shows it takes GET and not POST (FastAPI's ``@app.get("/ai") def prompt(line: str)``)."""
    methods = ((openapi.get("paths") or {}).get(endpoint.path)) or {}
    if endpoint.where == "query" and "get" in methods and "post" not in methods:
        return replace(endpoint, method="GET")
    return endpoint


def discover_endpoint(openapi: dict) -> Endpoint:
    """The POST route that takes a prompt: a query parameter or a JSON body property named like one; with
    none, a GET route that takes it as a query parameter (``@app.get("/generate") def generate(text: str)``)."""
    candidates: list[tuple[int, Endpoint]] = []
    gets: list[tuple[int, Endpoint]] = []
    for path, ops in (openapi.get("paths") or {}).items():
        for param in ((ops or {}).get("get") or {}).get("parameters", []):
            name = param.get("name", "")
            if param.get("in") == "query" and name in PROMPT_FIELDS:
                gets.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "query", method="GET")))
        op = (ops or {}).get("post")
        if not op:
            continue
        for param in op.get("parameters", []):
            name = param.get("name", "")
            if param.get("in") == "query" and name in PROMPT_FIELDS:
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "query", body=_required_body(op, openapi))))
        content = (op.get("requestBody") or {}).get("content") or {}
        body = content.get("application/json", {})
        schema = _resolve(body.get("schema", {}), openapi)
        props = schema.get("properties") or {}
        stream = "stream" if _resolve(props.get("stream", {}), openapi).get("type") == "boolean" else None
        for name in PROMPT_FIELDS:
            if name in props and _resolve(props[name], openapi).get("type") != "array":
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "json", stream_field=stream)))
        if not any(name in props for name in PROMPT_FIELDS):
            # One object deeper: ``def generate(self, body: GenerateRequest)`` takes {"body": {"prompt": ...}}.
            for outer, inner in ((k, _resolve(v, openapi)) for k, v in props.items()):
                for name in PROMPT_FIELDS:
                    if _resolve((inner.get("properties") or {}).get(name, {}), openapi).get("type") == "string":
                        candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "json", within=outer)))
        if "messages" in props:
            candidates.append((len(PROMPT_FIELDS), Endpoint(path, "messages", "json", messages=True, stream_field=stream)))
        for name in BATCH_FIELDS:
            items = _resolve(props.get(name, {}), openapi)
            if items.get("type") == "array" and _resolve(items.get("items", {}), openapi).get("type") == "string":
                candidates.append((len(PROMPT_FIELDS) + 1, Endpoint(path, name, "json", stream_field=stream, batch=True)))
        form = _resolve(content.get("application/x-www-form-urlencoded", {}).get("schema", {}), openapi)
        for name in PROMPT_FIELDS:
            if name in (form.get("properties") or {}):
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "form")))
    candidates = candidates or gets
    if not candidates:
        raise ValidationError("no POST route with a prompt-like field, nor a GET route with one in its query string (" + ", ".join(PROMPT_FIELDS)
                              + ") in the bad server's OpenAPI schema; pass --endpoint/--prompt-field")
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1]
