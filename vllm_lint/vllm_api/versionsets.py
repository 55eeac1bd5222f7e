"""Sets of vLLM releases as bit masks over the database's list of versions, and release numbers.

The database stores each name with the releases that have it, written as ranges of positions in
its ``versions`` list (``"0-27"``, ``"0-4,9"``); in memory a set is an ``int`` with bit *i* set for
``versions[i]``, so "does any release in the file's target range have it" is one ``&``.
"""

from __future__ import annotations


from vllm_lint.lazy_re import lazy_compile

_RELEASE = lazy_compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?(?:\.?(post|rc|a|b|dev)\.?(\d+)?)?(?:\+[\w.]+)?$")
# PEP 440 orders dev < a < b < rc < (final) < post.
_PHASES = {"dev": -4, "a": -3, "b": -2, "rc": -1, None: 0, "post": 1}


def release_key(text: str) -> tuple[int, ...] | None:
    """``"0.6.3.post1"`` -> a tuple that sorts as PEP 440 orders releases; None if it is no release number.

    Three numeric parts are kept (vLLM's ``0.10.1.1`` becomes ``(0, 10, 1, 1, ...)``, four parts), then
    the pre/post phase and its number.
    """
    match = _RELEASE.match(text.strip())
    if match is None:
        return None
    major, minor, micro, fourth, phase, number = match.groups()
    return (
        int(major),
        int(minor or 0),
        int(micro or 0),
        int(fourth or 0),
        _PHASES[phase],
        int(number or 0),
    )


def minor_of(text: str) -> tuple[int, int] | None:
    key = release_key(text)
    return (key[0], key[1]) if key is not None else None


def to_ranges(mask: int) -> str:
    """``0b1110111`` -> ``"0-2,4-6"``."""
    parts: list[str] = []
    index = 0
    while mask >> index:
        if not (mask >> index) & 1:
            index += 1
            continue
        start = index
        while (mask >> (index + 1)) & 1:
            index += 1
        parts.append(str(start) if start == index else f"{start}-{index}")
        index += 1
    return ",".join(parts)


def from_ranges(text: str) -> int:
    """The inverse of :func:`to_ranges`."""
    mask = 0
    for part in text.split(","):
        if not part:
            continue
        start, _, end = part.partition("-")
        low, high = int(start), int(end or start)
        mask |= ((1 << (high - low + 1)) - 1) << low
    return mask


def newest(mask: int) -> int:
    """The position of the newest release in the set (-1 for the empty set)."""
    return mask.bit_length() - 1


def oldest(mask: int) -> int:
    return (mask & -mask).bit_length() - 1
