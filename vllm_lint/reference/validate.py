"""``vllm-lint validate``: prove that an autofix keeps a server's behaviour and measure what it gains.

The bad servers are the files given (a folder gives each ``*.py`` file the autofixer rewrites into a server),
or, with none, the bad example servers of every rule whose fix rewrites a server onto AsyncLLMEngine (VLL101,
VLL103, ...: the rule YAML's examples that have a ``fixed`` version). For each one the harness:

1. points the model the source names (``pipeline(..., model=...)``, ``LLM(...)``, ``AsyncEngineArgs(model=...)``
   ...) at one local model directory, then produces the fixed version with vllm-lint's own fixer, as
   ``vllm-lint check --fix --unsafe-fixes`` would (``fix-max-model-len`` set to the model's context), unless
   ``--fixed`` gives one;
2. makes both files runnable as they stand (a snippet without ``app = FastAPI()`` gets one injected, and a few
   forgotten stdlib imports such as ``import uuid`` are added; each injection is reported);
3. starts each server in turn with uvicorn on 127.0.0.1 through :mod:`vllm_lint.reference.launch`, which
   makes decoding greedy with a fixed number of new tokens on both sides (transformers' pipeline or vLLM's
   ``LLM`` for the bad one, AsyncLLMEngine for the fixed one) and fits vLLM to the CPU when there is no GPU;
4. finds the endpoint from the app's OpenAPI schema (the POST route taking a prompt-like field), asks the
   bad server every prompt once, one at a time (its reference answers), then sends both servers the same
   load (fixed prompts, ``--concurrency`` in flight, ``--requests`` in all);
5. checks that each fixed response under load has the bad server's JSON shape and the same completion text
   (what the bad server itself answers under load is compared with its reference answers and reported: a
   server on vLLM's offline ``LLM`` called from several threads fails or mixes up answers), and reports tokens/s, p50/p95 latency, time to first token for streams and the fixed/bad throughput ratio
   (optionally sweeping concurrency 1, 4, 16, 64 for a plot).
"""

from __future__ import annotations

import ast
import asyncio
import difflib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record, RequestSpec, run_load

SWEEP_LEVELS = (1, 4, 16, 64)
PROMPT_FIELDS = ("prompt", "text", "input", "query", "message", "question", "inputs")
# Stdlib modules a snippet may use without importing them (the seed "good" server calls uuid.uuid4()
# with no `import uuid`): the harness adds the import and says so.
STDLIB_AUTO_IMPORTS = ("uuid", "asyncio", "json", "time", "os", "logging")

Progress = Callable[[str], None]


class ValidationError(Exception):
    """The harness could not run (a server did not start, the autofixer failed, ...)."""


# --------------------------------------------------------------------------------------------------
# Sources


@dataclass
class Case:
    """One bad server to validate: a file, or a rule's bad example."""

    name: str  # what the summary calls it: the file name, or "VLL101 example 1"
    source: str
    origin: str  # where it comes from: a path, or "rules/VLL101.yaml, example 1"
    explicit: bool = True  # named by the user (any fix will do) or discovered (only server rewrites)


@dataclass
class PreparedSource:
    role: str
    path: Path
    injected: list[str] = field(default_factory=list)


def rule_cases(codes: tuple[str, ...] = ()) -> list[Case]:
    """The bad example servers of every rule whose ``fixed`` example is a server rewrite onto AsyncLLMEngine
    (VLL101, VLL103, ...), or of the rules in ``codes``."""
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    unknown = [c for c in codes if c.upper() not in rules]
    if unknown:
        raise ValidationError(f"unknown rule code(s): {', '.join(unknown)}")
    wanted = {c.upper() for c in codes}
    cases = []
    for code, rule in rules.items():
        if wanted and code not in wanted:
            continue
        for number, example in enumerate(rule.examples, start=1):
            if example.kind == "bad" and example.lang == "python" and example.fixed \
                    and builds_async_engine(example.fixed) > builds_async_engine(example.code):
                cases.append(Case(f"{code} example {number}", example.clean_code,
                                  f"rules/{code}.yaml, example {number}", explicit=False))
    if wanted and not cases:
        raise ValidationError(f"no example of {', '.join(sorted(wanted))} is a server its fix rewrites")
    return cases


def file_cases(paths: list[Path]) -> list[Case]:
    """A file is a case; a directory gives each of its ``*.py`` files (kept only if the fix rewrites it)."""
    cases = []
    for path in paths:
        if path.is_dir():
            cases += [Case(p.name, p.read_text(), str(p), explicit=False) for p in sorted(path.glob("*.py"))]
        else:
            cases.append(Case(path.name, path.read_text(), str(path)))
    return cases


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


