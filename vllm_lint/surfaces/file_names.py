"""What a file's name says of its kind, for the surfaces' claims and a job's vLLM target (no imports: every run
loads it)."""

from __future__ import annotations


def suffix_of(name: str) -> str:
    """A file name's suffix, as pathlib's ``PurePath.suffix`` gives it ("" for ".bashrc" and "a.")."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


# Files whose text is Python (a notebook's cells too): where a module's own vLLM pin (a Modal image) is read
PYTHON_SUFFIXES = frozenset({".py", ".ipynb"})


def is_dockerfile_name(name: str) -> bool:
    # Containerfile is Podman's name for it (pre-commit tags both "dockerfile").
    return (
        name in ("Dockerfile", "Containerfile")
        or name.startswith(("Dockerfile.", "Containerfile."))
        or name.endswith((".dockerfile", ".Dockerfile", ".containerfile", ".Containerfile"))
    )
