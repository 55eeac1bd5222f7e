"""What the launch rules need from the configuration (imported on every run, so kept light)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LaunchSettings:
    """The settings the rules over a launch read."""
    fix_max_model_len: int = 8192
    # The setting, when given: it wins over every pin, a container image's tag included.
    target_vllm_version: str | None = None
    # Mirrors of vllm/vllm-openai (the ``vllm-images`` setting): recognised as vLLM's image, tag and all.
    vllm_images: tuple[str, ...] = ()
    # The GPU type this file's launches run on where they do not declare one (the ``gpu`` setting, its
    # ``per-file-gpu`` override for the file, or ``--gpu``), as ``vllm_lint.gpus`` names it.
    gpu: str | None = None
    # Where a relative model path is looked for: the launching file's folder, then the project's root.
    model_folders: tuple[str, ...] = ()
    # Ask the Hugging Face Hub for a model's config.json no local source knows (``model-facts-from-hub``).
    model_facts_from_hub: bool = False
