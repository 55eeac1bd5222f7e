"""Whether two servers answer alike: the JSON shape of each response and the completion text it carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record


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


def _openai_choice(body: dict) -> dict | None:
    """The first choice of an OpenAI-shaped body (``{"choices": [{...}]}``), else None."""
    choices = body.get("choices")
    return choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None


def _event_text(event: dict) -> str:
    text = event.get("text")
    if isinstance(text, str):
        return text
    return max((t for _, t in _string_leaves(event)), key=len, default="")


def _stream_readings(parts: list[str]) -> tuple[str, ...]:
    """A stream's text, each way its events can be read: its last event when each one starts with the one
    before and the text grows (the whole text so far, as vLLM's default cumulative outputs give it; an output may
    add no text when its token ends mid-character), else the events joined (each one a delta). Events that are
    all the same text are both: a one-token completion sent cumulatively and then once more as the final event,
    or one token repeated as deltas; only the other server's answer tells which."""
    if len(parts) > 1 and all(b.startswith(a) for a, b in zip(parts, parts[1:])):
        if len(parts[-1]) > len(parts[0]):
            return (parts[-1],)
        if parts[-1]:
            return ("".join(parts), parts[-1])
    return ("".join(parts),)


def response_texts(record: Record) -> tuple[str, ...]:
    """The generated text a response carries, whatever its shape: its readings, the likelier first (more than
    one only for a stream that reads as deltas and as cumulative text alike)."""
    body = record.body
    if isinstance(body, str):
        return (body,)
    if record.streamed and isinstance(body, list):
        parts = []
        openai = False
        for event in body:
            if isinstance(event, dict) and _openai_choice(event) is not None:
                choice = event["choices"][0]
                parts.append(choice.get("text") or (choice.get("delta") or {}).get("content") or "")
                openai = True
            elif isinstance(event, dict):
                parts.append(_event_text(event))
            elif isinstance(event, str) and event != "[DONE]":
                parts.append(event)
        return ("".join(parts),) if openai else _stream_readings(parts)
    if isinstance(body, dict) and _openai_choice(body) is not None:
        choice = body["choices"][0]
        return (choice.get("text") or (choice.get("message") or {}).get("content") or "",)
    leaves = _string_leaves(body)
    return (max((text for _, text in leaves), key=len, default=""),)


def response_text(record: Record) -> str:
    """The generated text a response carries: its likelier reading."""
    return response_texts(record)[0]


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
    shapes: bool = True  # False: the reference has no response shape (texts generated outside a server)

    @property
    def passed(self) -> bool:
        return self.compared > 0 and (self.same_shape == self.compared or not self.shapes) and self.same_text == self.compared

    def as_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "same_shape": self.same_shape if self.shapes else None,
                "same_text": self.same_text, "echo_differs": self.echo_differs, "passed": self.passed,
                "mismatches": self.mismatches[:10]}


def _closest_readings(b: Record, f: Record, prompt: Callable[[int], str]) -> tuple[tuple[str, bool], tuple[str, bool]]:
    """The (completion, echoed) of each response, in the readings that agree when some pair does."""
    bs = [completion_of(t, prompt(b.index)) for t in response_texts(b)]
    fs = [completion_of(t, prompt(f.index)) for t in response_texts(f)]
    return next(((x, y) for x in bs for y in fs if x[0] == y[0]), (bs[0], fs[0]))


_BAD = object()  # compare()'s default: the shapes of ``bad``'s own responses


def compare(bad: LoadResult, fixed: LoadResult, prompt: Callable[[int], str], shapes_of: Any = _BAD) -> Comparison:
    """``fixed``'s responses against ``bad``'s, request by request: the completion text, and the response's
    shape against ``shapes_of``'s response to the same request (``bad``'s by default; None: texts only)."""
    shaped = bad if shapes_of is _BAD else shapes_of
    shapes = shaped is not None
    shape_by_index = {r.index: r for r in shaped.records if r.ok} if shaped is not None else {}
    result = Comparison(shapes=shapes)
    fixed_by_index = {r.index: r for r in fixed.records}
    for b in bad.records:
        f = fixed_by_index.get(b.index)
        if f is None or not b.ok or not f.ok:
            result.mismatches.append({"index": b.index, "problem": "missing or failed response",
                                      "bad_error": b.error, "fixed_error": getattr(f, "error", "missing")})
            result.compared += 1
            continue
        result.compared += 1
        # A response shape does not depend on the prompt: any answer of ``shapes_of`` stands for a missing one.
        shaped_b = shape_by_index.get(b.index) or next(iter(shape_by_index.values()), None)
        bs, fs = (response_shape(shaped_b) if shaped_b is not None else None), response_shape(f)
        shape_ok = bs == fs or not shapes
        result.same_shape += bs == fs and shapes
        (b_text, b_echo), (f_text, f_echo) = _closest_readings(b, f, prompt)
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
