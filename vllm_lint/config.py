"""``[tool.vllm-lint]`` in pyproject.toml, or ``vllm-lint.toml``, merged with CLI flags.

The configuration is found upward from the linted paths; which file applied is
part of the settings (``vllm-lint check --show-settings`` prints it), so users
can see why a rule ran or did not.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from vllm_lint.rulebook import PARSE_ERROR_CODE

KNOWN_KEYS = frozenset(
    {
        "select",
        "ignore",
        "extend-select",
        "per-file-ignores",
        "extend-per-file-ignores",
        "extend",
        "exclude",
        "extend-exclude",
        "target-vllm-version",
        "fix-max-model-len",
        "fixable",
        "unfixable",
        "respect-gitignore",
        "preview",
        "agent-rules-targets",
        "agent-rules-globs",
        "vllm-images",
        "gpu",
        "per-file-gpu",
        "model-facts-from-hub",
    }
)
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d",
    ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vllm_lint_cache", "__pypackages__", "_build",
    "buck-out", "dist", "node_modules", "site-packages", "venv",
)


class ConfigError(Exception):
    """A configuration problem the user must fix; exit code 2."""


@dataclass(frozen=True)
class Settings:
    """The settings in effect for a run: the configuration file's, with the command line's on top."""
    source: Path | None = None  # the file the settings came from
    root: Path = field(default_factory=Path.cwd)  # globs are relative to this
    # Outside a repository, how far up a file's vLLM pin is looked for (vllm_api.targets.file_target): the
    # folders named on the command line and the configuration's; none: up to the filesystem's top.
    pin_search_tops: tuple[Path, ...] = ()
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    target_vllm_version: str | None = None
    fix_max_model_len: int = 8192
    fixable: tuple[str, ...] = ("ALL",)
    unfixable: tuple[str, ...] = ()
    respect_gitignore: bool = True
    preview: bool = False  # run the rules still in preview (their YAML says `preview: true`)
    agent_rules_targets: tuple[str, ...] | None = None
    agent_rules_globs: tuple[str, ...] | None = None
    # Repositories that mirror vllm/vllm-openai by its tags (``registry.corp/mirror/vllm-openai``): their
    # containers run vLLM's image, judged by the release their tag names.
    vllm_images: tuple[str, ...] = ()
    # The GPU type launches run on where their files do not declare one ("A100-80GB"), and per glob.
    gpu: str | None = None
    per_file_gpu: tuple[tuple[str, str], ...] = ()
    model_facts_from_hub: bool = False  # ask the Hugging Face Hub for the config.json of a model no local source knows


def pin_search_tops(paths: list[Path], source: Path | None) -> tuple[Path, ...]:
    """The folders named on the command line and the configuration's (``source``): outside a repository, a
    file's vLLM pin is looked for up to the outermost of them that holds it, whatever the current folder."""
    tops = [path.resolve() for path in paths if path.is_dir()]
    if source is not None:
        tops.append(source.resolve().parent)
    return tuple(dict.fromkeys(tops))


def expand_selectors(selectors: tuple[str, ...] | list[str], codes: list[str], what: str) -> set[str]:
    """``ALL``, ``VLL``, ``VLL2``, ``VLL20``, ``VLL203`` -> the codes they name."""
    chosen: set[str] = set()
    for selector in selectors:
        token = selector.strip().upper()
        if token == "ALL":
            chosen.update(codes)
            continue
        matched = [code for code in codes if code.startswith(token)]
        if not token.startswith("VLL") or not matched:
            raise ConfigError(f"{what}: unknown rule code or prefix {selector!r} (see `vllm-lint rule --all`)")
        chosen.update(matched)
    return chosen


def _strings(value: object, key: str, source: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: `{key}` must be a list of strings")
    return tuple(value)


def _load_table(path: Path) -> dict | None:
    # Imported here: a run with --isolated, or with no configuration file, never needs a TOML parser.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("vllm-lint")
    return data


def find_config(start: Path) -> Path | None:
    """The nearest vllm-lint.toml, or pyproject.toml with a [tool.vllm-lint] table, upward from ``start``."""
    directory = start if start.is_dir() else start.parent
    for candidate_dir in (directory, *directory.parents):
        dedicated = candidate_dir / "vllm-lint.toml"
        if dedicated.is_file():
            return dedicated
        pyproject = candidate_dir / "pyproject.toml"
        if pyproject.is_file():
            try:
                if _load_table(pyproject) is not None:
                    return pyproject
            except ConfigError:
                return pyproject  # report the broken file rather than skip it silently
    return None


def load_settings(path: Path | None, codes: list[str]) -> Settings:
    """The settings of the configuration file at ``path`` (none: the defaults), with those of the files it
    ``extend``s beneath them, as in ruff: a key this file sets replaces the extended file's, and
    ``extend-select``, ``extend-exclude`` and ``extend-per-file-ignores`` add to the base's. Globs and paths are read relative
    to ``path``'s folder, the run's root."""
    if path is None:
        return Settings()
    values = _chained_values(path, codes, ())
    values.update(source=path, root=path.parent.resolve())
    return Settings(**values)


def _chained_values(path: Path, codes: list[str], extending: tuple[Path, ...]) -> dict:
    table = _load_table(path) or {}
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(unknown)} in [tool.vllm-lint]; known: {', '.join(sorted(KNOWN_KEYS))}"
        )
    values: dict = {}
    if "extend" in table:
        base = table["extend"]
        if not isinstance(base, str) or not base.strip():
            raise ConfigError(f"{path}: `extend` must be the path of another configuration file")
        base_path = (path.parent / Path(base).expanduser()).resolve()
        if base_path in extending or base_path == path.resolve():
            raise ConfigError(f"{path}: `extend` makes a loop through {base_path}")
        if not base_path.is_file():
            raise ConfigError(f"{path}: `extend`: {base_path} not found")
        values = _chained_values(base_path, codes, (*extending, path.resolve()))
    own = _table_values(table, path, codes)
    for key in ("extend_select", "extend_exclude"):  # an extending file's additions add to its base's
        if key in own and key in values:
            own[key] = (*values[key], *own[key])
    values.update(own)
    if "extend-per-file-ignores" in table:
        added = _per_file_ignores(table["extend-per-file-ignores"], "extend-per-file-ignores", path, codes)
        values["per_file_ignores"] = (*values.get("per_file_ignores", ()), *added)
    return values


