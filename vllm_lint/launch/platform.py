"""Which platform a launch runs on, as far as its file says: read by the rules that depend on the device."""

from __future__ import annotations

from vllm_lint.launch.record import Launch


def runs_on_cpu(launch: Launch) -> bool:
    """A launch on vLLM's CPU backend: a ``VLLM_CPU_*`` variable (read only there, vllm/envs.py:887-906) or a CPU image."""
    if any(name.startswith("VLLM_CPU_") for name in launch.env):
        return True
    repository = (launch.image or "").rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].lower()
    return "cpu" in repository.split("-")
