"""Statically known values: what a front-end could prove a setting is set to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Value:
    """A value that is known statically, with a note on where it came from."""

    value: object
    # e.g. 'default of os.getenv("VLLM_GPU_MEM_UTIL")' or '${GPU_MEM_UTIL:-0.98}'
    origin: str | None = None


UNKNOWN = None  # an unresolvable value is None; a known one is a Value


def as_float(value: Value | None) -> float | None:
    if value is None:
        return None
    raw = value.value
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw.strip())
        except ValueError:
            return None
    return None


def as_bool(value: Value | None) -> bool | None:
    if value is None:
        return None
    raw = value.value
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false", "1", "0"):
        return raw.strip().lower() in ("true", "1")
    return None
