"""LibCST's ``metadata`` package, initialised when a name is first read from it instead of with LibCST.

``import libcst`` runs ``libcst/metadata/__init__.py``, which imports every metadata provider: scope analysis,
type inference (with ``subprocess``), the full-repository manager (``json``, ``threading``) and the rest, about
9 ms of every process that parses Python, a sixth of LibCST's import. vllm-lint reads no provider
(positions.py records positions itself). LibCST's own import needs two submodules of the package
(``base_provider``, ``wrapper``), and submodules import as usual from a package whose ``__init__`` has not run;
so the package is created at once and its ``__init__`` runs the first time a name is read from it
(``libcst.metadata.PositionProvider``, ``from libcst.metadata import ScopeProvider``): whoever uses metadata
gets all of it, as from a plain import.

``defer_metadata_init`` is called by ``vllm_lint.python``'s ``__init__``, before any module of vllm-lint imports
LibCST; where LibCST is already imported it changes nothing.
"""

from __future__ import annotations

import _thread
import sys
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

_PACKAGE = "libcst.metadata"


def defer_metadata_init() -> None:
    if "libcst" in sys.modules or any(isinstance(finder, _DeferredInitFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _DeferredInitFinder())


class _DeferredInitFinder:
    """Finds ``libcst.metadata`` as the path finder does, with its loader wrapped; then steps aside for good."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != _PACKAGE:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = PathFinder.find_spec(fullname, path)  # type: ignore[arg-type]
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return spec  # not the package this was written for: imported as it is
        # A loader by what it does (create_module, exec_module): importlib.abc's base class would cost 9 ms to import.
        spec.loader = _DeferredInitLoader(spec.loader)  # type: ignore[assignment]
        return spec


class _DeferredInitLoader:
    """Creates the package module as its own loader would; runs that loader when a name is read from it."""

    def __init__(self, loader: object) -> None:
        self._loader = loader
        self._lock = _thread.RLock()

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the import system's default module, with __path__ from the spec

    def exec_module(self, module: ModuleType) -> None:
        def __getattr__(name: str) -> object:  # noqa: N807 - the module-level hook of PEP 562
            with self._lock:
                if module.__dict__.get("__getattr__") is __getattr__:
                    del module.__dict__["__getattr__"]
                    self._loader.exec_module(module)  # type: ignore[attr-defined]
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None

        module.__dict__["__getattr__"] = __getattr__
