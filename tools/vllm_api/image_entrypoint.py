"""The ENTRYPOINT of the ``vllm/vllm-openai`` image of a release, read from vLLM's Dockerfile.

The wheel does not hold the Dockerfile; the release's source distribution does (``Dockerfile`` at
its top before 0.9, ``docker/Dockerfile`` since). The image is the Dockerfile's ``vllm-openai``
stage: its own ENTRYPOINT, or the one of the stage it is built ``FROM``.
"""

from __future__ import annotations

import json
import re
import shlex
import tarfile
from pathlib import Path

_FROM = re.compile(r"^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE)
_ENTRYPOINT = re.compile(r"^ENTRYPOINT\s+(.*)$", re.IGNORECASE)
IMAGE_STAGE = "vllm-openai"
DOCKERFILES = ("docker/Dockerfile", "Dockerfile")


def logical_lines(text: str) -> list[str]:
    """Dockerfile lines with ``\\`` continuations joined and comments dropped."""
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current:
            lines.append(current)
        current = ""
    if current:
        lines.append(current)
    return lines


def entrypoint(text: str, stage: str = IMAGE_STAGE) -> list[str] | None:
    """The ENTRYPOINT argv of ``stage``, following its ``FROM`` chain; None when none is set."""
    stages: dict[str, tuple[str, list[str] | None]] = {}
    name = None
    for line in logical_lines(text):
        start = _FROM.match(line)
        if start:
            base, name = start.group(1), (start.group(2) or "").lower() or None
            if name is not None:
                stages[name] = (base.lower(), None)
            continue
        command = _ENTRYPOINT.match(line)
        if command and name is not None:
            stages[name] = (stages[name][0], _argv(command.group(1)))
    seen: set[str] = set()
    current: str | None = stage
    while current is not None and current in stages and current not in seen:
        seen.add(current)
        base, argv = stages[current]
        if argv is not None:
            return argv
        current = base
    return None


def _argv(form: str) -> list[str]:
    form = form.strip()
    if form.startswith("["):
        try:
            parsed = json.loads(form)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(item, str) for item in parsed):
            return parsed
    return ["/bin/sh", "-c", form] if form else []


def from_sdist(sdist: Path) -> tuple[list[str] | None, str]:
    """(ENTRYPOINT argv, which Dockerfile it came from) of a release's ``.tar.gz`` source distribution."""
    with tarfile.open(sdist, "r:gz") as archive:
        members = {member.name.split("/", 1)[-1]: member for member in archive.getmembers() if member.isfile()}
        for relative in DOCKERFILES:
            member = members.get(relative)
            if member is None:
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            text = handle.read().decode("utf-8", errors="replace")
            return entrypoint(text), f"{relative} of {sdist.name}"
    return None, f"no Dockerfile in {sdist.name}"


def from_tree(root: Path) -> tuple[list[str] | None, str]:
    """The same, from an unpacked source tree (a vLLM checkout)."""
    for relative in DOCKERFILES:
        path = root / relative
        if path.is_file():
            return entrypoint(path.read_text(encoding="utf-8", errors="replace")), relative
    return None, "no Dockerfile"


def describe(argv: list[str] | None) -> str:
    return shlex.join(argv) if argv else "(none)"