# Calls that name a model, and where: (keyword, positional index).
MODEL_ARGUMENTS = {"pipeline": ("model", 1), "LLM": ("model", 0), "AsyncEngineArgs": ("model", 0),
                   "EngineArgs": ("model", 0), "from_pretrained": ("pretrained_model_name_or_path", 0)}


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def point_at_model(source: str, model: Path) -> tuple[str, list[str]]:
    """``source`` with the model each ``pipeline``/``LLM``/``(Async)EngineArgs``/``from_pretrained`` call names
    (a string literal, or a module-level name bound to one) replaced by ``model``; and the names replaced.

    This is what a user does before running a server on another model; it happens before the autofixer runs,
    so the fixed file names the same local model as the bad one.
    """
    tree = ast.parse(source)
    constants: dict[str, ast.Constant] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value
    literals: dict[tuple[int, int], ast.Constant] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        where = MODEL_ARGUMENTS.get(_called_name(node.func) or "")
        if where is None:
            continue
        keyword, position = where
        values = [k.value for k in node.keywords if k.arg in (keyword, "tokenizer")]
        if not any(k.arg == keyword for k in node.keywords) and len(node.args) > position:
            values.append(node.args[position])
        for value in values:
            if isinstance(value, ast.Name) and value.id in constants:
                value = constants[value.id]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                literals[(value.lineno, value.col_offset)] = value
    if not literals:
        return source, []
    text = str(model)
    replacement = f'"{text}"' if '"' not in text and "\\" not in text else repr(text)
    lines = source.splitlines(keepends=True)
    names = []
    # ast's columns are UTF-8 byte offsets; replace from the end so earlier positions stay valid.
    for node in sorted(literals.values(), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        if node.end_lineno != node.lineno:
            continue  # an implicitly concatenated or triple-quoted name over several lines: leave it
        line = lines[node.lineno - 1].encode()
        lines[node.lineno - 1] = (line[:node.col_offset] + replacement.encode()
                                  + line[node.end_col_offset:]).decode()
        names.append(node.value)
    return "".join(lines), sorted(set(names))


def _module_bindings(tree: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def make_runnable(source: str) -> tuple[str, list[str]]:
    """Return ``source`` with what it needs to import and serve, and a note per injected line."""
    tree = ast.parse(source)
    bound = _module_bindings(tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    lines: list[str] = []
    notes: list[str] = []
    for module in STDLIB_AUTO_IMPORTS:
        if module in used and module not in bound:
            lines.append(f"import {module}  # injected by vllm-lint validate")
            notes.append(f"import {module} (used but never imported)")
    if "app" not in bound:
        lines.append("from fastapi import FastAPI as _VllmLintFastAPI  # injected by vllm-lint validate")
        lines.append("app = _VllmLintFastAPI()  # injected by vllm-lint validate: the file defines no app")
        notes.append("app = FastAPI() (the file uses @app routes but never creates app)")
    if not lines:
        return source, notes
    # After the docstring and `from __future__` imports, before anything that may use the names.
    insert_at = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) \
            and isinstance(node.value.value, str) and insert_at == 0 and node is tree.body[0]
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            insert_at = node.end_lineno or insert_at
        else:
            break
    src_lines = source.splitlines(keepends=True)
    if src_lines and not src_lines[-1].endswith("\n"):
        src_lines[-1] += "\n"
    new = src_lines[:insert_at] + [line + "\n" for line in lines] + src_lines[insert_at:]
    return "".join(new), notes


class NotARewrite(ValidationError):
    """The autofixer does not rewrite this file into a server on vLLM (skipped when it was discovered)."""


def run_autofixer(path: Path, progress: Progress, *, fix_max_model_len: int | None = None) -> dict[str, int]:
    """Fix ``path`` in place with vllm-lint's own fixer, as ``vllm-lint check --fix --unsafe-fixes`` would,
    with every rule enabled; return the fixes applied, by code.

    ``fix_max_model_len`` is the fix setting of that name (the model's context, so that the fixed engine
    fits the model it is run with); the rest is the default configuration, whatever the file's folder holds.
    """
    from vllm_lint.config import Settings
    from vllm_lint.engine.fixer import fix_file

    settings = Settings(root=path.parent.resolve(), **(
        {"fix_max_model_len": fix_max_model_len} if fix_max_model_len else {}))
    progress(f"autofix: vllm-lint check --fix --unsafe-fixes {path.name}"
             + (f" (fix-max-model-len = {fix_max_model_len})" if fix_max_model_len else ""))
    try:
        outcome = fix_file(path, unsafe=True, settings=settings)
    except Exception as exc:  # a crash of the fixer is a failed validation, reported as such
        raise ValidationError(f"the autofixer failed on {path.name}: {type(exc).__name__}: {exc}") from exc
    path.write_bytes(outcome.fixed)
    return dict(outcome.applied)


@dataclass
class PreparedCase:
    case: Case
    bad: PreparedSource
    fixed: PreparedSource
    diff: str | None
    applied: dict[str, int]
    model_names: list[str]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").lower() or "server"


def prepare_case(case: Case, model: Path, workdir: Path, progress: Progress, fixed: Path | None = None
                 ) -> PreparedCase:
    """Write the bad server pointed at ``model`` and its fixed version (the autofixer's, or ``fixed``) into
    a folder of ``workdir``, both made runnable."""
    directory = workdir / _slug(case.name)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        bad_text, names = point_at_model(case.source, model)
    except SyntaxError as exc:
        raise ValidationError(f"{case.origin} does not parse: {exc}") from exc
    if names:
        progress(f"{case.name}: model {', '.join(names)} -> {model}")
    bad_copy, fixed_copy = directory / "bad_server.py", directory / "fixed_server.py"
    bad_copy.write_text(bad_text)
    applied: dict[str, int] = {}
    diff = None
    if fixed is None:
        fixed_copy.write_text(bad_text)
        from vllm_lint.reference.launch import model_context

        applied = run_autofixer(fixed_copy, progress, fix_max_model_len=model_context(str(model)))
        after = fixed_copy.read_text()
        if after == bad_text:
            raise NotARewrite("the autofixer changed nothing: there is no fix to validate")
        if not case.explicit and builds_async_engine(after) <= builds_async_engine(bad_text):
            raise NotARewrite(f"the autofixer's fixes ({', '.join(sorted(applied))}) do not "
                              "rewrite it into a server on AsyncLLMEngine")
        diff = "".join(difflib.unified_diff(bad_text.splitlines(True), after.splitlines(True), "bad", "fixed"))
        progress(f"{case.name}: fixed " + ", ".join(f"{n} x {code}" for code, n in sorted(applied.items())))
    else:
        try:
            fixed_text, _ = point_at_model(fixed.read_text(), model)
        except SyntaxError as exc:
            raise ValidationError(f"the fixed file does not parse: {exc}") from exc
        fixed_copy.write_text(fixed_text)
    prepared = []
    for role, path in (("bad", bad_copy), ("fixed", fixed_copy)):
        try:
            text, notes = make_runnable(path.read_text())
        except SyntaxError as exc:
            raise ValidationError(f"the {role} file does not parse: {exc}") from exc
        path.write_text(text)
        for note in notes:
            progress(f"{case.name}: {role}: injected {note}")
        prepared.append(PreparedSource(role, path, notes))
    return PreparedCase(case, prepared[0], prepared[1], diff, applied, names)


# --------------------------------------------------------------------------------------------------
# Servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One server file under the launcher, in its own process group; always fully killed on exit."""

    def __init__(self, source: PreparedSource, model: Path, max_tokens: int, *, log_dir: Path,
                 kv_cache_bytes: int = 256 * 2**20, max_num_seqs: int | None = 16,
                 start_timeout: float = 600.0):
        self.source, self.model, self.max_tokens = source, model, max_tokens
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"{source.role}.log"
        self.kv_cache_bytes, self.max_num_seqs = kv_cache_bytes, max_num_seqs
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.startup_s: float | None = None

    def __enter__(self) -> "ServerProcess":
        cmd = [sys.executable, "-m", "vllm_lint.reference.launch", "--app-file", str(self.source.path),
               "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
               "--max-tokens", str(self.max_tokens), "--kv-cache-memory-bytes", str(self.kv_cache_bytes)]
        if self.max_num_seqs:
            cmd += ["--max-num-seqs", str(self.max_num_seqs)]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
                   PYTHONUNBUFFERED="1")
        # The launcher must import the vllm_lint this harness runs from, installed or not.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, cwd=self.source.path.parent)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.startup_s = time.perf_counter() - t0
        return self

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ValidationError(f"the {self.source.role} server exited with {self.proc.returncode}:\n"
                                      + self.log_tail())
            try:
                httpx.get(self.base_url + "/openapi.json", timeout=2.0, trust_env=False)
                return  # any HTTP answer: uvicorn is up and the lifespan start-up has finished
            except httpx.HTTPError:
                time.sleep(0.5)
        raise ValidationError(f"the {self.source.role} server did not start within {self.start_timeout:.0f}s:\n"
                              + self.log_tail())

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            kill_process_tree(self.proc)
            self.proc = None
        if getattr(self, "_log", None):
            self._log.close()


def kill_process_tree(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop ``proc`` and every process it started (vLLM's EngineCore workers included)."""
    try:
        import psutil

        children = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # psutil missing or the process already gone
        children = []
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in children:  # in case one left the process group
        try:
            child.kill()
        except Exception:
            pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


# --------------------------------------------------------------------------------------------------
# Endpoint discovery, prompts, comparison


@dataclass
class Endpoint:
    path: str
    field: str
    where: str  # "query" or "json"
    messages: bool = False

    def request(self, prompt: str) -> RequestSpec:
        value: Any = [{"role": "user", "content": prompt}] if self.messages else prompt
        if self.where == "query":
            return RequestSpec(self.path, params={self.field: value})
        return RequestSpec(self.path, json={self.field: value})

    def describe(self) -> str:
        return f"POST {self.path} with {self.field!r} in the {'query string' if self.where == 'query' else 'JSON body'}"


def _resolve(schema: dict, openapi: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = openapi
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part, {})
        schema = node
    return schema if isinstance(schema, dict) else {}


def discover_endpoint(openapi: dict) -> Endpoint:
    """The POST route that takes a prompt: a query parameter or a JSON body property named like one."""
    candidates: list[tuple[int, Endpoint]] = []
    for path, ops in (openapi.get("paths") or {}).items():
        op = (ops or {}).get("post")
        if not op:
            continue
        for param in op.get("parameters", []):
            name = param.get("name", "")
            if param.get("in") == "query" and name in PROMPT_FIELDS:
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "query")))
        body = ((op.get("requestBody") or {}).get("content") or {}).get("application/json", {})
        schema = _resolve(body.get("schema", {}), openapi)
        props = schema.get("properties") or {}
        for name in PROMPT_FIELDS:
            if name in props:
                candidates.append((PROMPT_FIELDS.index(name), Endpoint(path, name, "json")))
        if "messages" in props:
            candidates.append((len(PROMPT_FIELDS), Endpoint(path, "messages", "json", messages=True)))
    if not candidates:
        raise ValidationError("no POST route with a prompt-like field (" + ", ".join(PROMPT_FIELDS)
                              + ") in the bad server's OpenAPI schema; pass --endpoint/--prompt-field")
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1]


