"""The launcher's patches in the processes a server framework starts for the file's model.

A LitServe API builds its model in inference workers that ``multiprocessing`` spawns, and a Ray Serve
deployment in replicas that Ray's workers run: fresh interpreters, which the patches the launcher made in its
own process (:func:`vllm_lint.reference.launch.patch_transformers`, ``patch_vllm``) do not reach. So that
every process runs the local model with the same greedy decoding, the launcher hands them down:
:func:`hand_down` puts the patch settings in the environment and ``spawned_site/`` first on ``PYTHONPATH``;
the ``sitecustomize`` module there, which Python's ``site`` imports as each interpreter starts, hands the
launcher's patches to :func:`patch_on_import`, and the patches are made when the process first imports
``transformers`` or ``vllm``, so processes that import neither (Ray's own daemons) pay nothing.

Tokens generated in those processes are not in the launcher's counter: the harness counts them from the
answers.
"""

from __future__ import annotations

import importlib.abc
import json
import os
import sys
from pathlib import Path
from typing import Callable

ENVIRONMENT_VARIABLE = "VLLMLINT_LAUNCH_PATCHES"  # not VLLM_: vLLM warns of every VLLM_ variable it does not know
SITE_DIRECTORY = Path(__file__).resolve().parent / "spawned_site"


def hand_down(model_dir: str, max_tokens: int, kv_cache_bytes: int, max_num_seqs: int | None) -> None:
    """Have every Python process started from now on patch itself as the launcher has."""
    os.environ[ENVIRONMENT_VARIABLE] = json.dumps(
        {
            "model_dir": model_dir,
            "max_tokens": max_tokens,
            "kv_cache_bytes": kv_cache_bytes,
            "max_num_seqs": max_num_seqs,
        }
    )
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE_DIRECTORY), os.environ.get("PYTHONPATH")]))


def handed_down() -> dict | None:
    """The launcher's patch settings, in a process started under :func:`hand_down` (None in any other)."""
    settings = os.environ.get(ENVIRONMENT_VARIABLE)
    return json.loads(settings) if settings else None


def patch_on_import(patches: dict[str, Callable[[], None]]) -> None:
    """Run each patch right after the top-level package it is keyed by is first imported (at once if it is)."""
    for name in [n for n in patches if n in sys.modules]:
        patches.pop(name)()
    if patches:
        sys.meta_path.insert(0, _PatchAfterImport(patches))


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for each watched top-level package, wraps the loader the other finders give,
    so that the patch runs right after the package's own code, before the importer gets the module."""

    def __init__(self, patches: dict[str, Callable[[], None]]) -> None:
        self._patches = patches

    def find_spec(self, fullname, path, target=None):
        patch = self._patches.pop(fullname, None)
        if patch is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, patch: Callable[[], None]) -> None:
        self._loader, self._patch = loader, patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        self._patch()

    def __getattr__(self, name):
        return getattr(self._loader, name)


def keep_children_off_the_file(path: Path) -> None:
    """Processes spawned while the file runs as ``__main__`` (vLLM's engine core under the offline ``LLM``)
    do not run the file again: multiprocessing would re-run it as ``__mp_main__`` in each child, without the
    launcher's patches, so a module-level ``LLM(...)`` there would load the file's own model name and
    settings (its max_model_len above the local model's context fails the engine core's start), and a Gradio
    app would launch itself, unpatched, on Gradio's own port. Not for a LitServe API: its workers unpickle
    the API class the file defines."""
    import multiprocessing.spawn as spawn

    original = spawn.get_preparation_data

    def get_preparation_data(name):
        data = original(name)
        main = data.get("init_main_from_path")
        if main and Path(main).resolve() == path.resolve():
            del data["init_main_from_path"]
        return data

    spawn.get_preparation_data = get_preparation_data
