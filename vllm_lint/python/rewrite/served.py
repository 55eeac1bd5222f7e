"""Classes a serving framework instantiates itself, once per replica or worker: Ray Serve deployments, BentoML
services, LitServe APIs. Their request methods may be ``async def``, so the engine is built in the class and
the methods await it."""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.model import FunctionInfo, decorator_parts, dotted_name

# Class decorators whose class is instantiated once per replica or worker and whose request methods may be
# ``async def`` (Ray Serve deployments; BentoML services, whose async APIs run on the worker's event loop):
# the engine is built in the class's ``__init__`` and the methods await it.
_SERVED_CLASS_DECORATORS = {"ray.serve.deployment": "Ray Serve deployment", "bentoml.service": "BentoML service"}
# A LitAPI subclass: LitServe runs ``setup`` once per worker and, with ``enable_async=True``, each request's
# ``predict`` as a task on the worker's event loop (see ``placement.litserve_instantiations``).
LITSERVE_API_BASES = frozenset({"litserve.LitAPI", "litserve.api.LitAPI"})
LITSERVE_API = "LitServe API"
# A class decorated ``@app.cls(...)`` of a modal.App: Modal builds one object per container, runs its
# ``@modal.enter()`` methods once, and awaits an async ``@modal.method()`` as a task on the container's loop.
MODAL_CLASS = "Modal class"


def served_class_kind(semantics, function: FunctionInfo) -> str | None:
    """What serves the class of a method ("Ray Serve deployment", "BentoML service"), None for other methods."""
    klass = function.class_info
    if klass is None or not function.is_method:
        return None
    for decorator in klass.node.decorators:
        expr, _ = decorator_parts(decorator)
        qualified = semantics.qualify(expr) or ""
        if qualified not in _SERVED_CLASS_DECORATORS and (dotted_name(expr) or "").endswith("serve.deployment"):
            qualified = "ray.serve.deployment"
        if qualified in _SERVED_CLASS_DECORATORS:
            return _SERVED_CLASS_DECORATORS[qualified]
    if any(semantics.qualify(base.value) in LITSERVE_API_BASES for base in klass.node.bases):
        return LITSERVE_API
    if modal_cls_decorator(semantics, klass.node) is not None:
        return MODAL_CLASS
    return None


def modal_cls_decorator(semantics, klass: cst.ClassDef) -> cst.Decorator | None:
    """The ``@app.cls(...)`` of a class, ``app`` a modal.App."""
    for decorator in klass.decorators:
        target, _ = decorator_parts(decorator)
        if isinstance(target, cst.Attribute) and target.attr.value == "cls" and semantics.app_framework(target.value, None) == "modal":
            return decorator
    return None


def is_modal_lifecycle(semantics, function: FunctionInfo, hook: str) -> bool:
    """Decorated ``@modal.enter()`` (hook "enter") or ``@modal.exit()``."""
    for decorator in function.node.decorators:
        target, _ = decorator_parts(decorator)
        if (semantics.qualify(target) or dotted_name(target) or "") == f"modal.{hook}":
            return True
    return False


def in_served_class(semantics, function: FunctionInfo) -> bool:
    """A request method of a Ray Serve deployment, a BentoML service, a LitServe API or a Modal class."""
    return served_class_kind(semantics, function) is not None