_PROMPT_WORDS = ("model", "server", "request", "token", "batch", "engine", "cache", "memory", "stream",
                 "latency", "queue", "worker", "event", "loop", "answer", "question", "value", "result")


def prompt_for(i: int) -> str:
    """The i-th fixed prompt: short, distinct, deterministic."""
    w = _PROMPT_WORDS
    return (f"Request {i}: tell me about the {w[i % len(w)]} and the {w[(i * 7 + 3) % len(w)]} "
            f"of the {w[(i * 5 + 1) % len(w)]}.")


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "str"


def response_shape(record: Record) -> Any:
    if record.streamed:
        kind = "event-stream" if "event-stream" in record.content_type else "text-stream"
        events = record.body if isinstance(record.body, list) else []
        first = next((e for e in events if isinstance(e, dict)), None)
        return {"stream": kind, "event": _shape(first) if first is not None else None}
    if "json" in record.content_type:
        return _shape(record.body)
    return "text"


def _string_leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _string_leaves(v, path + (k,))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _string_leaves(v, path + (i,))]
    return []


def response_text(record: Record) -> str:
    """The generated text a response carries, whatever its shape."""
    body = record.body
    if isinstance(body, str):
        return body
    if record.streamed and isinstance(body, list):
        parts = []
        for event in body:
            if isinstance(event, dict) and event.get("choices"):
                choice = event["choices"][0]
                parts.append(choice.get("text") or (choice.get("delta") or {}).get("content") or "")
            elif isinstance(event, str) and event != "[DONE]":
                parts.append(event)
        return "".join(parts)
    if isinstance(body, dict) and body.get("choices"):
        choice = body["choices"][0]
        return choice.get("text") or (choice.get("message") or {}).get("content") or ""
    leaves = _string_leaves(body)
    return max((text for _, text in leaves), key=len, default="")


