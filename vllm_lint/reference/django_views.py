"""A Django views module served on its own, for ``vllm-lint validate``: a views.py file has no project
around it in a rule example or a user's snippet, so the launcher gives it the least Django needs.

* Settings: no installed apps and no middleware (so no CSRF check: the harness is a script, not a
  browser), ``DEBUG`` off, hosts 127.0.0.1 and localhost. They are configured before the file is imported,
  so a view module that reads settings as it loads finds them.
* URLs: the module's own ``urlpatterns`` when it has them; otherwise each public function of the module
  whose first parameter is ``request`` is routed at ``/<its name>``.
* Served by werkzeug's threaded WSGI server (a thread per request, as Django's runserver and gunicorn's
  thread workers serve it), with an OpenAPI document made from the fields each view reads
  (``request.POST[...]``, ``request.GET[...]``, ``json.loads(request.body)[...]``).
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable

from vllm_lint.reference.python_source import imported_packages
from vllm_lint.reference.request_fields import fields_read, post_routes_document

_DJANGO_FIELDS = {"POST": "form", "GET": "query"}


def serves_django_views(source: str) -> bool:
    """Whether the file is a Django views module: it imports Django and defines no ``app``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    imports_django = "django" in imported_packages(tree)
    binds_app = any(isinstance(t, ast.Name) and t.id == "app"
                    for node in tree.body if isinstance(node, ast.Assign) for t in node.targets)
    return imports_django and not binds_app and bool(_view_names(tree))


def _view_names(tree: ast.Module) -> list[str]:
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
            and node.args.args and node.args.args[0].arg == "request"]


def _django_source(expr: ast.expr) -> str | None:
    """"form", "query" or "json" for ``request.POST`` / ``request.GET`` / ``json.loads(request.body)``."""
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "json.loads" and len(expr.args) == 1:
        body = expr.args[0]
        if isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr == "decode":
            body = body.func.value  # json.loads(request.body.decode("utf-8"))
        return "json" if ast.unparse(body) == "request.body" else None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "request":
        return _DJANGO_FIELDS.get(expr.attr)
    return None


def configure_django() -> types.ModuleType:
    """Configure Django's settings (before the views file is imported); return the URL configuration the
    views are then routed in by :func:`django_wsgi_app`."""
    import django
    from django.conf import settings

    urls = types.ModuleType("vllm_lint_validate_urls")  # Django caches resolvers by their (hashable) URL module
    urls.urlpatterns = []  # type: ignore[attr-defined]
    settings.configure(DEBUG=False, SECRET_KEY="vllm-lint-validate", ALLOWED_HOSTS=["127.0.0.1", "localhost"],
                       INSTALLED_APPS=[], MIDDLEWARE=[], ROOT_URLCONF=urls)
    django.setup()
    return urls


def django_wsgi_app(module: types.ModuleType, source: str, urls: types.ModuleType, stats_path: str,
                    stats: Callable[[], dict]):
    """The WSGI application of the imported views ``module`` (whose source is ``source``), with
    ``/openapi.json`` and ``stats_path`` (``stats()`` as JSON) routed beside its views."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.http import JsonResponse
    from django.urls import path as route

    own = getattr(module, "urlpatterns", None)
    if own is not None:
        patterns = list(own)
        views = [(f"/{p.pattern}", p.callback) for p in patterns if getattr(p, "callback", None)]
    else:
        views = [(f"/{name}", getattr(module, name)) for name in _view_names(ast.parse(source))]
        patterns = [route(p.lstrip("/"), view) for p, view in views]
    document = post_routes_document(module.__name__, [(p, fields_read(inspect.unwrap(v), _django_source))
                                                      for p, v in views])
    # a module object takes any attribute (Django reads urlpatterns off it)
    urls.urlpatterns = [*patterns, route("openapi.json", lambda request: JsonResponse(document)),  # type: ignore[attr-defined]
                        route(stats_path.lstrip("/"), lambda request: JsonResponse(stats()))]
    return WSGIHandler()