def _per_file_ignores(raw: object, key: str, path: Path, codes: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: `{key}` must be a table of glob = [codes]")
    pairs = []
    for pattern, items in raw.items():
        items = _strings(items, f"{key}.{pattern}", path)
        expand_selectors(items, codes, f"{path}: `{key}.{pattern}`")
        pairs.append((pattern, items))
    return tuple(pairs)


def _table_values(table: dict, path: Path, codes: list[str]) -> dict:
    """The Settings fields one file's own keys set."""
    values: dict = {}
    for key in ("select", "ignore", "extend-select", "fixable", "unfixable"):
        if key in table:
            items = _strings(table[key], key, path)
            expand_selectors(items, codes, f"{path}: `{key}`")
            values[key.replace("-", "_")] = items
    for key in ("exclude", "extend-exclude"):
        if key in table:
            values[key.replace("-", "_")] = _strings(table[key], key, path)
    if "per-file-ignores" in table:
        values["per_file_ignores"] = _per_file_ignores(table["per-file-ignores"], "per-file-ignores", path, codes)
    if "target-vllm-version" in table:
        version = table["target-vllm-version"]
        if not isinstance(version, str) or not all(p.isdigit() for p in version.split(".")) or not version:
            raise ConfigError(f"{path}: `target-vllm-version` must be a version string like \"0.32\"")
        values["target_vllm_version"] = version
    if "fix-max-model-len" in table:
        length = table["fix-max-model-len"]
        if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
            raise ConfigError(f"{path}: `fix-max-model-len` must be a positive integer")
        values["fix_max_model_len"] = length
    for key in ("respect-gitignore", "preview", "model-facts-from-hub"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{path}: `{key}` must be true or false")
            values[key.replace("-", "_")] = table[key]
    for key in ("agent-rules-targets", "agent-rules-globs"):
        if key in table:
            values[key.replace("-", "_")] = _strings(table[key], key, path)
    if "vllm-images" in table:
        images = _strings(table["vllm-images"], "vllm-images", path)
        for image in images:
            if not image.strip() or any(mark in image.rpartition("/")[2] for mark in (":", "@")) or " " in image.strip():
                raise ConfigError(
                    f"{path}: `vllm-images` entries are repositories without a tag or digest, like "
                    f"\"registry.corp/mirror/vllm-openai\" (got {image!r})"
                )
        values["vllm_images"] = tuple(image.strip() for image in images)
    if "gpu" in table:
        values["gpu"] = gpu_setting(table["gpu"], f"{path}: `gpu`")
    if "per-file-gpu" in table:
        raw = table["per-file-gpu"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: `per-file-gpu` must be a table of glob = \"GPU type\"")
        values["per_file_gpu"] = tuple(
            (pattern, gpu_setting(name, f"{path}: `per-file-gpu.{pattern}`")) for pattern, name in raw.items()
        )
    return values


def gpu_setting(value: object, where: str) -> str:
    """The GPU type a ``gpu`` setting or ``--gpu`` names, as the GPU table spells it."""
    from vllm_lint.gpus.names import gpu_from_name
    from vllm_lint.gpus.table import GPU_TYPES

    found = gpu_from_name(value) if isinstance(value, str) else None
    if found is None:
        raise ConfigError(f"{where}: {value!r} is not a GPU type vllm-lint knows ({', '.join(GPU_TYPES)})")
    return found.name


def enabled_codes(settings: Settings, codes: list[str], cli_select=None, cli_ignore=(), cli_extend_select=()) -> frozenset[str]:
    """The codes a run reports. A rule in preview is one of them only with preview on, however it is
    selected (``ALL``, its prefix or its code), as in ruff."""
    select = cli_select if cli_select else settings.select
    chosen = expand_selectors(select, codes, "--select")
    chosen |= expand_selectors(settings.extend_select, codes, "extend-select")
    chosen |= expand_selectors(cli_extend_select, codes, "--extend-select")
    chosen -= expand_selectors(settings.ignore, codes, "ignore")
    chosen -= expand_selectors(cli_ignore, codes, "--ignore")
    if not settings.preview:
        from vllm_lint.rulebook import preview_codes

        chosen -= preview_codes()
    chosen.add(PARSE_ERROR_CODE)  # a file we could not read is always reported
    return frozenset(chosen)
