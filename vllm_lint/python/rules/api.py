"""VLL303 (names vLLM does not have) and VLL501 (legacy engine import paths)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.model import dotted_name
from vllm_lint.python.vllm_names import missing_in_path
from vllm_lint.registry import python_rule
from vllm_lint.suggestions import close_names
from vllm_lint.vllm_api import VllmApi
from vllm_lint.vllm_api.history import Fate, class_attribute_fate, fate_phrase, module_fate, unknown_range

# Names people reach for that belong to other libraries or older vLLM, and where to go instead.
_HINTS = {
    "generate_async": "that is TensorRT-LLM's LLM API; in vLLM use AsyncLLMEngine.generate()",
    "vllm.entrypoints.openai.benchmarks": "benchmarks are the `vllm bench serve` command now",
}
# The object a call returns, for checking attribute reads on it.
_INSTANCE_OF = {
    "vllm.LLM": "vllm.LLM",
    "vllm.AsyncLLMEngine.from_engine_args": "vllm.AsyncLLMEngine",
    "vllm.LLMEngine.from_engine_args": "vllm.LLMEngine",
    "vllm.SamplingParams": "vllm.SamplingParams",
    "vllm.EngineArgs": "vllm.EngineArgs",
    "vllm.AsyncEngineArgs": "vllm.AsyncEngineArgs",
}
LEGACY_ENGINE_MODULES = ("vllm.engine.async_llm_engine", "vllm.engine.llm_engine")
def _hint(name: str) -> str:
    for key, hint in _HINTS.items():
        if name == key or name.startswith(key + ".") or name.endswith("." + key):
            return f" ({hint})"
    return ""


def _suggest(name: str, candidates: frozenset[str]) -> str:
    matches = close_names(name, (c for c in candidates if not c.startswith("_")), n=1)
    return f"; did you mean {matches[0]}?" if matches else ""


def _report(
    prefix: str, name: str, api: VllmApi, node: cst.CSTNode, statement: cst.CSTNode, import_from: cst.ImportFrom | None = None
) -> PyFinding | None:
    """``import_from``: the ``from prefix import name`` statement, when it imports that one name."""
    full = f"{prefix}.{name}"
    if api.predates:
        return None  # the file's vLLM is older than any the linter knows, and had names these do not
    is_class = api.class_attributes(prefix) is not None
    fate = class_attribute_fate(api, prefix, name) if is_class else module_fate(api, prefix, name)
    failure = "it fails with ImportError/AttributeError at run time"
    if fate is not None and fate.known_elsewhere:
        return PyFinding(
            message=f"{fate_phrase(fate, full, api, failure)}{_hint(full)}",
            node=node,
            statement=statement,
            fix=_moved_import(import_from, name, fate),
        )
    candidates = api.class_attributes(prefix)
    if candidates is None:
        names = api.module_names(prefix)
        candidates = names[0] if names else frozenset()
    return PyFinding(
        message=f"no vLLM release from {unknown_range(api)} has {full}: {failure}{_hint(full)}{_suggest(name, candidates)}",
        node=node,
        statement=statement,
    )


def _moved_import(import_from: cst.ImportFrom | None, name: str, fate: Fate) -> PyFix | None:
    """``from vllm.utils import FlexibleArgumentParser`` -> ``from vllm.utils.argparse_utils import ...``:
    the same class, imported from where it lives now."""
    if import_from is None or fate.how != "moved" or not fate.replaced_by:
        return None
    module, _, moved_name = fate.replaced_by.rpartition(".")
    if moved_name != name or import_from.module is None:
        return None
    target = import_from.module
    return PyFix(
        title=f"Import {name} from {module}",
        applicability=Applicability.SAFE,
        build=lambda: [NodeEdit(target, cst.parse_expression(module))],
    )


@python_rule("VLL303")
def nonexistent_vllm_api(ctx: PyContext) -> Iterator[PyFinding]:
    for finding in _nonexistent_names(ctx):
        if finding is not None:
            yield finding


def _nonexistent_names(ctx: PyContext) -> Iterator[PyFinding | None]:
    api = ctx.api
    reported: set[tuple[int, str]] = set()
    for info in ctx.model.imports:
        if info.relative or not (info.module == "vllm" or info.module.startswith("vllm.")):
            continue
        if isinstance(info.node, cst.Import):
            for name, _, alias in info.names:
                missing = missing_in_path(api, name)
                if missing:
                    yield _report(*missing, api, alias, info.statement)
            continue
        missing = missing_in_path(api, info.module)
        if missing:
            yield _report(*missing, api, info.node.module or info.node, info.statement)
            continue
        single = info.node if len(info.names) == 1 else None
        for name, _, alias in info.names:
            missing = missing_in_path(api, f"{info.module}.{name}")
            if missing:
                yield _report(*missing, api, alias, info.statement, single if missing == (info.module, name) else None)
    for read in ctx.model.attribute_reads:
        if id(read.node) in ctx.model.attribute_writes:
            continue  # an assignment: VLL206 says what setting an engine-args field that does not exist does
        qualified = ctx.semantics.qualify(read.node)
        missing = None
        if qualified is not None and qualified.startswith("vllm."):
            missing = missing_in_path(api, qualified)
        elif qualified is None:
            missing = _instance_attribute(ctx, read.node, read.function)
        if missing is None:
            continue
        key = (id(read.statement), ".".join(missing))
        if key in reported:
            continue
        reported.add(key)
        yield _report(*missing, api, read.node, read.statement)


def _instance_attribute(ctx: PyContext, node: cst.Attribute, function) -> tuple[str, str] | None:
    if not isinstance(node.value, (cst.Name, cst.Attribute)):
        return None
    producers = ctx.semantics.produced_by(node.value, function)
    classes = {_INSTANCE_OF[p] for p in producers if p in _INSTANCE_OF}
    if len(classes) != 1 or len(producers) != 1:
        return None
    klass = classes.pop()
    if klass in ("vllm.EngineArgs", "vllm.AsyncEngineArgs") and dotted_name(node) in ctx.model.attribute_targets:
        return None  # the module sets it on the args object first: reading it back works
    attributes = ctx.api.class_attributes(klass)
    if attributes is None or node.attr.value in attributes:
        return None
    return klass, node.attr.value


def _from_vllm(node: cst.ImportFrom) -> list[NodeEdit]:
    """``from vllm.engine.async_llm_engine import X`` -> ``from vllm import X``."""
    return [NodeEdit(node.module, cst.Name("vllm"))] if node.module is not None else []


@python_rule("VLL501")
def legacy_engine_import(ctx: PyContext) -> Iterator[PyFinding]:
    if not ctx.api.same_class("vllm.AsyncLLMEngine", "vllm.v1.engine.async_llm.AsyncLLM"):
        return  # the file's vLLM still has the V0 engine: these modules are the engine itself
    top_level = ctx.api.module_names("vllm")
    exported = top_level[0] if top_level else frozenset()
    for info in ctx.model.imports:
        if info.module not in LEGACY_ENGINE_MODULES and not any(n in LEGACY_ENGINE_MODULES for n, _, _ in info.names if isinstance(info.node, cst.Import)):
            continue
        fix = None
        if isinstance(info.node, cst.ImportFrom) and info.names and all(n in exported for n, _, _ in info.names):
            node = info.node
            fix = PyFix(
                applicability=Applicability.SAFE,
                build=partial(_from_vllm, node),
            )
        names = ", ".join(n for n, _, _ in info.names if isinstance(info.node, cst.ImportFrom)) or "AsyncLLMEngine"
        yield PyFinding(
            message=(
                f"{info.module} is a V0 engine module kept only as an alias of the V1 engine: "
                f"import {names} from vllm instead (`from vllm import {names}`)"
            ),
            node=info.node,
            statement=info.statement,
            fix=fix,
        )
