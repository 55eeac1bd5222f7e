"""The rule registry: which checker decides each code, and which byte conditions let a file through for it.

A rule is its YAML (``rules/VLLnnn.yaml``) and one checker function, marked with ``python_rule``,
``launch_rule``, ``project_rule`` or ``noqa_rule`` below, in a family module of a rule package (``RULE_PACKAGES``). Beside each family module
``<family>.py`` sits ``<family>_prefilter.py``: the family's pre-filter declarations, ``PREFILTER``, a dict from
each code to the conditions of which one must hold for a file to reach the checker (``LAUNCH`` for a rule over
the launch record: every surface's launch extractor has its own byte test for "this file launches vLLM").

Nothing imports a rule module. The registry finds the family modules by listing the rule packages' folders and
loads them by name (importlib), each kind only when it is needed: the declarations on every run (they import no
LibCST and no launch record), the checkers once a file is parsed. That lazy loading is the one way the import
graph goes back up (rule modules import the decorators here): it keeps LibCST off the fast path, where a run
over files with nothing to report never needs a checker.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

# The rule packages, by the kind of input their checkers read: a parsed Python module, a launch record (or an
# image reference), the facts every file of a run reported (a rule decided across files), or a file's noqa
# comments beside the findings of its other rules.
RULE_PACKAGES = {
    "python": "vllm_lint.python.rules",
    "launch": "vllm_lint.launch.rules",
    "project": "vllm_lint.project.rules",
    "noqa": "vllm_lint.engine.rules",
}
PREFILTER_SUFFIX = "_prefilter"
_MARK = "__vllm_lint_rule__"


class _NeedsLaunch:
    """The pre-filter condition of a rule over the launch record: the file launches vLLM."""

    __slots__ = ()
    name = "a vLLM launch"

    def __repr__(self) -> str:
        return "LAUNCH"


LAUNCH = _NeedsLaunch()


class RegistryError(RuntimeError):
    """A checker broke its registration."""


def _titled(finding):
    """The finding with its fix titled: by the checker when the title depends on the code fixed, else by the
    rule's YAML (``fix.title``), so that a title the two would both write lives in one place."""
    fix = getattr(finding, "fix", None)
    if fix is None:
        return finding
    if hasattr(finding, "fix_title"):  # a launch finding states a fix intent and titles it beside it
        if finding.fix_title is not None:
            return finding
        return dataclasses.replace(finding, fix_title=_rule_fix_title(finding.code))
    if fix.title:
        return finding
    return dataclasses.replace(finding, fix=dataclasses.replace(fix, title=_rule_fix_title(finding.code)))


def _rule_fix_title(code: str) -> str:
    from vllm_lint.rulebook import rule_head

    head = rule_head(code)
    if head is None or not head.fix_title:
        raise RegistryError(f"{code}: a fix without a title of its own needs `fix.title` in rules/{code}.yaml")
    return head.fix_title


class Checker:
    """One registered checker: the function that decides ``code`` for one kind of input."""

    __slots__ = ("code", "kind", "launches", "function")

    def __init__(self, code: str, kind: str, launches: str | None, function: Callable) -> None:
        self.code, self.kind, self.launches, self.function = code, kind, launches, function

    @property
    def where(self) -> str:
        """``module:function``, the place to read the rule's logic."""
        return f"{self.function.__module__}:{self.function.__qualname__}"

    def run(self, *inputs) -> Iterator:
        """The checker's findings on ``inputs``, each with the code the checker is registered for: a finding
        names no code of its own (one that names another is a bug in the checker, reported here)."""
        for finding in self.function(*inputs):
            if finding.code != self.code:
                if finding.code:
                    raise RegistryError(f"{self.where} is registered for {self.code} and reported {finding.code}")
                finding = dataclasses.replace(finding, code=self.code)
            yield _titled(finding)

    def __repr__(self) -> str:
        return f"Checker({self.code}, {self.where})"


def _marker(code: str, launches: str | None) -> Callable[[Callable], Callable]:
    def mark(function: Callable) -> Callable:
        setattr(function, _MARK, (code, launches))
        return function

    return mark


def python_rule(code: str) -> Callable[[Callable], Callable]:
    """Mark a checker of a parsed Python module: ``(PyContext) -> Iterator[PyFinding]``, run once per file."""
    return _marker(code, None)


def launch_rule(code: str, launches: str = "engine") -> Callable[[Callable], Callable]:
    """Mark a checker of the launch record: ``(Launch, LaunchSettings) -> Iterator[LaunchFinding]``, run once per
    launch of kind ``launches`` ("engine": an engine configured on any surface; "module": ``python -m vllm.X`` for
    a module vLLM does not have; "image": ``(ImageReference, LaunchSettings)``, each container image a
    command-line file names)."""
    return _marker(code, launches)


def project_rule(code: str) -> Callable[[Callable], Callable]:
    """Mark a checker decided across files: ``(dict[path, FileFacts]) -> Iterator[ProjectFinding]``, run once
    after every file of a run has its result (vllm_lint.engine.project)."""
    return _marker(code, None)


def noqa_rule(code: str) -> Callable[[Callable], Callable]:
    """Mark a checker of a file's noqa comments: ``(FileNoqa) -> Iterator[NoqaFinding]``, run once per file after
    its other rules, before the comments take their findings out (vllm_lint.engine.suppressions)."""
    return _marker(code, None)


def family_modules(kind: str, declarations: bool = False) -> list[str]:
    """The dotted names of a rule package's family modules (or of their ``_prefilter`` declarations), sorted."""
    package = RULE_PACKAGES[kind]
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), *package.split(".")[1:])
    names = []
    for entry in os.listdir(folder):
        stem, dot, extension = entry.rpartition(".")
        if extension != "py" or not dot or stem.startswith("_"):
            continue
        if stem.endswith(PREFILTER_SUFFIX) == declarations:
            names.append(f"{package}.{stem}")
    return sorted(names)


