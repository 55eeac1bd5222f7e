"""The GPU types vllm-lint knows: memory and compute capability, each row with its source.

Memory is the datasheet's figure read as GiB: at least what CUDA reports as the device's total (an
"80 GB" A100 shows 80 GiB, an "80 GB" H100 79.6 GiB), so a rule that compares a need with it errs toward
silence. Compute capabilities are NVIDIA's table, https://developer.nvidia.com/cuda-gpus; an AMD GPU has
none (vLLM's ROCm platform judges by its gfx architecture), so the rules that need one skip it.
"""

from __future__ import annotations


class GpuType:
    # A plain class, not a dataclass: the table is built on every run that sets a GPU (a dataclass costs
    # about a millisecond to build, benchmarks/model_facts_cost.py).
    __slots__ = ("capability", "memory_gib", "name", "source")

    def __init__(self, name: str, memory_gib: float | None, capability: tuple[int, int] | None, source: str) -> None:
        self.name = name  # as the ``gpu`` setting and ``--gpu`` write it: "A100-80GB", "T4", "MI300X"
        self.memory_gib = memory_gib  # None: a family whose sizes differ ("A100" without its size)
        self.capability = capability  # CUDA compute capability; None for AMD
        self.source = source

    @property
    def vendor(self) -> str:
        return "nvidia" if self.capability is not None else "amd"

    @property
    def bf16(self) -> bool | None:
        """Whether the GPU computes in bfloat16 (compute capability 8.0 and above; every AMD GPU listed)."""
        return self.capability >= (8, 0) if self.capability is not None else True

    @property
    def fp8(self) -> bool | None:
        """FP8 tensor cores (compute capability 8.9 and above; MI300 series)."""
        return self.capability >= (8, 9) if self.capability is not None else True


_NV = "https://developer.nvidia.com/cuda-gpus (compute capability); "
_ROWS = (
    GpuType("T4", 16, (7, 5), _NV + "https://www.nvidia.com/en-us/data-center/tesla-t4/"),
    GpuType("V100", None, (7, 0), _NV + "https://www.nvidia.com/en-us/data-center/v100/"),
    GpuType("V100-16GB", 16, (7, 0), _NV + "https://www.nvidia.com/en-us/data-center/v100/"),
    GpuType("V100-32GB", 32, (7, 0), _NV + "https://www.nvidia.com/en-us/data-center/v100/"),
    GpuType("A10", 24, (8, 6), _NV + "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
    GpuType("A10G", 24, (8, 6), _NV + "https://aws.amazon.com/ec2/instance-types/g5/"),
    GpuType("A6000", 48, (8, 6), _NV + "https://www.nvidia.com/en-us/design-visualization/rtx-a6000/"),
    GpuType("L4", 24, (8, 9), _NV + "https://www.nvidia.com/en-us/data-center/l4/"),
    GpuType("L40", 48, (8, 9), _NV + "https://www.nvidia.com/en-us/data-center/l40/"),
    GpuType("L40S", 48, (8, 9), _NV + "https://www.nvidia.com/en-us/data-center/l40s/"),
    GpuType("A100", None, (8, 0), _NV + "https://www.nvidia.com/en-us/data-center/a100/"),
    GpuType("A100-40GB", 40, (8, 0), _NV + "https://www.nvidia.com/en-us/data-center/a100/"),
    GpuType("A100-80GB", 80, (8, 0), _NV + "https://www.nvidia.com/en-us/data-center/a100/"),
    GpuType("A800", None, (8, 0), _NV + "https://www.nvidia.com/en-us/design-visualization/a800/"),
    GpuType("A800-40GB", 40, (8, 0), _NV + "https://www.nvidia.com/en-us/design-visualization/a800/"),
    GpuType("A800-80GB", 80, (8, 0), _NV + "https://www.nvidia.com/en-us/design-visualization/a800/"),
    GpuType("H100", 80, (9, 0), _NV + "https://www.nvidia.com/en-us/data-center/h100/"),
    GpuType("H100-NVL", 94, (9, 0), _NV + "https://www.nvidia.com/en-us/data-center/h100/"),
    GpuType("H800", 80, (9, 0), _NV + "https://www.nvidia.com/en-us/data-center/h800/"),
    GpuType("H200", 141, (9, 0), _NV + "https://www.nvidia.com/en-us/data-center/h200/"),
    GpuType("B200", 192, (10, 0), _NV + "https://www.nvidia.com/en-us/data-center/dgx-b200/"),
    GpuType(
        "RTX3090", 24, (8, 6), _NV + "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/"
    ),
    GpuType("RTX4090", 24, (8, 9), _NV + "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/"),
    GpuType("RTX5090", 32, (12, 0), _NV + "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090/"),
    GpuType("MI300X", 192, None, "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    GpuType("MI325X", 256, None, "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"),
)
GPU_TYPES = {row.name: row for row in _ROWS}


def family_sizes(gpu: GpuType) -> tuple[float, ...]:
    """The memory sizes (GiB) of a family whose name leaves its memory open ("A100": 40 and 80), smallest first;
    empty for a row whose memory is known."""
    if gpu.memory_gib is not None:
        return ()
    prefix = gpu.name + "-"
    return tuple(sorted(row.memory_gib for row in _ROWS if row.name.startswith(prefix) and row.name.endswith("GB") and row.memory_gib))
