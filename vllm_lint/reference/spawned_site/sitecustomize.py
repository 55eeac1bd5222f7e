"""Imported by Python's ``site`` at start-up in processes a validated server starts (see
:mod:`vllm_lint.reference.spawned`, which puts this folder on their ``PYTHONPATH``)."""

from vllm_lint.reference.spawned import handed_down, patch_on_import


def _patch_transformers(values: dict) -> None:
    # Imported only once the process imports transformers or vLLM: Ray's own daemons import neither.
    from vllm_lint.reference import launch

    launch.patch_transformers(values["model_dir"], values["max_tokens"])


def _patch_vllm(values: dict) -> None:
    from vllm_lint.reference import launch

    launch.patch_vllm(values["model_dir"], values["max_tokens"], values["kv_cache_bytes"], values["max_num_seqs"])


def _patch_on_import() -> None:
    values = handed_down()
    if values is not None:
        patch_on_import({"transformers": lambda: _patch_transformers(values), "vllm": lambda: _patch_vllm(values)})


_patch_on_import()
