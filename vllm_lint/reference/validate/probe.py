"""Whether a server's event loop answers while generations are in flight.

During each side's load a cheap GET route of the same server (a health or root route it defines, else the OpenAPI
document the harness reads) is asked again and again, one probe at a time. An async handler that calls the model
in the event loop holds every other request until its generation ends: a probe sent then waits as long as a whole
generation. A fix that frees the loop (the engine rewrite, or the fallback's ``await asyncio.to_thread(...)``)
answers it in milliseconds. A ``def`` handler that the framework runs in its worker threads never held the loop:
its probes answer on both sides, and the line only reports them.
"""

from __future__ import annotations

import ast
import asyncio
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable

from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback

# Last path segments of routes that answer without the model (health checks, readiness and liveness probes).
HEALTH_NAMES = ("health", "healthz", "healthcheck", "health_check", "ready", "readyz", "readiness", "live",
                "livez", "liveness", "ping", "status", "heartbeat")
# The pause after each answer. A probe costs the server and the machine a little (on 2 cores, twenty a second cost
# a worker-thread server a visible share of its throughput); a held loop holds any probe sent while it generates.
PROBE_INTERVAL_S = 0.25
# A probe counts as having waited for a generation only past this, whatever the generations took: on this
# shared machine a free loop can stall for tens of milliseconds, never for a tenth of a second between answers.
MIN_HELD_S = 0.1