def completion_of(text: str, prompt: str) -> tuple[str, bool]:
    """(completion, echoed): servers built on a text-generation pipeline echo the prompt first."""
    if text.startswith(prompt):
        return text[len(prompt):], True
    return text, False


@dataclass
class Comparison:
    compared: int = 0
    same_shape: int = 0
    same_text: int = 0
    echo_differs: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.compared > 0 and self.same_shape == self.compared and self.same_text == self.compared

    def as_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "same_shape": self.same_shape, "same_text": self.same_text,
                "echo_differs": self.echo_differs, "passed": self.passed, "mismatches": self.mismatches[:10]}


def compare(bad: LoadResult, fixed: LoadResult, prompt: Callable[[int], str]) -> Comparison:
    result = Comparison()
    fixed_by_index = {r.index: r for r in fixed.records}
    for b in bad.records:
        f = fixed_by_index.get(b.index)
        if f is None or not b.ok or not f.ok:
            result.mismatches.append({"index": b.index, "problem": "missing or failed response",
                                      "bad_error": b.error, "fixed_error": getattr(f, "error", "missing")})
            result.compared += 1
            continue
        result.compared += 1
        bs, fs = response_shape(b), response_shape(f)
        shape_ok = bs == fs
        result.same_shape += shape_ok
        b_text, b_echo = completion_of(response_text(b), prompt(b.index))
        f_text, f_echo = completion_of(response_text(f), prompt(f.index))
        text_ok = b_text == f_text
        result.same_text += text_ok
        result.echo_differs += b_echo != f_echo
        if not (shape_ok and text_ok):
            item: dict[str, Any] = {"index": b.index}
            if not shape_ok:
                item["bad_shape"], item["fixed_shape"] = bs, fs
            if not text_ok:
                at = next((k for k, (x, y) in enumerate(zip(b_text, f_text)) if x != y),
                          min(len(b_text), len(f_text)))
                item["first_difference_at_char"] = at
                item["bad_text"], item["fixed_text"] = b_text[max(0, at - 20):at + 40], f_text[max(0, at - 20):at + 40]
            result.mismatches.append(item)
    return result


