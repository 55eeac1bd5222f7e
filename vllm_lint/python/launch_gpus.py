"""The GPU type a Python launch runs on, where the code around it declares one: Modal's ``gpu="H100:2"`` on
the ``@app.function(...)`` / ``@app.cls(...)`` that holds it, and Ray's ``accelerator_type`` in the
``ray_actor_options`` of the ``@serve.deployment(...)`` / ``@ray.remote(...)`` around it."""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.model import FunctionInfo

_DECORATORS = frozenset({"function", "cls", "deployment", "remote"})


def _last_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def _declared(call: cst.Call) -> tuple[str, cst.CSTNode] | None:
    """The GPU name a decorator call declares: ``gpu="A100-80GB:2"`` (Modal), ``accelerator_type="A100"``
    (Ray, itself or inside ``ray_actor_options={...}``)."""
    for arg in call.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if name in ("gpu", "accelerator_type"):
            text = _string(arg.value)
            return (text.partition(":")[0], arg.value) if text else None
        if name == "ray_actor_options" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if isinstance(element, cst.DictElement) and _string(element.key) == "accelerator_type":
                    text = _string(element.value)
                    return (text, element.value) if text else None
    return None


def declared_gpu(function: FunctionInfo | None) -> tuple[str, cst.CSTNode] | None:
    """The GPU type (as ``vllm_lint.gpus`` names it) the decorators around ``function`` declare, and where."""
    from vllm_lint.gpus.names import gpu_from_name

    decorated: list[cst.FunctionDef | cst.ClassDef] = []
    while function is not None:
        decorated.append(function.node)
        if function.class_info is not None:
            decorated.append(function.class_info.node)
        function = function.parent
    for node in decorated:
        for decorator in node.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call) and _last_name(call.func) in _DECORATORS:
                found = _declared(call)
                if found is not None:
                    gpu = gpu_from_name(found[0])
                    return (gpu.name, found[1]) if gpu is not None else None
    return None
