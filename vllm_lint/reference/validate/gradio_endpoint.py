"""A Gradio app's endpoint: the event that takes the prompt in a Textbox, called through Gradio's HTTP API.

The events are read as the real ``gradio_client`` reads them (``Client.view_api()``: each named event's
parameters, with their components and defaults). The prompt goes to the event's Textbox (the one named like
a prompt when it has several); every other input gets the value the page starts with, the component's
initial value (a Slider's ``value``; ``""`` for a Textbox without one, None for any other).

Each request is Gradio's documented two-step call: ``POST /gradio_api/call/<event>`` with
``{"data": [...]}`` queues it and answers an event id, and ``GET /gradio_api/call/<event>/<id>`` streams its
events up to ``complete`` (or ``error``). It goes through Gradio's queue as a browser's request does, so
each event runs with the concurrency the file gives it. The answer is recorded as the ``complete`` event's
data (a JSON list of the outputs), read by the comparison as it reads an HTTP body.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback, drive
from vllm_lint.reference.validate.endpoint import PROMPT_FIELDS
from vllm_lint.reference.validate.errors import ValidationError

CALL_PREFIX = "/gradio_api/call"
OK = 200  # a Record's status for a ``complete`` event
FAILED = 500  # and for an ``error`` event: the event raised


@dataclass
class GradioEndpoint:
    api_name: str  # "/respond"
    field: str  # the prompt's parameter
    names: tuple[str, ...]  # the event's parameters, in order
    data: tuple[Any, ...]  # the call's inputs, in that order; the prompt's place is None here
    position: int  # the prompt's place
    where: str = "gradio"
    stream_field: str | None = None

    def inputs(self, prompt: str) -> list[Any]:
        data = list(self.data)
        data[self.position] = prompt
        return data

    def describe(self) -> str:
        rest = [f"{name}={value!r}" for i, (name, value) in enumerate(zip(self.names, self.data)) if i != self.position]
        defaults = f"; {', '.join(rest)} as the page starts" if rest else ""
        return f"Gradio event {self.api_name} with the prompt in its Textbox {self.field!r}{defaults}"

    async def run_load(self, base_url: str, prompt: Callable[[int], str], *, requests: int, concurrency: int,
                       timeout: float, max_seconds: float, count_tokens: Callable[[Record], int] | None,
                       progress: Callable[[str], None] | None) -> LoadResult:
        import httpx

        check_loopback(base_url)
        path = f"{CALL_PREFIX}/{self.api_name.lstrip('/')}"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, trust_env=False) as client:

            async def one(i: int) -> Record:
                t0 = time.perf_counter()
                try:
                    queued = await client.post(path, json={"data": self.inputs(prompt(i))})
                    if queued.status_code != 200:
                        return Record(i, queued.status_code, time.perf_counter() - t0, None,
                                      error=f"HTTP {queued.status_code}: {queued.text[:200]}")
                    event, data, ttfb = await _outcome(client, f"{path}/{queued.json()['event_id']}", t0)
                except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
                    return Record(i, None, time.perf_counter() - t0, None, error=f"{type(exc).__name__}: {exc}")
                latency = time.perf_counter() - t0
                if event != "complete":
                    return Record(i, FAILED, latency, ttfb, data, "application/json",
                                  error=f"Gradio {event or 'no complete'} event: {json.dumps(data)[:200]}")
                record = Record(i, OK, latency, ttfb, data, "application/json")
                if count_tokens is not None:
                    record.tokens = count_tokens(record)
                return record

            return await drive(one, requests=requests, concurrency=concurrency, max_seconds=max_seconds, progress=progress)


async def _outcome(client, path: str, t0: float) -> tuple[str | None, Any, float | None]:
    """The last event of a call's stream (``complete`` or ``error``), its data, and when its first output
    (``generating`` or ``complete``) came."""
    event, ttfb = None, None
    async with client.stream("GET", path) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[len("event:"):].strip()
            elif line.startswith("data:") and event in ("generating", "complete", "error"):
                if ttfb is None and event != "error":
                    ttfb = time.perf_counter() - t0
                data = json.loads(line[len("data:"):].strip())
                if event in ("complete", "error"):
                    return event, data, ttfb
    return None, None, ttfb


def _is_text(parameter: dict) -> bool:
    return parameter.get("component") == "Textbox" and (parameter.get("python_type") or {}).get("type") == "str"


def _prompt_parameter(parameters: list[dict]) -> int | None:
    """The place of the Textbox that takes the prompt: the one named like a prompt (by its parameter or its
    label), else the only one; None when there is no Textbox or several with none named like a prompt."""
    texts = [i for i, p in enumerate(parameters) if _is_text(p)]
    named = [(PROMPT_FIELDS.index(name), i) for i in texts
             for name in {parameters[i].get("parameter_name") or "", (parameters[i].get("label") or "").lower()}
             if name in PROMPT_FIELDS]
    if named:
        return min(named)[1]
    return texts[0] if len(texts) == 1 else None


def _start_value(parameter: dict) -> Any:
    """What the page sends for an input nobody touched: the component's initial value (None when it has
    none, as a Number left empty sends), an empty Textbox's ``""``."""
    if parameter.get("parameter_has_default"):
        return parameter.get("parameter_default")
    return "" if _is_text(parameter) else None