# --------------------------------------------------------------------------------------------------
# The run


@dataclass
class Options:
    cases: list[Case]
    model: Path
    fixed: Path | None = None  # a fixed file of the user's instead of the autofixer's (one case only)
    concurrency: int = 16
    requests: int = 64
    max_tokens: int = 64
    timeout: float = 300.0
    max_seconds: float = 600.0
    sweep: tuple[int, ...] = ()
    workdir: Path | None = None
    endpoint: Endpoint | None = None
    kv_cache_bytes: int = 256 * 2**20
    max_num_seqs: int | None = 16
    start_timeout: float = 600.0


@dataclass
class Report:
    """One bad server against its fixed version."""

    options: Options
    prepared: PreparedCase
    endpoint: Endpoint
    main: dict[str, LoadResult]
    sweep: dict[str, dict[int, LoadResult]]
    comparison: Comparison  # the fixed server under load against the bad server's one-at-a-time answers
    startup_s: dict[str, float]
    reference: LoadResult | None = None  # the bad server, the same prompts one at a time
    bad_under_load: Comparison | None = None  # the bad server under load against its own reference

    @property
    def passed(self) -> bool:
        return self.comparison.passed

    @property
    def case(self) -> Case:
        return self.prepared.case

    @property
    def injected(self) -> dict[str, list[str]]:
        return {"bad": self.prepared.bad.injected, "fixed": self.prepared.fixed.injected}

    @property
    def ratio(self) -> float | None:
        bad = self.main["bad"].stats()["tokens_per_s"]
        fixed = self.main["fixed"].stats()["tokens_per_s"]
        return round(fixed / bad, 2) if bad else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.case.name, "origin": self.case.origin,
            "fixed_by": str(self.options.fixed) if self.options.fixed else "vllm-lint check --fix --unsafe-fixes",
            "fixes_applied": self.prepared.applied, "model_names_replaced": self.prepared.model_names,
            "endpoint": self.endpoint.describe(), "injected": self.injected, "startup_s": self.startup_s,
            "bad": self.main["bad"].stats(), "fixed": self.main["fixed"].stats(),
            "bad_one_at_a_time": self.reference.stats() if self.reference else None,
            "comparison": self.comparison.as_dict(), "fixed_over_bad_throughput": self.ratio,
            "bad_under_load_vs_one_at_a_time": self.bad_under_load.as_dict() if self.bad_under_load else None,
            "sweep": {str(c): {role: self.sweep[role][c].stats() for role in ("bad", "fixed")}
                      for c in sorted(self.sweep.get("bad", {})) if c in self.sweep.get("fixed", {})},
            "autofix_diff": self.prepared.diff,
        }


