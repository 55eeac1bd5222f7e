"""Which vLLM releases a file is judged against, and why.

In order: the ``target-vllm-version`` setting (configuration or ``--target-vllm-version``); the
file's own pin (a Dockerfile's ``FROM vllm/vllm-openai:v0.6.3`` or ``pip install vllm==0.6.3``; a Python
module's Modal image, ``pip_install("vllm==0.6.3")``; a
compose service's or Kubernetes container's ``image:`` tag, per launch, is read by the surface);
the project's pin, from the nearest folder above the file with one (``vllm_lint.pins``); else the
newest release known. A range judges against every release in it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# The project's pin (project files, up the tree) is pins.py's; what it answers is part of this module's.
from vllm_lint.pins import (  # noqa: F401 - re-exported
    NEWEST,
    Target,
    folder_file_target,
    folder_target,
    forget_project_files,
    project_target,
    requirement_specifier,
    requirements_file_specifier,
)
from vllm_lint.lazy_re import lazy_compile

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


_IMAGE = lazy_compile(r"^(?:[\w.-]+(?::\d+)?/)*(?:vllm/vllm-openai(?:-[\w.-]+)?|vllm-openai)(?::(?P<tag>[\w.-]+))?(?:@sha256:\w+)?$", re.IGNORECASE)
_TAG_VERSION = lazy_compile(r"^v?(\d+\.\d+(?:\.\d+)*(?:\.?post\d+)?)(?:$|[-+_])")
_PIP_INSTALL = lazy_compile(r"\bpip3?\s+install\b(?P<rest>[^\n;&|]*)|\buv\s+pip\s+install\b(?P<uvrest>[^\n;&|]*)")
_CONTINUATION = lazy_compile(r"\\\r?\n")  # a line continued with a backslash: one line to the shell
_REQUIREMENTS_OPTION = lazy_compile(r"(?:^|\s)(?:-r|--requirement)(?:\s+|=)[\"']?(?P<file>[^\s;&|\"']+)")
_PIP_WORD = lazy_compile(r"""["']?(vllm(?:[-_.]cpu)?(?:\[[^\]]*\])?(?:===|==|~=|>=|<=|!=|<|>)[\w.*,<>=!~]+)["']?""", re.IGNORECASE)
_FROM = lazy_compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)", re.IGNORECASE | re.MULTILINE)
# `ARG VLLM_VERSION=v0.6.3` before `FROM vllm/vllm-openai:${VLLM_VERSION}`: the default is the pin
_ARG = lazy_compile(r"^\s*ARG\s+(\w+)=(\S+)", re.IGNORECASE | re.MULTILINE)
_ARG_USE = lazy_compile(r"\$\{(\w+)\}|\$(\w+)")


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


def dockerfile_target(text: str, where: str, mirrors: tuple[str, ...] = (), folder: Path | None = None) -> Target | None:
    """A Dockerfile's pin: the last ``pip install vllm==X`` (it replaces what the base image had; its words
    may be continued over lines, and a ``-r FILE`` is read from ``folder``, the build context, when it holds
    that file), else the last ``FROM`` of the vLLM image (or of a mirror of it named in ``mirrors``)."""
    installed = _installed(_CONTINUATION.sub(" ", text), where, folder)
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


def _installed(commands: str, where: str, folder: Path | None) -> Target | None:
    """The last vLLM that ``pip install`` (or ``uv pip install``) commands in ``commands`` pin, or None."""
    installed = None
    for match in _PIP_INSTALL.finditer(commands):
        rest = match.group("rest") or match.group("uvrest") or ""
        for option in _REQUIREMENTS_OPTION.finditer(rest):
            specifier = _requirements_pin(folder, option.group("file")) if folder is not None else None
            if specifier:
                installed = Target(specifier, f"{where}: pip install -r {option.group('file')}")
        for word in _PIP_WORD.findall(rest):
            specifier = requirement_specifier(word)
            if specifier:
                installed = Target(specifier, f"{where}: pip install {word}")
    return installed


def _requirements_pin(folder: Path, name: str) -> str | None:
    """The pin of the requirements file ``name`` a Dockerfile installs: the file at that path in the build
    context, else the context's file of that name (``COPY requirements.txt /app/`` then ``-r /app/...``)."""
    if "$" in name:
        return None
    relative = Path(name.lstrip("/"))
    for candidate in (folder / relative, folder / relative.name):
        if candidate.is_file():
            return requirements_file_specifier(candidate)
    return None