def declaration_module(family: str) -> str:
    return family + PREFILTER_SUFFIX


@lru_cache(maxsize=None)
def prefilter_table() -> dict[str, tuple[object, ...]]:
    """Each code's pre-filter conditions, from every family's declarations (VLL303 has a Python checker and a
    launch checker: its conditions are both families')."""
    table: dict[str, tuple[object, ...]] = {}
    for kind in RULE_PACKAGES:
        for name in family_modules(kind, declarations=True):
            for code, conditions in importlib.import_module(name).PREFILTER.items():
                table[code] = (*table.get(code, ()), *conditions)
    return table


@lru_cache(maxsize=None)
def launch_codes() -> frozenset[str]:
    """The codes that read launches: a launch rule's (what a command-line file can report), and a project rule's
    that joins the servers files start (a command-line file reports its facts)."""
    return frozenset(code for code, conditions in prefilter_table().items() if LAUNCH in conditions)


@lru_cache(maxsize=None)
def checkers(kind: str) -> tuple[Checker, ...]:
    """Every checker of one kind, in code order (this imports the family modules: LibCST for "python")."""
    found = [checker for name in family_modules(kind) for checker in _family_checkers(name, kind)]
    return tuple(sorted(found, key=lambda checker: (checker.code, checker.where)))


@lru_cache(maxsize=None)
def _family_checkers(name: str, kind: str) -> tuple[Checker, ...]:
    from vllm_lint.codecache import compiled_dataclasses

    # What a rule module imports (the rewrite, the launch record) defines dataclasses: keep their code (codecache.py).
    with compiled_dataclasses(f"rules-{kind}"):
        module = importlib.import_module(name)
    found = []
    for value in vars(module).values():
        mark = getattr(value, _MARK, None)
        if mark is not None and getattr(value, "__module__", None) == name:
            found.append(Checker(mark[0], kind, mark[1], value))
    return tuple(found)


def python_checkers(enabled: frozenset[str]) -> Iterator[Callable]:
    for checker in checkers("python"):
        if checker.code in enabled:
            yield checker.run


def check_launch(launch, settings, enabled: frozenset[str]) -> Iterator:
    """Every enabled launch rule's findings on one launch record (a "module" launch configures no engine, so
    only the rules of module launches look at it)."""
    launches = "module" if launch.kind == "module" else "engine"
    for checker in checkers("launch"):
        if checker.launches == launches and checker.code in enabled:
            yield from checker.run(launch, settings)


def check_image(image, settings, enabled: frozenset[str]) -> Iterator:
    """Every enabled image rule's findings on one container image reference."""
    for checker in checkers("launch"):
        if checker.launches == "image" and checker.code in enabled:
            yield from checker.run(image, settings)


@lru_cache(maxsize=None)
def project_codes() -> frozenset[str]:
    """The codes decided across files: a file's lint reports its facts only when one of them is enabled."""
    return frozenset(checker.code for checker in checkers("project"))


@lru_cache(maxsize=None)
def noqa_rule_codes() -> frozenset[str]:
    """The codes decided on a file's noqa comments (read off the declarations: no checker is loaded for it)."""
    return frozenset(
        code for name in family_modules("noqa", declarations=True) for code in importlib.import_module(name).PREFILTER
    )


def check_noqa(file, enabled: frozenset[str]) -> Iterator:
    """Every enabled noqa rule's findings on one file."""
    for checker in checkers("noqa"):
        if checker.code in enabled:
            yield from checker.run(file)


def implementations(code: str) -> list[Checker]:
    """The checkers of one code, importing only the families that declare it."""
    return [
        checker
        for kind in RULE_PACKAGES
        for name in family_modules(kind)
        if code in _declared_codes(declaration_module(name))
        for checker in _family_checkers(name, kind)
        if checker.code == code
    ]


def _declared_codes(declarations: str) -> Iterable[str]:
    try:
        return importlib.import_module(declarations).PREFILTER
    except ModuleNotFoundError:
        return ()


def consistency_problems() -> list[str]:
    """What keeps the registry from matching the rule files: for the tests, and for ``scripts/new_rule.py``."""
    from vllm_lint.rulebook import PARSE_ERROR_CODE, all_codes

    problems = []
    codes = set(all_codes()) - {PARSE_ERROR_CODE}
    decided = set()
    for kind in RULE_PACKAGES:
        families = family_modules(kind)
        declarations = family_modules(kind, declarations=True)
        for name in sorted(set(declarations) - {declaration_module(f) for f in families}):
            problems.append(f"{name} declares pre-filter conditions for no family module")
        seen: dict[tuple[str, str | None], str] = {}
        for checker in checkers(kind):
            key = (checker.code, checker.launches)
            if key in seen:
                problems.append(f"{checker.code} has two {kind} checkers: {seen[key]} and {checker.where}")
            seen[key] = checker.where
            decided.add(checker.code)
            family = checker.function.__module__
            declared = _declared_codes(declaration_module(family))
            if checker.code not in declared:
                problems.append(f"{checker.where} decides {checker.code}, which {declaration_module(family)} does not declare")
            if checker.code not in codes:
                problems.append(f"{checker.where} decides {checker.code}, which has no rules/{checker.code}.yaml")
        for family in families:
            for code in _declared_codes(declaration_module(family)):
                if not any(checker.code == code for checker in _family_checkers(family, kind)):
                    problems.append(f"{declaration_module(family)} declares {code}, which no checker in {family} decides")
    problems += [f"rules/{code}.yaml has no checker" for code in sorted(codes - decided)]
    return problems
