"""pip without a package index: a wheelhouse repacked from the distributions this interpreter already has
(vllm-lint's run-time requirements, setuptools to build it, and pip, which pipx upgrades its own to), for the tests that install
vllm-lint as a user does (pre-commit's hook environment, the GitHub Action's virtual environment)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement


def runtime_requirements(name: str, seen: set[str] | None = None) -> set[str]:
    """The distributions ``name`` needs at run time (transitively), as installed here."""
    seen = set() if seen is None else seen
    for spec in metadata.requires(name) or []:
        requirement = Requirement(spec)
        key = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if key in seen or (requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(key)
        runtime_requirements(requirement.name, seen)
    return seen


def repack(distribution: metadata.Distribution, wheelhouse: Path) -> Path:
    """Zip an installed distribution back into a wheel (its files, its WHEEL tags, a fresh RECORD)."""
    tag = next(
        line.split(":", 1)[1].strip()
        for line in distribution.read_text("WHEEL").splitlines()
        if line.startswith("Tag:")
    )
    files = [f for f in distribution.files or [] if f.parts[0] != ".." and "__pycache__" not in f.parts]
    info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    name = re.sub(r"[-_.]+", "_", distribution.metadata["Name"])
    wheel = wheelhouse / f"{name}-{distribution.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            if file.parts[0] == info and file.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = distribution.locate_file(file).read_bytes()
            archive.writestr(file.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{file.as_posix()},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def offline_pip_env(wheelhouse: Path) -> dict[str, str]:
    """The environment variables that make pip install from ``wheelhouse`` only (filled here), building
    vllm-lint in an isolated environment whose setuptools comes from there too."""
    for name in sorted(runtime_requirements("vllm-lint") | {"setuptools", "pip"}):
        repack(metadata.distribution(name), wheelhouse)
    return {
        "PIP_CONFIG_FILE": os.devnull,  # no index or find-links from this machine's pip configuration
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
    }
