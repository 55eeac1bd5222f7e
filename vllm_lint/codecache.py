"""Keep the code that ``dataclasses`` compiles for each class between runs, so that imports stay cheap.

Why: ``dataclasses`` writes the source of every class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__`` and ``__setattr__`` and compiles it with ``exec`` each time the defining module is
imported; Python's bytecode cache (``__pycache__``) does not cover that code. LibCST defines about
200 frozen dataclasses, so compiling them is about half of its import (0.1 s of 0.25 s here), paid by
every pre-commit run that has a Python file to parse.

While ``compiled_dataclasses(name)`` is active, ``dataclasses`` calls ``_CompiledExec`` below in place of
the builtin ``exec`` (a module global shadows a builtin). It compiles each source text at most once and
keeps the code objects in the user's cache folder (usercache.py), one store per name. The code that runs
is exactly what compiling the same text gives, so a missing or stale store only costs the compiling that
it would have saved.
"""

from __future__ import annotations

import _thread
import builtins
import os
from types import CodeType

from vllm_lint.usercache import MarshalStore, store


class _CompiledExec:
    def __init__(self, code: MarshalStore) -> None:
        self.code = code
        self.owner = os.getpid()

    def __call__(self, source: object, globals: dict | None = None, locals: dict | None = None) -> None:
        if isinstance(source, str):
            code = self.code.get(source)
            if not isinstance(code, CodeType):
                # dont_inherit: compile as dataclasses' own exec would, without this module's __future__ flags.
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.code.put(source, code)
                if os.getpid() != self.owner:
                    # A forked worker (engine/workers.py) imports inside the context its parent entered and
                    # ends with os._exit, never leaving it: it keeps what it compiles as it goes.
                    self.code.save()
            source = code
        builtins.exec(source, globals, locals)  # type: ignore[arg-type]


# dataclasses.exec is one global of the process: a second thread defining dataclasses meanwhile waits
# (reentrant: a nested use in the same thread goes on).
_PATCHING = _thread.RLock()


class compiled_dataclasses:  # noqa: N801 - used as a function: ``with compiled_dataclasses("check"):``
    """Define dataclasses (import modules) with their generated methods' code kept in store ``name``.

    Nested uses each keep their own store: a surface's checkers, imported during a check, are kept apart
    from the check command's modules, so a run that needs only one loads only one. (A class, not
    contextlib.contextmanager: every run starts in one, and contextlib's import costs ~1.5 ms.)"""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        import dataclasses

        _PATCHING.acquire()
        try:
            self._code = store(f"dataclass-code-{self.name}")
            self._outer = dataclasses.__dict__.get("exec")
            dataclasses.exec = _CompiledExec(self._code)  # type: ignore[attr-defined]
        except BaseException:
            _PATCHING.release()
            raise

    def __exit__(self, *exc_info: object) -> None:
        import dataclasses

        try:
            if self._outer is None:
                del dataclasses.exec  # type: ignore[attr-defined]
            else:
                dataclasses.exec = self._outer  # type: ignore[attr-defined]
            self._code.save()
        finally:
            _PATCHING.release()
