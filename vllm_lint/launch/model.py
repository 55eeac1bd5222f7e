"""The model a launch serves and its facts, for the rules that judge a launch by its model and its GPUs."""

from __future__ import annotations

from pathlib import Path

from vllm_lint.launch.record import Launch
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.models.derive import LengthLimit, max_model_len_limit
from vllm_lint.models.facts import ModelFacts
from vllm_lint.values import as_bool

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


def fix_length(model: str | None, settings: LaunchSettings, api) -> int:
    """The max_model_len a fix writes for ``model`` (judged against ``api``, a ``vllm_api.VllmApi``): the
    ``fix-max-model-len`` setting, or the model's own limit where that is lower (more stops the engine)."""
    length = settings.fix_max_model_len
    if model is None:
        return length
    from vllm_lint.models.lookup import ModelSearch, find_model

    facts = find_model(model, ModelSearch(tuple(Path(folder) for folder in settings.model_folders), settings.model_facts_from_hub))
    if facts is None or not generates(facts):
        return length
    limit = max_model_len_limit(facts, api_versions(api), False)
    return min(length, limit.value) if limit is not None else length


def length_limit(launch: Launch, settings: LaunchSettings, *, shortest: bool = False) -> LengthLimit | None:
    """The longest max_model_len vLLM accepts for the launch's model in every release it targets, where the
    model is known and generates text (a pooling model's length may come from files its facts do not hold)."""
    facts = launch_model(launch, settings)
    if facts is None or not generates(facts):
        return None
    disable = launch.get("disable_sliding_window")
    disabled = as_bool(disable.value) if disable is not None else False
    if disabled is None:
        return None
    return max_model_len_limit(facts, target_versions(launch), disabled, shortest=shortest)


def generates(facts: ModelFacts) -> bool:
    """A text-generating model (a pooling model's length may come from sentence_bert_config.json's
    max_seq_length, vllm/config/model.py:2616-2617, which the facts do not hold)."""
    return any(
        name.endswith(("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")) for name in facts.architectures
    )


def target_versions(launch: Launch) -> tuple[str, ...]:
    return api_versions(launch.target_api())


def api_versions(api) -> tuple[str, ...]:
    """The releases a ``vllm_api.VllmApi`` stands for."""
    return tuple(version for index, version in enumerate(api.database.versions) if api.mask >> index & 1)


def env_flag(launch: Launch, name: str) -> bool | None:
    """An environment variable of the launch read as vLLM reads a flag ("1"/"true"); None when not known."""
    if name not in launch.env:
        return False
    value = launch.env[name]
    if value is None:
        return None
    return str(value.value).strip().lower() in ("1", "true")
