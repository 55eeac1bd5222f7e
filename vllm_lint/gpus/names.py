"""A GPU type from the name a deployment gives it: a Kubernetes ``nvidia.com/gpu.product`` label
(``NVIDIA-A100-SXM4-80GB``), a GKE accelerator (``nvidia-tesla-t4``, ``nvidia-h100-80gb``), a SkyPilot,
Modal or dstack name (``A100-80GB``, ``H100``), a Ray ``accelerator_type`` (``A100-80G``), the ``gpu``
setting, or a cloud instance type (AWS ``g5.2xlarge``)."""

from __future__ import annotations

import re

from vllm_lint.gpus.table import GPU_TYPES, GpuType
from vllm_lint.lazy_re import lazy_compile

_SIZE = lazy_compile(r"^(\d+)GB?$")
_MODEL_TOKENS = {
    "T4": "T4",
    "V100": "V100",
    "A10": "A10",
    "A10G": "A10G",
    "A6000": "A6000",
    "L4": "L4",
    "L40": "L40",
    "L40S": "L40S",
    "A100": "A100",
    "A800": "A800",
    "H100": "H100",
    "H800": "H800",
    "H200": "H200",
    "B200": "B200",
    "3090": "RTX3090",
    "RTX3090": "RTX3090",
    "4090": "RTX4090",
    "RTX4090": "RTX4090",
    "5090": "RTX5090",
    "RTX5090": "RTX5090",
    "MI300X": "MI300X",
    "MI325X": "MI325X",
}
# AWS instance families with one GPU type: https://aws.amazon.com/ec2/instance-types/accelerated-computing/;
# per-GPU memory of g4dn (16 GiB), g5 and g6 (24 GiB), p3 (16 GiB) as AWS Batch's GPU jobs page lists it
# (https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html).
_INSTANCE_FAMILIES = {
    "g4dn": "T4",
    "g5": "A10G",
    "g6": "L4",
    "g6e": "L40S",
    "p3": "V100-16GB",
    "p3dn": "V100-32GB",
    "p4d": "A100-40GB",
    "p4de": "A100-80GB",
    "p5": "H100",
    "p5e": "H200",
    "p5en": "H200",
}


def gpu_from_name(text: str) -> GpuType | None:
    """The type a GPU name means, or None for a name that is not one (or is ambiguous)."""
    tokens = [token for token in re.split(r"[-_\s/.]+", text.strip().upper()) if token]
    model = None
    size = None
    nvl = False
    for token in tokens:
        if token in _MODEL_TOKENS:
            if model is not None and _MODEL_TOKENS[token] != model:
                return None
            model = _MODEL_TOKENS[token]
        elif (match := _SIZE.match(token)) is not None:
            size = int(match.group(1))
        elif token == "NVL":
            nvl = True
    if model is None:
        return None
    if model == "H100" and nvl:
        return GPU_TYPES["H100-NVL"]
    if size is not None and f"{model}-{size}GB" in GPU_TYPES:
        return GPU_TYPES[f"{model}-{size}GB"]
    return GPU_TYPES.get(model)


def gpu_from_instance_type(text: str) -> GpuType | None:
    family = text.strip().lower().split(".", 1)[0]
    name = _INSTANCE_FAMILIES.get(family)
    return GPU_TYPES[name] if name else None
