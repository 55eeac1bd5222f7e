"""Slurm batch scripts: shell scripts whose ``#SBATCH`` lines declare the machine the job runs on.

``--gres=gpu:[TYPE:]N``, ``--gpus=[TYPE:]N`` (``-G``) and ``--gpus-per-node`` declare the GPUs a launch in the
script sees, on a job of one node (a job over several nodes may spread one engine over them), and their type
where the cluster's TYPE names one ``vllm_lint.gpus`` knows (``a100``, ``h100``; a site's own names are not).
"""

from __future__ import annotations

import re

from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.lazy_re import lazy_compile

_DIRECTIVE = lazy_compile(r"^#SBATCH[ \t]+(?P<option>-[-\w]+)(?:[ =](?P<value>\S+))?", re.MULTILINE)
_GPU_OPTIONS = frozenset({"--gres", "--gpus", "-G", "--gpus-per-node"})
SUFFIXES = (".sbatch", ".slurm")


def is_batch_script_name(name: str) -> bool:
    return suffix_of(name) in SUFFIXES


def batch_container(text: str):
    """What the ``#SBATCH`` lines declare, as the container the launches run in (None: no such lines)."""
    from vllm_lint.cmdline.launches import Container
    from vllm_lint.cmdline.serve_args import Span

    if "#SBATCH" not in text:
        return None
    container = Container(runtime=False)
    nodes = None
    for directive in _DIRECTIVE.finditer(text):
        option, value = directive.group("option"), directive.group("value")
        if option.startswith("--") and "=" in option:
            option, _, value = option.partition("=")
        if option in ("--nodes", "-N"):
            nodes = value
        elif option in _GPU_OPTIONS and value is not None:
            count = gpu_count(value, gres=option == "--gres")
            if count is not None:
                container.gpu_count = count
                container.gpu_anchor = Span(directive.start("value"), directive.end("value"))
                container.gpu_type = gpu_type(value, gres=option == "--gres")
                container.gpu_type_anchor = container.gpu_anchor if container.gpu_type else None
    if nodes not in (None, "1"):
        container.gpu_count, container.gpu_anchor = None, None
    return container


def gpu_count(value: str, gres: bool) -> int | None:
    """GPUs of ``gpu:[TYPE:]N`` (``--gres``) or ``[TYPE:]N`` (``--gpus``); None when not a count of GPUs."""
    for item in value.split(","):
        parts = item.split(":")
        if gres:
            if parts[0] != "gpu":
                continue
            parts = parts[1:]
            if not parts:
                return 1  # gpu alone: one
        count = parts[-1].split("(")[0]
        if count.isdigit():
            return int(count)
        return None
    return None


def gpu_type(value: str, gres: bool) -> str | None:
    """The GPU type of ``gpu:TYPE:N`` (``--gres``) or ``TYPE:N`` (``--gpus``), as ``vllm_lint.gpus`` names it."""
    from vllm_lint.gpus.names import gpu_from_name

    parts = value.split(",")[0].split(":")
    if gres:
        if parts[0] != "gpu":
            return None
        parts = parts[1:]
    if len(parts) != 2 or parts[0].isdigit():
        return None
    gpu = gpu_from_name(parts[0])
    return gpu.name if gpu is not None else None
