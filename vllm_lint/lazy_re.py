"""Regular expressions compiled when first used, not when their module is imported.

A module-level ``re.compile`` costs its compiling (0.05-0.5 ms each) in every process that imports the module,
used or not: a one-file run imports ~90 such expressions and uses ~15 (a Dockerfile's pins, a Makefile's
recipes, a shell command line's words are not read in a Python file). ``lazy_compile`` takes the same
arguments and gives what ``re.compile`` gives (mypy sees a ``re.Pattern``); its first method call compiles the
expression, and after that each method is the compiled pattern's own (an attribute of the instance), so a use
costs what it cost before. Only for a module-level name that is used through its methods and attributes:
``re.sub(EXPRESSION, ...)`` and ``isinstance(..., re.Pattern)`` want the real pattern.
"""

from __future__ import annotations

import re

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from re import Pattern
    from typing import Any, AnyStr

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _LazyPattern:
    def __init__(self, pattern: Any, flags: int) -> None:
        self._arguments = (pattern, flags)

    def _compiled(self) -> re.Pattern:
        compiled = re.compile(*self._arguments)
        # From now on each method is the pattern's own, found on the instance: __getattr__ is not asked again.
        for name in _METHODS:
            self.__dict__[name] = getattr(compiled, name)
        self.__dict__["_pattern"] = compiled
        return compiled

    def __getattr__(self, name: str):
        # Asked only for what the instance does not hold: before the first use every method (its call compiles the
        # expression, which puts the methods on the instance), after it the rest (pattern, flags, groups).
        if name.startswith("__") or name in ("_arguments", "_pattern"):
            raise AttributeError(name)
        compiled = self.__dict__.get("_pattern")
        return getattr(compiled if compiled is not None else self._compiled(), name)


def lazy_compile(pattern: AnyStr, flags: int = 0) -> Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, compiled on first use."""
    return _LazyPattern(pattern, flags)  # type: ignore[return-value]
