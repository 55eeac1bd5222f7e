"""The parallelism a launch asks for: read by the rules that compare it with the GPUs a container declares."""

from __future__ import annotations

from vllm_lint.launch.record import Launch
from vllm_lint.values import as_float


def parallel_sizes(launch: Launch) -> tuple[int, int] | None:
    """(tensor, pipeline) parallel size, 1 where unset; None when either is not statically known."""
    sizes = []
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        setting = launch.get(key)
        number = as_float(setting.value) if setting is not None else 1.0
        if number is None:
            return None
        sizes.append(int(number))
    return sizes[0], sizes[1]


def parallel_anchor(launch: Launch) -> object:
    setting = launch.get("tensor_parallel_size") or launch.get("pipeline_parallel_size")
    return setting.anchor if setting else launch.anchor
