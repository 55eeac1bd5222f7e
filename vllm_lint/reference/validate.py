"""``vllm-lint validate``: prove that an autofix keeps a server's behaviour and measure what it gains.

Given a "bad" server file (e.g. FastAPI + a blocking transformers ``pipeline``) and its "fixed" version (made
by running vllm-lint's own autofixer, ``python -m vllm_lint check --fix --unsafe-fixes --exit-zero``, on a
copy, or given with ``--fixed``), the harness:

1. makes both files runnable as they stand (a snippet without ``app = FastAPI()`` gets one injected, and a few
   forgotten stdlib imports such as ``import uuid`` are added; each injection is reported);
2. starts each server in turn with uvicorn on 127.0.0.1 through :mod:`vllm_lint.reference.launch`, which
   points whatever model the file names at one local model directory and makes decoding greedy with a fixed
   number of new tokens on both sides (transformers' pipeline for the bad one, vLLM for the fixed one);
3. finds the endpoint from the app's OpenAPI schema (the POST route taking a prompt-like field) and sends
   both servers the same load (fixed prompts, ``--concurrency`` in flight, ``--requests`` in all);
4. checks that each fixed response has the bad response's JSON shape and the same completion text, and
   reports tokens/s, p50/p95 latency, time to first token for streams and the fixed/bad throughput ratio
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
class PreparedSource:
    role: str
    path: Path
    injected: list[str] = field(default_factory=list)


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


def run_autofixer(path: Path, progress: Progress) -> str:
    """Fix ``path`` in place with vllm-lint's own autofixer; return the unified diff it made."""
    before = path.read_text()
    cmd = [sys.executable, "-m", "vllm_lint", "check", "--fix", "--unsafe-fixes", "--exit-zero", path.name]
    progress(f"autofix: {' '.join(cmd[2:])}")
    proc = subprocess.run(cmd, cwd=path.parent, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise ValidationError(f"the autofixer failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    after = path.read_text()
    if after == before:
        raise ValidationError("the autofixer changed nothing in the bad file: there is no fix to validate")
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        "bad", "fixed"))


def prepare_sources(bad: Path, fixed: Path | None, workdir: Path, progress: Progress
                    ) -> tuple[PreparedSource, PreparedSource, str | None]:
    workdir.mkdir(parents=True, exist_ok=True)
    bad_copy = workdir / "bad_server.py"
    fixed_copy = workdir / "fixed_server.py"
    shutil.copyfile(bad, bad_copy)
    diff = None
    if fixed is None:
        shutil.copyfile(bad, fixed_copy)
        diff = run_autofixer(fixed_copy, progress)
    else:
        shutil.copyfile(fixed, fixed_copy)
    prepared = []
    for role, path in (("bad", bad_copy), ("fixed", fixed_copy)):
        try:
            text, notes = make_runnable(path.read_text())
        except SyntaxError as exc:
            raise ValidationError(f"the {role} file does not parse: {exc}") from exc
        path.write_text(text)
        for note in notes:
            progress(f"{role}: injected {note}")
        prepared.append(PreparedSource(role, path, notes))
    return prepared[0], prepared[1], diff


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
    bad: Path
    fixed: Path | None
    model: Path
    concurrency: int = 16
    requests: int = 32
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
    options: Options
    endpoint: Endpoint
    main: dict[str, LoadResult]
    sweep: dict[str, dict[int, LoadResult]]
    comparison: Comparison
    injected: dict[str, list[str]]
    startup_s: dict[str, float]
    diff: str | None

    @property
    def ratio(self) -> float | None:
        bad = self.main["bad"].stats()["tokens_per_s"]
        fixed = self.main["fixed"].stats()["tokens_per_s"]
        return round(fixed / bad, 2) if bad else None

    def as_dict(self) -> dict[str, Any]:
        o = self.options
        return {
            "bad_file": str(o.bad), "fixed_file": str(o.fixed) if o.fixed else "(autofixer)",
            "model": str(o.model), "endpoint": self.endpoint.describe(),
            "concurrency": o.concurrency, "requests": o.requests, "max_tokens": o.max_tokens,
            "decoding": "greedy", "injected": self.injected, "startup_s": self.startup_s,
            "bad": self.main["bad"].stats(), "fixed": self.main["fixed"].stats(),
            "comparison": self.comparison.as_dict(), "fixed_over_bad_throughput": self.ratio,
            "sweep": {str(c): {role: self.sweep[role][c].stats() for role in ("bad", "fixed")}
                      for c in sorted(self.sweep.get("bad", {})) if c in self.sweep.get("fixed", {})},
            "autofix_diff": self.diff,
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


def run_validation(options: Options, progress: Progress = print) -> Report:
    own_tmp = options.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="vllm-lint-validate-")) if own_tmp else options.workdir
    try:
        return _run(options, workdir, progress)
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(options: Options, workdir: Path, progress: Progress) -> Report:
    bad, fixed, diff = prepare_sources(options.bad, options.fixed, workdir, progress)
    if diff:
        progress("autofix diff:\n" + diff.rstrip())
    counter = _token_counter(options.model, prompt_for)
    endpoint = options.endpoint
    main: dict[str, LoadResult] = {}
    sweep: dict[str, dict[int, LoadResult]] = {"bad": {}, "fixed": {}}
    startup: dict[str, float] = {}
    for source in (bad, fixed):
        role = source.role
        progress(f"{role}: starting {source.path.name} on 127.0.0.1 (model {options.model})")
        with ServerProcess(source, options.model, options.max_tokens, log_dir=workdir,
                           kv_cache_bytes=options.kv_cache_bytes, max_num_seqs=options.max_num_seqs,
                           start_timeout=options.start_timeout) as server:
            startup[role] = round(server.startup_s or 0.0, 1)
            progress(f"{role}: up in {startup[role]:.1f}s at {server.base_url}")
            if endpoint is None:
                import httpx

                schema = httpx.get(server.base_url + "/openapi.json", timeout=10, trust_env=False).json()
                endpoint = discover_endpoint(schema)
                progress(f"endpoint: {endpoint.describe()}")
            warm = _load(server.base_url, endpoint, requests=1, concurrency=1, options=options,
                         counter=counter, progress=lambda _: None, offset=10_000)
            if not warm.ok:
                raise ValidationError(f"the {role} server failed its warm-up request: "
                                      f"{warm.records[0].error if warm.records else 'no answer'}\n"
                                      + server.log_tail())
            progress(f"{role}: {options.requests} requests, concurrency {options.concurrency}, "
                     f"max_tokens {options.max_tokens}")
            main[role] = _load(server.base_url, endpoint, requests=options.requests,
                               concurrency=options.concurrency, options=options, counter=counter,
                               progress=progress)
            progress(f"{role}: {_line(main[role])}")
            for level in options.sweep:
                if level == options.concurrency:
                    sweep[role][level] = main[role]
                    continue
                n = max(level, min(options.requests, 4 * level))
                progress(f"{role}: sweep concurrency {level} ({n} requests)")
                sweep[role][level] = _load(server.base_url, endpoint, requests=n, concurrency=level,
                                           options=options, counter=counter, progress=lambda _: None)
                progress(f"{role}: sweep {level}: {_line(sweep[role][level])}")
    comparison = compare(main["bad"], main["fixed"], prompt_for)
    return Report(options, endpoint, main, sweep, comparison,
                  {"bad": bad.injected, "fixed": fixed.injected}, startup, diff)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def _line(result: LoadResult) -> str:
    s = result.stats()
    return (f"{s['ok']}/{s['requests']} ok, {s['tokens_per_s']:.1f} tok/s, p50 {_ms(s['latency_p50_s'])} ms, "
            f"p95 {_ms(s['latency_p95_s'])} ms")


