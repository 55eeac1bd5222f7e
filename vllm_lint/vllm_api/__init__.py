"""vLLM's API as a versioned snapshot read off an installed vLLM (see ``introspect.py``).

Rules take every vLLM name from here and never import vLLM themselves: linting
must work (and be fast) on machines where vLLM is not installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from vllm_lint.resources import vllm_api_dir

DEFAULT_VERSION = "0.32.0"


@dataclass(frozen=True, slots=True)
class ServeFlag:
    dest: str
    option_strings: tuple[str, ...]
    kind: str
    nargs: object
    choices: tuple[str, ...] | None
    default: object
    # Values vLLM lists for a flag argparse does not restrict (``--quantization``);
    # ``enforced`` when vLLM rejects any other value later (at model load).
    known_values: tuple[str, ...] | None = None
    known_values_enforced: bool = False

    @property
    def takes_value(self) -> bool:
        return self.kind in ("value", "other") and self.nargs != 0

    @property
    def is_boolean(self) -> bool:
        return self.kind in ("store_true", "store_false", "boolean_optional")


class VllmApi:
    """Read-only views over one snapshot file (as ``_packed`` stores it)."""

    def __init__(self, packed: dict) -> None:
        self._data = packed["rest"]
        self._module_list: str = packed["modules"]
        self._module_attributes: dict[str, tuple[str, bool]] = packed["module_attributes"]
        self.version: str = self._data["vllm_version"]

    @cached_property
    def engine_args(self) -> frozenset[str]:
        return frozenset(self._data["engine_args"])

    @cached_property
    def async_engine_args(self) -> frozenset[str]:
        return frozenset(self._data["async_engine_args"])

    @cached_property
    def llm_init_params(self) -> frozenset[str]:
        # LLM(...) takes its own parameters plus every EngineArgs field via **kwargs.
        return frozenset(self._data.get("llm_init_params", ())) | self.engine_args

    def engine_default(self, field_name: str) -> object:
        return self._data["engine_args"].get(field_name, {}).get("default")

    @cached_property
    def sampling_params(self) -> frozenset[str]:
        return frozenset(self._data["sampling_params"])

    def sampling_default(self, field_name: str) -> object:
        return self._data["sampling_params"].get(field_name, {}).get("default")

    @cached_property
    def serve_flags(self) -> tuple[ServeFlag, ...]:
        return tuple(
            ServeFlag(
                dest=flag["dest"],
                option_strings=tuple(flag["option_strings"]),
                kind=flag["kind"],
                nargs=flag.get("nargs"),
                choices=tuple(flag["choices"]) if flag.get("choices") is not None else None,
                default=flag.get("default"),
                known_values=tuple(flag["known_values"]) if flag.get("known_values") is not None else None,
                known_values_enforced=bool(flag.get("known_values_enforced")),
            )
            for flag in self._data["serve"]["flags"]
        )

    @cached_property
    def modules(self) -> frozenset[str]:
        return frozenset(_lines(self._module_list))

    @cached_property
    def implicit_module_names(self) -> frozenset[str]:
        """Names every module object has (``__file__``, ``__path__``, ...), stored once in the snapshot."""
        return frozenset(self._data.get("implicit_module_names", ()))

    def module_names(self, module: str) -> tuple[frozenset[str], bool] | None:
        """The names a module defines (its own and the implicit ones) and whether that list may be incomplete."""
        entry = self._module_attributes.get(module)
        if entry is None:
            return None
        names, is_open = entry
        return frozenset(_lines(names)) | self.implicit_module_names, is_open

    def class_attributes(self, qualified_class: str) -> frozenset[str] | None:
        names = self._data["class_attributes"].get(qualified_class)
        return frozenset(names) if names is not None else None


def _snapshot_path(version: str) -> Path:
    return vllm_api_dir() / f"vllm-{version}.json"


def available_versions() -> list[str]:
    return sorted(p.stem.removeprefix("vllm-") for p in vllm_api_dir().glob("vllm-*.json"))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


@lru_cache(maxsize=4)
def load_api(version: str | None = None) -> VllmApi:
    """The snapshot for ``version``: the newest shipped one not newer than it.

    A target older than every snapshot uses the oldest: names are checked
    against the closest API we know, and version-dependent rules (VLL204) read
    the target version itself, not the snapshot's.
    """
    versions = available_versions()
    if not versions:
        raise FileNotFoundError(f"no vLLM API snapshot in {vllm_api_dir()}")
    chosen = versions[-1]
    if version is not None:
        older = [v for v in versions if _version_key(v) <= _version_key(version)]
        chosen = max(older, key=_version_key) if older else min(versions, key=_version_key)
    return VllmApi(_snapshot(_snapshot_path(chosen)))


def _lines(text: str) -> list[str]:
    return text.split("\n") if text else []


def _snapshot(path: Path) -> dict:
    """The snapshot, packed, kept in the user's cache. The JSON file is 1.7 MB, mostly the names of 2,647
    modules; parsing it took 17-24 ms of a one-file run, reading the packed form (each module's names as
    one string, split when a rule asks) takes about 3 ms."""
    from vllm_lint.usercache import derived_from_file, store

    # One snapshot per store, by file name: several installs of vllm-lint (a checkout, a venv) read the
    # same version's snapshot from different paths, and each run should load one, not all of them.
    name = f"vllm-api-{_PACK_FORMAT}-{path.stem}"
    packed = derived_from_file(name, path, _read_packed, only_latest=True)
    store(name).save()
    return packed  # type: ignore[return-value]


def _read_packed(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return _packed(json.load(handle))


_PACK_FORMAT = 1  # of _packed's output: change it with _packed, or old stores would still be read


def _packed(data: dict) -> dict:
    """The snapshot with the per-module lists of names joined into strings (names never hold a newline)."""
    rest = {key: value for key, value in data.items() if key not in ("modules", "module_attributes")}
    return {
        "rest": rest,
        "modules": "\n".join(data["modules"]),
        "module_attributes": {
            module: ("\n".join(entry["names"]), bool(entry.get("open")))
            for module, entry in data["module_attributes"].items()
        },
    }
