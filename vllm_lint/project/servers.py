"""The server fact of a vLLM launch: the addresses it listens at and the model names it answers to."""

from __future__ import annotations

from vllm_lint.launch.defaults import DEFAULT_PORT
from vllm_lint.launch.record import Launch
from vllm_lint.project.facts import ANY_HOST, LOCALHOST, Server
from vllm_lint.values import as_float

# Either lets a request name a model the server was not started with (vllm/envs.py:128 and :322; the check that uses
# them is OpenAIServing._check_model, vllm/entrypoints/serve/engine/serving.py:49-91, 0.32.0).
_ANY_NAME_ENV = ("VLLM_SKIP_MODEL_NAME_VALIDATION", "VLLM_ALLOW_RUNTIME_LORA_UPDATING")


def _port(launch: Launch) -> int | None:
    setting = launch.get("port")
    if setting is None:
        return DEFAULT_PORT
    number = as_float(setting.value)
    return int(number) if number is not None and number == int(number) else None


def _addresses(launch: Launch, port: int | None) -> tuple[tuple[str, int | None], ...]:
    reach = launch.reach
    if not reach.known:
        return ((ANY_HOST, port),)
    addresses: list[tuple[str, int | None]] = [(LOCALHOST, port)] if reach.local else []
    addresses += [(name.lower(), port) for name in reach.names]
    if reach.published is None:
        addresses.append((LOCALHOST, None))  # published ports not understood: any port on this machine
    else:
        addresses += [(LOCALHOST, host) for host, container in reach.published if None in (port, container) or container == port]
    return tuple(addresses)


def _lora_names(launch: Launch) -> tuple[str, ...] | None:
    """``--lora-modules name=path ...`` adds each name (a JSON form, or one not known here: None)."""
    setting = launch.get("lora_modules")
    if setting is None:
        return ()
    if setting.value is None or "{" in str(setting.value.value):
        return None
    names = []
    for item in str(setting.value.value).split():
        name, eq, _ = item.partition("=")
        if not eq or not name:
            return None
        names.append(name)
    return tuple(names)


def served_names(launch: Launch) -> tuple[str, ...] | None:
    """The names a request's ``model`` may take: ``--served-model-name``'s, else the model's own
    (vllm/entrypoints/launchers/api_server/app_state.py:49-61, 0.32.0), and the LoRA modules'."""
    if launch.opaque or any(name in launch.env for name in _ANY_NAME_ENV):
        return None
    served = launch.get("served_model_name") or launch.get("model")
    lora = _lora_names(launch)
    if served is None or served.value is None or lora is None:
        return None
    return (*str(served.value.value).split(), *lora)


# The settings that say where a server listens and which names it answers to.
ADDRESS_AND_NAMES = frozenset({"port", "served_model_name", "model", "lora_modules"})


def server_fact(launch: Launch, line: int) -> Server | None:
    if launch.entrypoint not in ("serve", "api_server", "image"):  # "image": vLLM's image runs one of the two
        return None
    port = _port(launch)
    return Server(line, _addresses(launch, port), served_names(launch))
