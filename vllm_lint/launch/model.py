"""The model a launch serves and its facts, for the rules that judge a launch by its model and its GPUs."""

from __future__ import annotations

from pathlib import Path

from vllm_lint.launch.record import Launch
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.models.facts import ModelFacts

# Settings that change the config vLLM reads from what the model's config.json says: with one of them the
# facts found are not the ones vLLM will judge by.
_CONFIG_CHANGERS = ("hf_overrides", "hf_config_path", "rope_scaling", "rope_theta", "revision")


def model_name(launch: Launch) -> str | None:
    setting = launch.get("model")
    if setting is None or setting.value is None:
        return None
    value = setting.value.value
    return value.strip() or None if isinstance(value, str) else None


def launch_model(launch: Launch, settings: LaunchSettings) -> ModelFacts | None:
    """The facts of the model the launch serves, where a source knows them and nothing on the launch changes
    what vLLM reads; None otherwise."""
    name = model_name(launch)
    if name is None or any(launch.has(key) for key in _CONFIG_CHANGERS):
        return None
    config_format = launch.get("config_format")
    if config_format is not None and (config_format.value is None or config_format.value.value not in ("auto", "hf")):
        return None
    from vllm_lint.models.lookup import ModelSearch, find_model

    search = ModelSearch(tuple(Path(folder) for folder in settings.model_folders), settings.model_facts_from_hub)
    return find_model(name, search)


def env_flag(launch: Launch, name: str) -> bool | None:
    """An environment variable of the launch read as vLLM reads a flag ("1"/"true"); None when not known."""
    if name not in launch.env:
        return False
    value = launch.env[name]
    if value is None:
        return None
    return str(value.value).strip().lower() in ("1", "true")