@dataclass
class Validation:
    """Every case of one ``vllm-lint validate`` run."""

    options: Options
    reports: list[Report] = field(default_factory=list)
    skipped: list[tuple[Case, str]] = field(default_factory=list)  # discovered files the fix does not rewrite
    failed: list[tuple[Case, str]] = field(default_factory=list)  # cases the harness could not run

    @property
    def passed(self) -> bool:
        return bool(self.reports) and not self.failed and all(r.passed for r in self.reports)

    @property
    def ratio(self) -> float | None:
        """The lowest fixed/bad throughput ratio of the cases (a bad server that generated nothing under load,
        against a fixed one that did, has no finite ratio and cannot be the lowest)."""
        ratios = [r.ratio for r in self.reports if r.ratio is not None]
        return min(ratios) if ratios else None

    def as_dict(self) -> dict[str, Any]:
        o = self.options
        return {
            "model": str(o.model), "concurrency": o.concurrency, "requests": o.requests,
            "max_tokens": o.max_tokens, "decoding": "greedy", "passed": self.passed,
            "fixed_over_bad_throughput": self.ratio, "runs": [r.as_dict() for r in self.reports],
            "skipped": [{"name": c.name, "origin": c.origin, "reason": why} for c, why in self.skipped],
            "failed": [{"name": c.name, "origin": c.origin, "error": why} for c, why in self.failed],
        }


def _token_counter(model: Path, prompt: Callable[[int], str]) -> Callable[[Record], int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model))

    def count(record: Record) -> int:
        text, _ = completion_of(response_text(record), prompt(record.index))
        return len(tokenizer.encode(text, add_special_tokens=False)) if text else 0

    return count


def generated_tokens(base_url: str) -> int | None:
    """The launcher's count of tokens generated so far, or None when the app could not expose it."""
    import httpx

    from vllm_lint.reference.launch import STATS_PATH

    try:
        resp = httpx.get(base_url + STATS_PATH, timeout=10, trust_env=False)
        return int(resp.json()["generated_tokens"]) if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


def _load(base_url: str, endpoint: Endpoint, *, requests: int, concurrency: int, options: Options,
          counter, progress: Progress, offset: int = 0) -> LoadResult:
    before = generated_tokens(base_url)
    result = asyncio.run(run_load(
        base_url, lambda i: endpoint.request(prompt_for(i + offset)), requests=requests,
        concurrency=concurrency, timeout=options.timeout, max_seconds=options.max_seconds,
        count_tokens=(lambda r: counter(Record(r.index + offset, r.status, r.latency, r.ttfb, r.body,
                                               r.content_type, r.streamed))),
        progress=progress))
    after = generated_tokens(base_url)
    if before is not None and after is not None:
        result.server_tokens = after - before
    return result


def run_validation(options: Options, progress: Progress = print) -> Validation:
    if options.fixed is not None and len(options.cases) != 1:
        raise ValidationError("a fixed file of your own goes with exactly one bad file")
    if not options.cases:
        raise ValidationError("nothing to validate")
    own_tmp = options.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="vllm-lint-validate-")) if own_tmp else options.workdir
    validation = Validation(options)
    try:
        counter = _token_counter(options.model, prompt_for)
        for number, case in enumerate(options.cases, start=1):
            progress(f"[{number}/{len(options.cases)}] {case.name} ({case.origin})")
            try:
                prepared = prepare_case(case, options.model, workdir, progress, options.fixed)
            except NotARewrite as exc:
                if case.explicit:
                    validation.failed.append((case, str(exc)))
                else:
                    validation.skipped.append((case, str(exc)))
                progress(f"{case.name}: {'skipped' if not case.explicit else 'FAILED'}: {exc}")
                continue
            try:
                validation.reports.append(_run_case(prepared, options, workdir, counter, progress))
            except ValidationError as exc:
                validation.failed.append((case, str(exc)))
                progress(f"{case.name}: FAILED: {exc}")
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)
    return validation


