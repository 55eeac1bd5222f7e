"""Settings of the reference server: one explicit object, filled from the CLI or from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

ENV_PREFIX = "VLLM_LINT_REF_"

DEFAULT_CPU_KV_CACHE_BYTES = 512 * 2**20


@dataclass
class ServerSettings:
    """Everything the reference server is started with.

    ``None`` means "decide at start-up": ``tensor_parallel_size`` becomes the number of visible GPUs (1 on a
    machine without one), ``kv_cache_memory_bytes`` becomes 512 MiB on the CPU backend (whose default, a
    fraction of the machine's RAM, fails on a shared machine) and stays unset on a GPU, where
    ``gpu_memory_utilization`` sizes the KV cache; ``enforce_eager`` becomes True on the CPU backend.
    """

    model: str
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_model_len: int = 2048
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int | None = None
    kv_cache_memory_bytes: int | None = None
    dtype: str = "auto"
    max_num_seqs: int | None = None
    enforce_eager: bool | None = None
    seed: int = 0
    api_key: str | None = field(default=None, repr=False)
    max_in_flight: int = 256
    max_body_bytes: int = 1 * 2**20
    body_timeout: float = 30.0  # seconds a client may take to send its whole body (slow uploads hold a socket)
    default_max_tokens: int = 16
    log_level: str = "info"

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model

    def validate(self) -> None:
        if not self.model:
            raise ValueError("model is required")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        for name in ("max_model_len", "max_in_flight", "max_body_bytes", "default_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not self.body_timeout > 0:
            raise ValueError("body_timeout must be a positive number of seconds")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides) -> "ServerSettings":
        """Read ``VLLM_LINT_REF_<FIELD>`` variables (e.g. ``VLLM_LINT_REF_MODEL``) for the uvicorn app factory."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "model" not in values:
            raise ValueError(f"set {ENV_PREFIX}MODEL to the model directory or name")
        if "api_key" not in values and env.get("VLLM_API_KEY"):
            values["api_key"] = env["VLLM_API_KEY"]
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def to_env(self) -> dict[str, str]:
        """The inverse of :meth:`from_env`, to hand settings to a uvicorn worker process."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[ENV_PREFIX + f.name.upper()] = str(value)
        return out


_INTS = {"port", "max_model_len", "tensor_parallel_size", "kv_cache_memory_bytes", "max_num_seqs", "seed",
         "max_in_flight", "max_body_bytes", "default_max_tokens"}
_FLOATS = {"gpu_memory_utilization", "body_timeout"}
_BOOLS = {"enforce_eager"}


def _parse(name: str, raw: str) -> object:
    if name in _INTS:
        return int(raw)
    if name in _FLOATS:
        return float(raw)
    if name in _BOOLS:
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    return raw
