"""The known names closest to a misspelt one, for a message's "did you mean"."""

from __future__ import annotations

from collections.abc import Iterable


def close_names(name: str, known: Iterable[str], n: int = 3, cutoff: float = 0.8) -> tuple[str, ...]:
    """Up to ``n`` of ``known`` at least ``cutoff`` alike to ``name``, closest first (ties: the greater name
    first, whatever the order of ``known``: difflib ranks (score, name) pairs)."""
    # Imported here: difflib (with heapq) costs ~1 ms, paid only by a run that has a misspelt name to suggest for.
    import difflib

    return tuple(difflib.get_close_matches(name, list(known), n=n, cutoff=cutoff))