def _run_case(prepared: PreparedCase, options: Options, workdir: Path, counter, progress: Progress) -> Report:
    name = prepared.case.name
    if prepared.diff:
        progress(f"{name}: autofix diff:\n" + prepared.diff.rstrip())
    endpoint = options.endpoint
    main: dict[str, LoadResult] = {}
    sweep: dict[str, dict[int, LoadResult]] = {"bad": {}, "fixed": {}}
    startup: dict[str, float] = {}
    reference: LoadResult | None = None
    for source in (prepared.bad, prepared.fixed):
        role = source.role
        progress(f"{name}: {role}: starting {source.path.name} on 127.0.0.1 (model {options.model})")
        with ServerProcess(source, options.model, options.max_tokens, log_dir=source.path.parent,
                           kv_cache_bytes=options.kv_cache_bytes, max_num_seqs=options.max_num_seqs,
                           start_timeout=options.start_timeout) as server:
            startup[role] = round(server.startup_s or 0.0, 1)
            progress(f"{name}: {role}: up in {startup[role]:.1f}s at {server.base_url}")
            if endpoint is None:
                import httpx

                schema = httpx.get(server.base_url + "/openapi.json", timeout=10, trust_env=False).json()
                endpoint = discover_endpoint(schema)
                progress(f"{name}: endpoint: {endpoint.describe()}")
            warm = _load(server.base_url, endpoint, requests=1, concurrency=1, options=options,
                         counter=counter, progress=lambda _: None, offset=10_000)
            if not warm.ok:
                raise ValidationError(f"the {role} server failed its warm-up request: "
                                      f"{warm.records[0].error if warm.records else 'no answer'}\n"
                                      + server.log_tail())
            if role == "fixed":
                # One wave at the measured concurrency first: vLLM on CPU is slow on the first batches of each
                # new shape, and that is start-up, not throughput. (The bad server is warmed by the reference
                # pass below.) Its answers are not used.
                _load(server.base_url, endpoint, requests=options.concurrency, concurrency=options.concurrency,
                      options=options, counter=counter, progress=lambda _: None, offset=20_000)
            if role == "bad":
                # The answers to compare with: every prompt once, one at a time, before any load. A server
                # that is wrong under concurrency (vLLM's LLM called from several threads) still gives its
                # intended answers here; what it does under load is compared with them separately.
                progress(f"{name}: bad: reference answers, {options.requests} requests one at a time")
                reference = _load(server.base_url, endpoint, requests=options.requests, concurrency=1,
                                  options=options, counter=counter, progress=progress)
                progress(f"{name}: bad: one at a time: {_line(reference)}")
                if len(reference.ok) != options.requests:
                    failed = next(r for r in reference.records if not r.ok)
                    raise ValidationError(f"the bad server failed a request even one at a time "
                                          f"({failed.error}): there is nothing to compare with\n"
                                          + server.log_tail())
            progress(f"{name}: {role}: {options.requests} requests, concurrency {options.concurrency}, "
                     f"max_tokens {options.max_tokens}")
            main[role] = _load(server.base_url, endpoint, requests=options.requests,
                               concurrency=options.concurrency, options=options, counter=counter,
                               progress=progress)
            progress(f"{name}: {role}: {_line(main[role])}")
            for level in options.sweep:
                if level == options.concurrency:
                    sweep[role][level] = main[role]
                    continue
                n = max(level, min(options.requests, 4 * level))
                progress(f"{name}: {role}: sweep concurrency {level} ({n} requests)")
                sweep[role][level] = _load(server.base_url, endpoint, requests=n, concurrency=level,
                                           options=options, counter=counter, progress=lambda _: None)
                progress(f"{name}: {role}: sweep {level}: {_line(sweep[role][level])}")
    comparison = compare(reference, main["fixed"], prompt_for)
    bad_under_load = compare(reference, main["bad"], prompt_for)
    return Report(options, prepared, endpoint, main, sweep, comparison, startup, reference, bad_under_load)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def _line(result: LoadResult) -> str:
    s = result.stats()
    return (f"{s['ok']}/{s['requests']} ok, {s['tokens_per_s']:.1f} tok/s, p50 {_ms(s['latency_p50_s'])} ms, "
            f"p95 {_ms(s['latency_p95_s'])} ms")


def _report_lines(report: Report) -> list[str]:
    o = report.options
    rows = [f"{'server':<7}{'ok':>9}{'tokens/s':>11}{'p50 ms':>9}{'p95 ms':>9}{'ttft p50 ms':>13}"
            f"{'ttft p95 ms':>13}{'start s':>9}"]
    for role in ("bad", "fixed"):
        s = report.main[role].stats()
        rows.append(f"{role:<7}{s['ok']:>5}/{s['requests']:<3}{s['tokens_per_s']:>11.1f}"
                    f"{_ms(s['latency_p50_s']):>9}{_ms(s['latency_p95_s']):>9}{_ms(s['ttft_p50_s']):>13}"
                    f"{_ms(s['ttft_p95_s']):>13}{report.startup_s.get(role, 0):>9.1f}")
    c, b = report.comparison, report.bad_under_load
    fixed_by = "its autofix" if o.fixed is None else o.fixed.name
    applied = ", ".join(f"{n} x {code}" for code, n in sorted(report.prepared.applied.items()))
    lines = [f"validate: {report.case.name} ({report.case.origin}) vs {fixed_by}"
             + (f" ({applied})" if applied else ""),
             f"load: {o.requests} requests, concurrency {o.concurrency}, max_tokens {o.max_tokens}, greedy, "
             f"model {o.model}; {report.endpoint.describe()}"]
    for role, notes in report.injected.items():
        for note in notes:
            lines.append(f"note: injected into the {role} file to make it runnable: {note}")
    lines += rows
    if report.sweep.get("bad"):
        lines.append("concurrency sweep (tokens/s): " + ", ".join(
            f"{lvl}: {report.sweep['bad'][lvl].stats()['tokens_per_s']:.0f} -> "
            f"{report.sweep['fixed'][lvl].stats()['tokens_per_s']:.0f}"
            for lvl in sorted(report.sweep["bad"]) if lvl in report.sweep["fixed"]))
    if b is not None and not b.passed:
        failed = sum(1 for m in b.mismatches if m.get("problem"))
        lines.append(f"note: the bad server under load: {len(report.main['bad'].ok)}/{b.compared} answered, "
                     f"{b.same_text}/{b.compared} with its own one-at-a-time text"
                     + (f" ({failed} failed)" if failed else "") + "; the fixed server is compared with its "
                     "one-at-a-time answers")
    lines.append(f"responses: {c.same_shape}/{c.compared} same JSON shape, {c.same_text}/{c.compared} same "
                 f"completion text as the bad server's -> {'PASS' if c.passed else 'FAIL'}")
    if c.echo_differs:
        lines.append(f"warning: {c.echo_differs} responses differ in echoing the prompt before the completion")
    for item in c.mismatches[:3]:
        lines.append(f"mismatch: {json.dumps(item)[:400]}")
    return lines


