"""Where the rules' checkers are: the registry loads the rule modules by name, and nothing imports a rule module.

A Python checker registers itself with ``@python_rule(CODE)`` (``vllm_lint.python.context``) when its module
is loaded; every module of the package ``vllm_lint.python.rules`` is loaded here, by name, so a new rule
module needs no import anywhere. The launch rules (VLL2xx/4xx over the neutral launch record) are one module,
``vllm_lint.launch.rules``. Both are loaded on first use, not when this module is imported: they bring LibCST
(the Python checkers) or the rule tables, which a run over files with nothing to report never needs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from types import ModuleType

PYTHON_RULE_PACKAGE = "vllm_lint.python.rules"
LAUNCH_RULE_MODULE = "vllm_lint.launch.rules"


@cache
def python_rule_modules() -> tuple[ModuleType, ...]:
    """Every module of the Python rule package, loaded (loading registers its checkers)."""
    package = importlib.import_module(PYTHON_RULE_PACKAGE)
    return tuple(
        importlib.import_module(f"{PYTHON_RULE_PACKAGE}.{info.name}")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name)
        if not info.name.startswith("_")
    )


@cache
def launch_rules() -> ModuleType:
    """The launch rules' module: ``LAUNCH_RULES`` (code -> rule) and ``check_launch``."""
    return importlib.import_module(LAUNCH_RULE_MODULE)


def launch_codes() -> frozenset[str]:
    return frozenset(launch_rules().LAUNCH_RULES)


def check_launch(launch, settings, enabled: frozenset[str]) -> Iterator:
    """The findings of every enabled launch rule on one launch record."""
    return launch_rules().check_launch(launch, settings, enabled)
