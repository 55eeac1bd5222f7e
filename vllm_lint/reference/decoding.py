"""How each request of a server under the launcher chose its tokens, recorded before the launcher makes it
greedy, for ``validate``'s decoding check.

The launcher decodes greedily on both sides so that the texts can be compared; that hides a fix that samples
where the original decoded greedily (or the reverse). So each process records, per request, the decoding it
was asked for, in one form for both sides:

* transformers: the generation config ``generate()`` would run with (the call's keywords over the model's
  generation config, over transformers' defaults: ``_prepare_generation_config``, which the pipeline calls too);
* vLLM: the ``SamplingParams`` given to ``AsyncLLM.generate``, or to the offline ``LLM.generate`` (its own
  defaults, ``get_default_sampling_params()``, where it is given none).

Greedy decoding (``do_sample`` not True in transformers, temperature 0 in vLLM) keeps only the repetition
penalty, which applies to it too; sampling keeps temperature, top-p, top-k and min-p, each neutral value
written as ``None``. Lengths are left out: the rewrite's own ``max_tokens`` is VLL302's business.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENVIRONMENT_VARIABLE = "VLLMLINT_DECODING_LOG"  # the file each process appends its records to (inherited)
_NEUTRAL = {"top_p": 1.0, "top_k": 0, "min_p": 0.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
_SAMPLING_EPS = 1e-5  # vllm/sampling_params.py (0.32): below it, a temperature means greedy


def _value(name: str, value: Any) -> float | None:
    if value is None or (name in _NEUTRAL and (value == _NEUTRAL[name] or (name == "top_k" and value < 0))):
        return None
    return round(float(value), 6)


def _settings(greedy: bool, values: dict[str, Any]) -> dict[str, Any]:
    kept: tuple[str, ...] = ("repetition_penalty", "presence_penalty", "frequency_penalty")
    if not greedy:
        kept += ("temperature", "top_p", "top_k", "min_p")
    if not greedy and values.get("temperature") is None:  # transformers: no temperature warper, as at 1.0
        values = {**values, "temperature": 1.0}
    settings: dict[str, Any] = {"greedy": greedy}
    settings.update({name: _value(name, values.get(name)) for name in kept})
    if settings["repetition_penalty"] == 1.0:
        settings["repetition_penalty"] = None
    return {name: value for name, value in settings.items() if value is not None or name == "greedy"}


def of_generation_config(config: Any) -> dict[str, Any]:
    """A transformers GenerationConfig, as decoded (beam search named as such: vLLM's sampler has none)."""
    if (getattr(config, "num_beams", 1) or 1) > 1:
        return {"beams": int(config.num_beams)}
    values = {name: getattr(config, name, None) for name in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")}
    return _settings(getattr(config, "do_sample", None) is not True, values)


def of_sampling_params(params: Any) -> dict[str, Any]:
    """A vLLM SamplingParams, as decoded."""
    names = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")
    values = {name: getattr(params, name, None) for name in names}
    return _settings((values["temperature"] or 0.0) < _SAMPLING_EPS, values)


def of_task(task: str) -> dict[str, Any]:
    """A call of a pipeline whose model does not generate (text-classification): no decoding, named by its task."""
    return {"task": task}


def record(settings: dict[str, Any]) -> None:
    """Append one request's settings to the log this process was started with (none: nothing recorded)."""
    path = os.environ.get(ENVIRONMENT_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as log:  # one short line per write: processes append whole lines
            log.write(json.dumps(settings, sort_keys=True) + "\n")


def read(path: Path, leave_out: range = range(0)) -> list[dict[str, Any]]:
    """The settings recorded in ``path``, one per request in the order they were asked for (none when nothing
    was recorded), less the records at the indices ``leave_out`` (the requests of a wave the other side did not
    get)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [json.loads(line) for i, line in enumerate(s for s in lines if s.strip()) if i not in leave_out]


def described(settings: dict[str, Any]) -> str:
    """``greedy`` / ``sampled temperature=0.7 top_p=0.9`` / ``beam search (4 beams)``."""
    if "beams" in settings:
        return f"beam search ({settings['beams']} beams)"
    if "task" in settings:
        return f"no decoding (a {settings['task']} pipeline)"
    rest = " ".join(f"{name}={value:g}" for name, value in sorted(settings.items()) if name != "greedy")
    return ("greedy" if settings["greedy"] else "sampled") + (f" {rest}" if rest else "")


def compared(bad: list[dict[str, Any]], fixed: list[dict[str, Any]]) -> tuple[bool, str]:
    """(the same, the line that says so): the distinct settings each side's requests got must be the same."""
    bad_kinds = sorted({json.dumps(s, sort_keys=True) for s in bad})
    fixed_kinds = sorted({json.dumps(s, sort_keys=True) for s in fixed})
    if not bad_kinds or not fixed_kinds:
        side = "the bad server" if not bad_kinds else "the fixed server"
        return False, f"no decoding recorded from {side}"
    bad_text = "; ".join(described(json.loads(s)) for s in bad_kinds)
    fixed_text = "; ".join(described(json.loads(s)) for s in fixed_kinds)
    if bad_kinds == fixed_kinds:
        return True, f"{bad_text} on both ({len(bad)} and {len(fixed)} requests)"
    return False, f"bad: {bad_text}; fixed: {fixed_text}"
