"""The request fields a WSGI view reads, as an OpenAPI document, so that ``vllm-lint validate`` finds the
route that takes the prompt in a Flask app, a Django views module (or an aiohttp, Starlette or Sanic app) as it
does in FastAPI's own schema.

Flask and Django keep no schema: what a view reads is read off its source (``request.form["prompt"]``,
``json.loads(request.body)["prompt"]``, ``data = request.get_json(); data.get("prompt")``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable

# Where a request value comes from ("query", "form" or "json"), for an expression of the view's source.
SourceOf = Callable[[ast.expr], "str | None"]

_MEDIA = (("json", "application/json"), ("form", "application/x-www-form-urlencoded"))


def awaited_read(expr: ast.expr) -> str | None:
    """``X`` of ``await request.X()`` (a body read by hand in an async handler: ``json``, ``form``, ``post``)."""
    if not (isinstance(expr, ast.Await) and isinstance(expr.value, ast.Call) and not expr.value.args):
        return None
    func = expr.value.func
    return func.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


# Flask's and Quart's request attributes a view reads a value from, and where an OpenAPI document puts them.
_WERKZEUG_FIELDS = {"form": "form", "args": "query", "values": "query", "json": "json", "get_json": "json"}


def attribute_source(expr: ast.expr, fields: dict[str, str], receiver: str | None = None) -> str | None:
    """``fields[attr]`` for ``name.attr``, ``name.attr()`` (no arguments), each also awaited; ``name`` must be
    ``receiver`` when one is given."""
    if isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Call) and not expr.args:
        expr = expr.func
    if (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)
            and (receiver is None or expr.value.id == receiver)):
        return fields.get(expr.attr)
    return None


def werkzeug_source(expr: ast.expr) -> str | None:
    """"form", "query" or "json" for ``request.form`` / ``request.args`` / ``request.get_json()`` (Flask), each
    also awaited (Quart: ``await request.form``, ``await request.get_json()``)."""
    return attribute_source(expr, _WERKZEUG_FIELDS, "request")


def url_map_openapi(app) -> dict:
    """An OpenAPI document of the POST routes of an app with a werkzeug-style ``url_map`` and ``view_functions``
    (Flask, Quart), with the fields each view reads."""
    routes = [(rule.rule, fields_read(app.view_functions[rule.endpoint], werkzeug_source))
              for rule in app.url_map.iter_rules() if "POST" in (rule.methods or ()) and not rule.arguments]
    return post_routes_document(app.name, routes)


def fields_read(view: Callable, source_of: SourceOf) -> dict[str, str]:
    """The request fields ``view`` reads, by where they come from (``{"prompt": "form"}``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(view)))
    except (OSError, TypeError, SyntaxError):
        return {}
    json_names = set()  # ``data = request.get_json()``
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if source_of(node.value) == "json":
                json_names.add(node.targets[0].id)
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        owner, key = None, None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            owner, key = node.value, node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant):
            owner, key = node.func.value, node.args[0].value
        if owner is None or not isinstance(key, str):
            continue
        where = "json" if isinstance(owner, ast.Name) and owner.id in json_names else source_of(owner)
        if where is not None:
            found.setdefault(key, where)
    return found


def post_routes_document(title: str, routes: Iterable[tuple[str, dict[str, str]]]) -> dict:
    """An OpenAPI document of POST routes, each given as its path and the fields its view reads."""
    return routes_document(title, ((path, "post", fields) for path, fields in routes))


def routes_document(title: str, routes: Iterable[tuple[str, str, dict[str, str]]]) -> dict:
    """An OpenAPI document of routes, each given as its path, its method (``"post"``, ``"get"``) and the fields its
    view reads; a GET route is described by its query parameters alone."""
    paths: dict[str, dict] = {}
    for path, method, fields in routes:
        operation: dict = {"parameters": [{"name": k, "in": "query"} for k, w in fields.items() if w == "query"]}
        content = {}
        for where, media in _MEDIA if method != "get" else ():
            props = {k: {"type": "string"} for k, w in fields.items() if w == where}
            if props:
                content[media] = {"schema": {"type": "object", "properties": props}}
        if content:
            operation["requestBody"] = {"content": content}
        paths.setdefault(path, {})[method] = operation
    return {"openapi": "3.0.0", "info": {"title": title, "version": "0"}, "paths": paths}
