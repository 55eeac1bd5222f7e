"""What one ``vllm-lint validate`` run is asked (:class:`Options`) and what it finds: a :class:`Report` per bad
server, gathered in a :class:`Validation`, each with its JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_lint.reference.loadgen import LoadResult
from vllm_lint.reference.validate.cases import Case
from vllm_lint.reference.validate.chainlit_endpoint import ChainlitEndpoint
from vllm_lint.reference.validate.compare import Comparison
from vllm_lint.reference.validate.endpoint import Endpoint
from vllm_lint.reference.validate.gradio_endpoint import GradioEndpoint
from vllm_lint.reference.validate.grpc_endpoint import GrpcEndpoint
from vllm_lint.reference.validate.websocket_endpoint import WebSocketEndpoint
from vllm_lint.reference.validate.prepare import PreparedCase
from vllm_lint.reference.validate.probe import LoopCheck

SWEEP_LEVELS = (1, 4, 16, 64)  # the concurrency levels of the sweep that --plot draws


# What a server is driven through: its POST route, a gRPC method, a Gradio event, a websocket route or Chainlit's
# socket.io messages.
AnyEndpoint = Endpoint | GrpcEndpoint | GradioEndpoint | WebSocketEndpoint | ChainlitEndpoint


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
    endpoint: AnyEndpoint
    main: dict[str, LoadResult]
    sweep: dict[str, dict[int, LoadResult]]
    comparison: Comparison  # the fixed server under load against the bad server's one-at-a-time answers
    startup_s: dict[str, float]
    reference: LoadResult | None = None  # the bad server, the same prompts one at a time
    bad_under_load: Comparison | None = None  # the bad server under load against its own reference
    streamed: dict[str, LoadResult] = field(default_factory=dict)  # the route asked for streams, when it can be
    stream_comparison: Comparison | None = None  # the fixed server's streams against the reference texts
    bad_fails: str | None = None  # the bad server failed every request: the reference is transformers' greedy text
    # (the same, what each side decoded with): the decoding each request asked for, read from both processes
    # (reference/decoding.py); None when the bad server answered nothing, so asked for nothing
    decoding: tuple[bool, str] | None = None
    event_loop: LoopCheck | None = None  # a cheap route of each server, probed while its generations ran


    @property
    def passed(self) -> bool:
        return (self.comparison.passed and (self.stream_comparison is None or self.stream_comparison.passed)
                and (self.decoding is None or self.decoding[0])
                and (self.event_loop is None or self.event_loop.passed))

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
            "reference": "transformers greedy decoding" if self.bad_fails else "the bad server, one request at a time",
            "bad_fails": self.bad_fails,
            "streamed": {role: result.stats() for role, result in self.streamed.items()},
            "stream_comparison": self.stream_comparison.as_dict() if self.stream_comparison else None,
            "decoding": {"same": self.decoding[0], "detail": self.decoding[1]} if self.decoding else None,
            "event_loop": self.event_loop.as_dict() if self.event_loop else None,
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
