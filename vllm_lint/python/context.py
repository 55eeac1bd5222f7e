"""What a Python rule receives and what it gives back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from vllm_lint.diagnostics import Applicability, Severity
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.python.model import ModuleModel
from vllm_lint.python.semantics import Semantics
from vllm_lint.vllm_api import VllmApi, load_api


@dataclass(frozen=True, slots=True)
class NodeEdit:
    """Replace ``node`` in the module with ``replacement``.

    The engine turns this into the smallest text edit that makes the change, so
    everything around it stays byte-identical.
    """

    node: cst.CSTNode
    replacement: cst.CSTNode


@dataclass(frozen=True, slots=True)
class PyFix:
    """A Python finding's fix, its edits built when asked."""
    applicability: Applicability
    # Built lazily: producing edits can need positions, which only findings pay for. None: the run reads no
    # edits (PyContext.fix_edits is off) and this fix did not compute them; it is reported without edits.
    build: Callable[[], list[NodeEdit]] | None
    # What the fix does, when it says more than the rule's own fix title (its YAML's ``fix.title``), which the
    # registry puts here otherwise.
    title: str = ""


@dataclass(slots=True)
class PyFinding:
    """What a Python checker found, at which node."""
    message: str
    node: cst.CSTNode
    statement: cst.CSTNode | None = None
    severity: Severity | None = None
    fix: PyFix | None = None
    extra_noqa_nodes: tuple[cst.CSTNode, ...] = field(default=())
    # The code its checker is registered for (``@python_rule``), which the registry fills in.
    code: str = field(default="", kw_only=True)


@dataclass
class PyContext:
    """What a Python checker reads: the module, its model and semantics, and the run's settings."""
    path: str
    module: cst.Module
    model: ModuleModel
    semantics: Semantics
    settings: LaunchSettings
    enabled: frozenset[str]
    api_version: str | None = None
    # Whether the run reads fixes' edits (engine.runner.RunOptions.fix_edits); when it does not, a fix whose
    # edits are costly may set PyFix.build to None instead of computing them.
    fix_edits: bool = True

    @cached_property
    def api(self) -> VllmApi:
        return load_api(self.api_version)


# A checker, marked ``@vllm_lint.registry.python_rule(code)``: run once per parsed module with its code enabled.
PyRule = Callable[[PyContext], Iterator[PyFinding]]
