"""What the launch rules need from the configuration (imported on every run, so kept light)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LaunchSettings:
    fix_max_model_len: int = 8192
    # The setting, when given: it wins over every pin, a container image's tag included.
    target_vllm_version: str | None = None
    # Mirrors of vllm/vllm-openai (the ``vllm-images`` setting): recognised as vLLM's image, tag and all.
    vllm_images: tuple[str, ...] = ()