def _ratio_text(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}"


def _case_ratio_text(report: Report) -> str:
    if report.ratio is None and report.main["fixed"].stats()["tokens_per_s"]:
        return "n/a (the bad server generated nothing under load)"
    return _ratio_text(report.ratio)


def format_summary(validation: Validation) -> str:
    """Each case's table and verdict; with several, a table of all; always ending with the line
    ``fixed/bad throughput ratio: X.XX`` (the lowest of the cases)."""
    lines: list[str] = []
    for report in validation.reports:
        lines += _report_lines(report)
        if len(validation.reports) > 1:
            lines.append(f"{report.case.name}: fixed/bad throughput ratio {_case_ratio_text(report)}")
        lines.append("")
    for case, why in validation.skipped:
        lines.append(f"skipped: {case.name}: {why}")
    for case, why in validation.failed:
        lines.append(f"FAILED: {case.name}: {why.splitlines()[0] if why else ''}")
    if len(validation.reports) > 1 or validation.failed:
        lines.append(f"{'server':<34}{'bad tok/s':>10}{'fixed tok/s':>12}{'ratio':>8}  responses")
        for report in validation.reports:
            c = report.comparison
            lines.append(f"{report.case.name[:33]:<34}{report.main['bad'].stats()['tokens_per_s']:>10.1f}"
                         f"{report.main['fixed'].stats()['tokens_per_s']:>12.1f}{_ratio_text(report.ratio):>8}"
                         f"  {'PASS' if c.passed else 'FAIL'} ({c.same_text}/{c.compared} same text)")
        for case, _ in validation.failed:
            lines.append(f"{case.name[:33]:<34}{'-':>10}{'-':>12}{'-':>8}  FAIL (did not run)")
        lines.append(f"{len(validation.reports)} servers validated, {len(validation.failed)} failed to run, "
                     f"{len(validation.skipped)} skipped -> {'PASS' if validation.passed else 'FAIL'}; "
                     "the ratio below is the lowest")
    while lines and not lines[-1]:
        lines.pop()
    lines.append(f"fixed/bad throughput ratio: {_ratio_text(validation.ratio)}")
    return "\n".join(lines)


def write_plot(validation: Validation, path: Path) -> None:
    """Tokens/s against concurrency for both servers: one panel per validated server."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reports = validation.reports
    if not reports:
        raise ValidationError("nothing to plot: no server was validated")
    columns = min(3, len(reports))
    rows = (len(reports) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 4.2 * rows), dpi=110, squeeze=False)
    for ax in axes.flat[len(reports):]:
        ax.set_visible(False)
    o = validation.options
    for ax, report in zip(axes.flat, reports):
        for role, style in (("bad", "o-"), ("fixed", "s-")):
            levels = sorted(report.sweep.get(role, {}))
            if not levels:
                levels, values = [o.concurrency], [report.main[role].stats()["tokens_per_s"]]
            else:
                values = [report.sweep[role][lvl].stats()["tokens_per_s"] for lvl in levels]
            label = "bad (as written)" if role == "bad" else "fixed (vllm-lint --fix --unsafe-fixes)"
            ax.plot(levels, values, style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(o.sweep) | {o.concurrency}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel("generated tokens / s")
        ax.set_title(f"{report.case.name}: ratio {_ratio_text(report.ratio)} at {o.concurrency}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"vllm-lint validate: throughput, max_tokens={o.max_tokens}, greedy, model {o.model.name}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
