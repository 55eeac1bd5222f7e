"""Local git copies of the corpus's repositories, in either layout the folder README describes.

``fetch``'s snapshots: ``MIRRORS/owner+name/repo`` (a bare git directory, or a clone with ``repo/.git``).
Ordinary clones: ``MIRRORS/owner/name`` (with ``.git``, or bare ``name.git``).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Repository:
    name: str  # owner/name
    git_dir: Path
    commit: str  # HEAD's commit


def _git_dir(folder: Path) -> Path | None:
    for candidate in (folder / "repo" / ".git", folder / "repo", folder / ".git", folder):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def _head(git_dir: Path) -> str | None:
    done = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "--verify", "-q", "HEAD^{commit}"],
                          capture_output=True, check=False, text=True)
    return done.stdout.strip() or None


def locate(mirrors: Path, name: str) -> Path | None:
    """The git directory of repository ``owner/name`` under ``mirrors``, or None."""
    owner, _, repo = name.partition("/")
    for folder in (mirrors / f"{owner}+{repo}", mirrors / owner / repo, mirrors / owner / f"{repo}.git"):
        if folder.is_dir():
            found = _git_dir(folder)
            if found is not None:
                return found
    return None


def find_repositories(mirrors: Path) -> list[Repository]:
    """Every repository under ``mirrors`` with a readable HEAD."""
    found: list[Repository] = []
    if not mirrors.is_dir():
        return found
    for entry in sorted(mirrors.iterdir()):
        if not entry.is_dir() or entry.name.endswith(".part"):
            continue
        if "+" in entry.name:
            owner, _, repo = entry.name.partition("+")
            candidates = [(f"{owner}/{repo}", entry)]
        else:
            candidates = [(f"{entry.name}/{sub.name.removesuffix('.git')}", sub) for sub in sorted(entry.iterdir()) if sub.is_dir()]
        for name, folder in candidates:
            git_dir = _git_dir(folder)
            commit = _head(git_dir) if git_dir is not None else None
            if git_dir is not None and commit is not None:
                found.append(Repository(name, git_dir, commit))
    return found