def format_summary(report: Report) -> str:
    o = report.options
    rows = [f"{'server':<7}{'ok':>9}{'tokens/s':>11}{'p50 ms':>9}{'p95 ms':>9}{'ttft p50 ms':>13}"
            f"{'ttft p95 ms':>13}{'start s':>9}"]
    for role in ("bad", "fixed"):
        s = report.main[role].stats()
        rows.append(f"{role:<7}{s['ok']:>5}/{s['requests']:<3}{s['tokens_per_s']:>11.1f}"
                    f"{_ms(s['latency_p50_s']):>9}{_ms(s['latency_p95_s']):>9}{_ms(s['ttft_p50_s']):>13}"
                    f"{_ms(s['ttft_p95_s']):>13}{report.startup_s.get(role, 0):>9.1f}")
    c = report.comparison
    lines = [f"validate: {o.bad.name} vs {'its autofix' if o.fixed is None else o.fixed.name}, model {o.model}",
             f"load: {o.requests} requests, concurrency {o.concurrency}, max_tokens {o.max_tokens}, greedy; "
             f"{report.endpoint.describe()}"]
    for role, notes in report.injected.items():
        for note in notes:
            lines.append(f"note: injected into the {role} file to make it runnable: {note}")
    lines += rows
    if report.sweep.get("bad"):
        lines.append("concurrency sweep (tokens/s): " + ", ".join(
            f"{lvl}: {report.sweep['bad'][lvl].stats()['tokens_per_s']:.0f} -> "
            f"{report.sweep['fixed'][lvl].stats()['tokens_per_s']:.0f}"
            for lvl in sorted(report.sweep["bad"]) if lvl in report.sweep["fixed"]))
    lines.append(f"responses: {c.same_shape}/{c.compared} same JSON shape, {c.same_text}/{c.compared} same "
                 f"completion text -> {'PASS' if c.passed else 'FAIL'}")
    if c.echo_differs:
        lines.append(f"warning: {c.echo_differs} responses differ in echoing the prompt before the completion")
    for item in c.mismatches[:3]:
        lines.append(f"mismatch: {json.dumps(item)[:400]}")
    ratio = report.ratio
    lines.append(f"fixed/bad throughput ratio: {ratio:.2f}" if ratio is not None
                 else "fixed/bad throughput ratio: n/a")
    return "\n".join(lines)


def write_plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for role, style in (("bad", "o-"), ("fixed", "s-")):
        levels = sorted(report.sweep.get(role, {}))
        if not levels:
            levels, values = [report.options.concurrency], [report.main[role].stats()["tokens_per_s"]]
        else:
            values = [report.sweep[role][lvl].stats()["tokens_per_s"] for lvl in levels]
        label = "bad (transformers pipeline)" if role == "bad" else "fixed (vLLM AsyncLLMEngine)"
        ax.plot(levels, values, style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(set(report.options.sweep) | {report.options.concurrency}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("generated tokens / s")
    ax.set_title(f"{report.options.bad.name}: throughput, max_tokens={report.options.max_tokens}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
