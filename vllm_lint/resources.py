"""Where the shipped data lives (in the wheel, or at the top of a source checkout), and where per-user
derived data goes."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _shipped_or_checkout(installed_folder: str, checkout_folder: str) -> Path:
    # In a wheel, rules/ and templates/ are installed inside the package as
    # _rules/ and _templates/ (see setup.py); in a source checkout they sit
    # beside the package.
    installed = _PACKAGE_DIR / installed_folder
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / checkout_folder


def rules_dir() -> Path:
    return _shipped_or_checkout("_rules", "rules")


def templates_dir() -> Path:
    return _shipped_or_checkout("_templates", "templates")


def vllm_api_dir() -> Path:
    return _PACKAGE_DIR / "vllm_api" / "data"


def user_cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/vllm-lint`` (by default ``~/.cache/vllm-lint``); None when there is no home folder.

    A relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification says: it would put the cache in
    whatever project the command runs in, where a pull request could commit files into it."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            return None
    return Path(base) / "vllm-lint"