def _same_event_again(candidate: GradioEndpoint, candidates: list[GradioEndpoint]) -> bool:
    """``/respond_1`` beside a ``/respond`` with the same inputs: Gradio's name for the same function bound to
    a second trigger (``msg.submit(respond, ...)`` and ``button.click(respond, ...)``)."""
    base, _, number = candidate.api_name.rpartition("_")
    return number.isdigit() and any(c.api_name == base and (c.names, c.data) == (candidate.names, candidate.data)
                                    for c in candidates)


def endpoint_from_api(api: dict) -> GradioEndpoint:
    """The event that takes a prompt, from ``Client.view_api(return_format="dict")``'s description."""
    candidates: list[GradioEndpoint] = []
    passed: list[str] = []
    for api_name, info in (api.get("named_endpoints") or {}).items():
        parameters = list(info.get("parameters") or [])
        position = _prompt_parameter(parameters)
        if position is None:
            texts = sum(map(_is_text, parameters))
            passed.append(f"{api_name} (" + (f"{texts} Textbox inputs, none named like a prompt" if texts else "no Textbox input") + ")")
            continue
        if not info.get("returns"):
            passed.append(f"{api_name} (no output)")
            continue
        names = tuple(p.get("parameter_name") or p.get("label") or f"input {i}" for i, p in enumerate(parameters))
        data = tuple(_start_value(p) if i != position else None for i, p in enumerate(parameters))
        candidates.append(GradioEndpoint(api_name, names[position], names, data, position))
    candidates = [c for c in candidates if not _same_event_again(c, candidates)]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        events = "; ".join(passed) if passed else "it has no named event"
        raise ValidationError("no event of the Gradio app takes the prompt in a Textbox and answers with an output "
                              f"({events}): validate sends each prompt to one")
    raise ValidationError("more than one event of the Gradio app takes a prompt in a Textbox ("
                          + ", ".join(c.api_name for c in candidates) + "): validate loads one")


def discover_gradio_endpoint(base_url: str) -> GradioEndpoint:
    """The event of the Gradio app at ``base_url`` that takes a prompt, as ``gradio_client`` describes it."""
    from gradio_client import Client

    try:
        client = Client(base_url, verbose=False, httpx_kwargs={"trust_env": False})
        api = client.view_api(print_info=False, return_format="dict")
    except Exception as exc:  # the client's own errors (ValueError, httpx's) say what the app answered
        raise ValidationError(f"gradio_client could not read the Gradio app's API at {base_url}: "
                              f"{type(exc).__name__}: {exc}") from exc
    return endpoint_from_api(api)