def _get_routes_of_source(source: str) -> list[str]:
    """GET routes a module declares with a constant path and no path parameter: ``@app.get("/health")``,
    ``@app.route("/")`` (GET unless ``methods=`` says otherwise), ``@router.api_route("/ping", methods=["GET"])``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                    and decorator.args and isinstance(decorator.args[0], ast.Constant)
                    and isinstance(decorator.args[0].value, str)):
                continue
            path, how = decorator.args[0].value, decorator.func.attr
            methods = next((k.value for k in decorator.keywords if k.arg == "methods"), None)
            named = ({str(e.value).upper() for e in methods.elts if isinstance(e, ast.Constant)}
                     if isinstance(methods, (ast.List, ast.Tuple, ast.Set)) else None)
            if how == "get" or (how in ("route", "api_route") and (named is None or "GET" in named)):
                found.append(path)
    return found


def _get_routes_of_openapi(openapi: dict | None) -> list[str]:
    """GET routes of an OpenAPI document that need nothing: no required parameter and no required body."""
    found = []
    for path, ops in ((openapi or {}).get("paths") or {}).items():
        op = (ops or {}).get("get")
        if not isinstance(op, dict):
            continue
        if any(p.get("required") for p in op.get("parameters") or [] if isinstance(p, dict)):
            continue
        if (op.get("requestBody") or {}).get("required"):
            continue
        found.append(path)
    return found


def probe_route(openapi: dict | None, source: str, document_path: str | None, generation_path: str | None) -> str | None:
    """The route to probe: a health-like GET route the server defines (its OpenAPI document's or its source's),
    else its root ``/``, else the OpenAPI document the harness reads (``document_path``); never the route that
    generates, nor a route with a path parameter (``/items/{id}``, ``/items/<id>``); None when there is none."""
    routes = [r for r in _get_routes_of_openapi(openapi) + _get_routes_of_source(source)
              if r.startswith("/") and r != generation_path and not any(c in r for c in "{<:*")]
    for route in routes:
        if route.rstrip("/").rsplit("/", 1)[-1].lower() in HEALTH_NAMES:
            return route
    if "/" in routes:
        return "/"
    return document_path


@dataclass
class Probe:
    sent: float  # time.perf_counter() when it was sent
    latency: float  # until its answer, or until the load ended for one still waiting
    answered: bool = True
    status: int | None = None
    error: str | None = None


async def probed(load: Awaitable[LoadResult], base_url: str, path: str, probes: list[Probe], *,
                 timeout: float = 300.0, transport: Any = None) -> LoadResult:
    """Run ``load`` while probing ``GET base_url + path`` one probe at a time, appending each to ``probes``;
    a probe still waiting when the load ends is kept as unanswered, its wait so far its latency."""
    import httpx

    check_loopback(base_url)
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, trust_env=False, transport=transport) as client:
        done = asyncio.Event()

        async def probe_loop() -> None:
            while not done.is_set():
                sent = time.perf_counter()
                probe = Probe(sent, 0.0, answered=False)
                probes.append(probe)
                try:
                    response = await client.get(path)
                    probe.status = response.status_code
                except (httpx.HTTPError, OSError) as exc:
                    probe.error = f"{type(exc).__name__}: {exc}"
                probe.latency, probe.answered = time.perf_counter() - sent, probe.error is None
                try:
                    await asyncio.wait_for(done.wait(), PROBE_INTERVAL_S)
                except asyncio.TimeoutError:
                    pass

        task = asyncio.ensure_future(probe_loop())
        try:
            return await load
        finally:
            done.set()
            ended = time.perf_counter()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            for probe in probes:
                if not probe.answered and probe.error is None:
                    probe.latency = ended - probe.sent


def _generations(records: list[Record]) -> list[tuple[float, float]]:
    return [(r.sent, r.sent + r.latency) for r in records if r.ok and r.sent is not None]


@dataclass
class LoopReading:
    """One server's probes sent while at least one of its generations was in flight."""

    path: str
    probes: list[Probe] = field(default_factory=list)
    generation_s: float | None = None  # the shortest generation of the load (request sent to answer)

    @classmethod
    def of(cls, path: str, probes: list[Probe], load: LoadResult) -> "LoopReading":
        spans = _generations(load.records)
        during = [p for p in probes if (p.answered or p.error is None) and any(s <= p.sent < e for s, e in spans)]
        return cls(path, during, min((e - s for s, e in spans), default=None))

    @property
    def worst(self) -> float | None:
        return max((p.latency for p in self.probes), default=None)

    @property
    def median(self) -> float | None:
        return statistics.median(p.latency for p in self.probes) if self.probes else None

    @property
    def waited(self) -> list[Probe]:
        """The probes that waited as long as a whole generation (the load's shortest, and at least MIN_HELD_S)."""
        if self.generation_s is None:
            return []
        bound = max(self.generation_s, MIN_HELD_S)
        return [p for p in self.probes if p.latency >= bound]

    @property
    def held(self) -> bool:
        """Whether the loop was held while generating: most of its probes waited a whole generation. A held loop
        holds nearly every probe (one sent during a generation waits for it, and for the queued requests whose
        handlers run before the loop reads the probe); a free one may stall one now and then (measured: the seed's
        engine rewrite, 1 probe of 7 for 454 ms, its shortest generation 230 ms, on a busy 2-core machine)."""
        return len(self.waited) * 2 > len(self.probes)

    def describe(self) -> str:
        if not self.probes:
            return f"no probe of GET {self.path} was sent while a generation was in flight"
        worst, median, waited = self.worst or 0.0, self.median or 0.0, len(self.waited)
        shortest = _seconds(self.generation_s or 0.0)
        if self.held:
            return (f"GET {self.path} blocked up to {_seconds(worst)} (median {_seconds(median)}); {waited} of "
                    f"{len(self.probes)} probes waited as long as a whole generation ({shortest} the shortest)")
        some = f"; {waited} waited as long as a whole generation" if waited else ""
        return (f"GET {self.path} answered in {_seconds(worst)} at most (median {_seconds(median)}, "
                f"{len(self.probes)} probe{'s' if len(self.probes) != 1 else ''}{some}; shortest generation {shortest})")

    def as_dict(self) -> dict[str, Any]:
        return {"route": f"GET {self.path}", "probes": len(self.probes),
                "worst_s": _round(self.worst), "median_s": _round(self.median),
                "shortest_generation_s": _round(self.generation_s), "held": self.held, "waited": len(self.waited),
                "unanswered": sum(1 for p in self.probes if not p.answered)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


@dataclass
class LoopCheck:
    """Both servers' readings, or why the loop could not be probed (a gRPC server has no HTTP route)."""

    bad: LoopReading | None = None
    fixed: LoopReading | None = None
    skipped: str | None = None
    claimed: bool = True  # the fix claims to free the loop (cases.frees_the_loop)

    @property
    def judged(self) -> bool:
        """Only a fix that claims to free the loop, of a bad server whose loop was measured held, must free it;
        where the bad server answered its probes (``def`` handlers in a thread pool, a framework's worker threads
        or processes), or the fix keeps the handlers in the framework's threads, the line only reports."""
        return (self.claimed and self.bad is not None and self.fixed is not None and self.bad.held
                and bool(self.fixed.probes))

    @property
    def passed(self) -> bool:
        return not self.judged or not (self.fixed is not None and self.fixed.held)

    def verdict(self) -> str:
        if self.skipped is not None or self.bad is None or self.fixed is None:
            return "not measured"
        if self.judged:
            return "PASS" if self.passed else "FAIL"
        if not self.bad.probes:
            return "reported only: no probe of the bad server was sent while a generation was in flight"
        if not self.bad.held:
            return "reported only: the bad server already answered while generating"
        if not self.claimed:
            return "reported only: the fix keeps the handlers in the framework's worker threads"
        return "reported only: no probe of the fixed server was sent while a generation was in flight"

    def line(self) -> str:
        if self.skipped is not None:
            return f"event loop during generation: not measured: {self.skipped}"
        parts = [f"{role}: {reading.describe()}" for role, reading in (("bad", self.bad), ("fixed", self.fixed))
                 if reading is not None]
        return f"event loop during generation: {'; '.join(parts)} -> {self.verdict()}"

    def as_dict(self) -> dict[str, Any]:
        return {"skipped": self.skipped, "judged": self.judged, "passed": self.passed, "verdict": self.verdict(),
                "bad": self.bad.as_dict() if self.bad else None,
                "fixed": self.fixed.as_dict() if self.fixed else None}
