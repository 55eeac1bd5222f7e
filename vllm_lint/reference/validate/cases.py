"""The bad servers to validate: files the user names, or the bad example servers of the rules."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.reference.validate.errors import ValidationError


@dataclass
class Case:
    """One bad server to validate: a file, or a rule's bad example."""

    name: str  # what the summary calls it: the file name, or "VLL101 example 1"
    source: str
    origin: str  # where it comes from: a path, or "rules/VLL101.yaml, example 1"
    explicit: bool = True  # named by the user (any fix will do) or discovered (only server rewrites)
    filename: str = "server.py"  # the copies' path in their project: a Django `views.py` is one by its name
    # Other files of its project, written beside it: an example's ``files``; for a file, the gRPC modules
    # generated beside it (``*_pb2.py``, ``*_pb2_grpc.py``) and the .proto files they come from.
    files: tuple[tuple[str, str], ...] = ()



def rule_cases(codes: tuple[str, ...] = ()) -> list[Case]:
    """The bad example servers of every rule whose ``fixed`` example is a server rewrite onto AsyncLLMEngine
    or the fallback's (:func:`rewrites_a_server`; VLL101, VLL102, VLL103), or of the rules in ``codes``; not those only their platform runs (Modal's), nor,
    unless named by number, those whose engine is given images (the harness's tiny model is a text model).
    A code may name one example by its number in the rule's YAML: ``VLL101:55``."""
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    wanted: dict[str, set[int]] = {}  # code -> example numbers (empty: all of them)
    for given in codes:
        code, _, chosen = given.upper().partition(":")
        if code not in rules or (chosen and not chosen.isdigit()):
            raise ValidationError(f"unknown rule code or example: {given} (a code, or CODE:NUMBER)")
        numbers = wanted.setdefault(code, set())
        if chosen:
            numbers.add(int(chosen))
    cases = []
    for code, rule in rules.items():
        if wanted and code not in wanted:
            continue
        for number, example in enumerate(rule.examples, start=1):
            if wanted.get(code) and number not in wanted[code]:
                continue
            if example.kind == "bad" and example.lang == "python" and example.fixed \
                    and rewrites_a_server(example.code, example.fixed) \
                    and not _runs_elsewhere(example.code) \
                    and (number in wanted.get(code, ()) or not _needs_a_vision_model(example.fixed)):
                cases.append(Case(f"{code} example {number}", example.clean_code,
                                  f"rules/{code}.yaml, example {number}", explicit=False,
                                  filename=example.filename or "server.py", files=example.files))
    if wanted and not cases:
        raise ValidationError(f"no example of {', '.join(codes)} is a server its fix rewrites")
    return cases


def _runs_elsewhere(source: str) -> bool:
    """A server only its platform runs (a Modal class, in Modal's containers): not a case validate can serve."""
    from vllm_lint.reference.python_source import imported_packages

    try:
        return "modal" in imported_packages(ast.parse(source))
    except SyntaxError:
        return False


def _needs_a_vision_model(fixed: str) -> bool:
    """A rewrite whose engine prompts carry images (``"multi_modal_data"``): only a vision model serves it."""
    try:
        tree = ast.parse(fixed)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Constant) and n.value == "multi_modal_data" for n in ast.walk(tree))


def file_cases(paths: list[Path]) -> list[Case]:
    """A file is a case; a directory gives each of its ``*.py`` files (kept only if the fix rewrites it)."""
    cases = []
    for path in paths:
        if path.is_dir():
            cases += [Case(p.name, p.read_text(), str(p), explicit=False, filename=p.name, files=_generated_beside(p))
                      for p in sorted(path.glob("*.py")) if not p.stem.endswith(_GENERATED_SUFFIXES)]
        else:
            cases.append(Case(path.name, path.read_text(), str(path), filename=path.name, files=_generated_beside(path)))
    return cases


_GENERATED_SUFFIXES = ("_pb2", "_pb2_grpc")


def _generated_beside(path: Path) -> tuple[tuple[str, str], ...]:
    folder = path.parent
    found = [p for p in sorted(folder.glob("*.py")) if p.stem.endswith(_GENERATED_SUFFIXES)] + sorted(folder.glob("*.proto"))
    return tuple((p.name, p.read_text()) for p in found)


def builds_async_engine(source: str) -> int:
    """How many times a module names ``AsyncLLMEngine`` (0 when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    return sum(1 for n in ast.walk(tree)
               if (isinstance(n, ast.Name) and n.id == "AsyncLLMEngine")
               or (isinstance(n, ast.Attribute) and n.attr == "AsyncLLMEngine")
               or (isinstance(n, ast.alias) and n.name.split(".")[-1] == "AsyncLLMEngine"))


# What the fallback fix adds where the engine rewrite is refused (python/rewrite/offload.py): the model calls in
# a worker thread (``await asyncio.to_thread(...)``) or under one module-level ``threading.RLock()``.
_OFFLOAD_CALLS = frozenset({"to_thread", "run_in_threadpool", "RLock"})


def offloads(source: str, calls: frozenset[str] = _OFFLOAD_CALLS) -> int:
    """How many times a module calls ``asyncio.to_thread``, ``run_in_threadpool`` or ``threading.RLock`` (or
    those of ``calls``; 0 when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call)
               and ((isinstance(n.func, ast.Attribute) and n.func.attr in calls)
                    or (isinstance(n.func, ast.Name) and n.func.id in calls)))


def rewrites_a_server(bad: str, fixed: str) -> bool:
    """Whether a fix is one validate runs: the server rewritten onto AsyncLLMEngine, or, where that is refused,
    its model calls moved off the event loop (the fallback)."""
    return builds_async_engine(fixed) > builds_async_engine(bad) or offloads(fixed) > offloads(bad)


def frees_the_loop(bad: str, fixed: str) -> bool:
    """Whether a fix claims to free an event loop: the engine rewrite, or the async fallback's worker threads
    (the lock fallback of ``def`` handlers keeps them in the framework's threads, where they were)."""
    to_thread = frozenset({"to_thread", "run_in_threadpool"})
    return builds_async_engine(fixed) > builds_async_engine(bad) or offloads(fixed, to_thread) > offloads(bad, to_thread)