# A Modal image built in the module (modal.com/docs/reference/modal.Image): its packages and its base image
_MODAL_INSTALL = lazy_compile(r"\.(?:uv_)?pip_install\s*\((?P<args>[^)]*)\)")
_MODAL_COMMANDS = lazy_compile(r"\.run_commands\s*\((?P<args>[^)]*)\)")
_MODAL_REGISTRY = lazy_compile(r"""\.from_registry\s*\(\s*\\?["'](?P<image>[^"'\\]+)""")
_QUOTED = lazy_compile(r"""\\?["']([^"'\\{}]*)\\?["']""")


# What a module's own pin needs in its text: both words, and one of the calls python_target reads. Each is ASCII, so
# it is in the bytes exactly where it is in the decoded text: may_pin_itself reads them off the bytes.
_PIN_WORDS = ("modal", "vllm")
_PIN_CALLS = ("pip_install", "run_commands", "from_registry")
_PIN_WORD_BYTES = tuple(word.encode() for word in _PIN_WORDS)
_PIN_CALL_BYTES = tuple(call.encode() for call in _PIN_CALLS)


def may_pin_itself(data: bytes, present: Callable[[bytes, bytes], bool] = bytes.__contains__) -> bool:
    """Whether a module's bytes hold what python_target needs (most modules are then neither decoded nor read).
    ``present(data, word)`` answers ``word in data``, by default so; a caller may have a cheaper way (the
    pre-filter's one scan of the file for all its words: the calls, absent from almost every module, otherwise
    cost a scan each)."""
    return all(present(data, word) for word in _PIN_WORD_BYTES) and any(present(data, call) for call in _PIN_CALL_BYTES)


def python_target(text: str, where: str, mirrors: tuple[str, ...] = ()) -> Target | None:
    """A Python module's own pin: the vLLM its Modal image installs (``pip_install("vllm==0.6.2")``,
    ``uv_pip_install``, ``run_commands("pip install vllm==...")``), else the tag of the vLLM image it starts
    from (``from_registry("vllm/vllm-openai:v0.6.2")``); None when there is none, or when two images of the
    module pin different releases."""
    # Each expression below starts with a ".", which ``re`` would try at every dot of the module ("multimodal"
    # is in most of vLLM's own): substring tests first.
    if not all(word in text for word in _PIN_WORDS) or not any(call in text for call in _PIN_CALLS):
        return None
    pins: dict[str | None, Target] = {}
    for match in _MODAL_INSTALL.finditer(text):
        for item in _QUOTED.findall(match.group("args")):
            specifier = requirement_specifier(item)
            if specifier:
                pins.setdefault(specifier, Target(specifier, f"{where}: Modal image pip_install {item}", own=True))
    for match in _MODAL_COMMANDS.finditer(text):
        for item in _QUOTED.findall(match.group("args")):
            installed = _installed(item, where, None)
            if installed is not None:
                pins.setdefault(installed.specifier, Target(installed.specifier, installed.reason, own=True))
    if not pins:
        for match in _MODAL_REGISTRY.finditer(text):
            image = image_target(match.group("image"), where, mirrors)
            if image is not None and image.specifier is not None:
                pins.setdefault(image.specifier, Target(image.specifier, image.reason, own=True))
    return next(iter(pins.values())) if len(pins) == 1 else None


def file_target(path: Path, dockerfile: str | None, configured: str | None, tops: tuple[Path, ...] = (),
                mirrors: tuple[str, ...] = (), python: str | None = None) -> Target:
    """The target of one file (see the module docstring for the order); ``dockerfile``: the file's
    text when it is a Dockerfile. The project's pin is looked for from the file's folder up to its
    repository's top (the folder with ``.git``), or, outside a repository, up to the outermost of ``tops``
    (the folders named on the command line, the configuration's folder) that holds the file, else up to
    the filesystem's top: what decides is where the file is and what was named, never the current folder."""
    if configured:
        return Target(configured, "target-vllm-version setting")
    if dockerfile is not None:
        own = dockerfile_target(dockerfile, path.name, mirrors, path.parent)
        if own is not None:
            return own
    if python is not None:
        own = python_target(python, path.name, mirrors)
        if own is not None:
            return own
    if os.path.islink(path):  # the project of the file it points to
        return folder_file_target(os.path.dirname(os.path.realpath(path)), tops)
    return folder_file_target(os.path.dirname(os.fspath(path)), tops)
