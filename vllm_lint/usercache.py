"""Derived data kept between runs in the user's own cache folder, as marshal (the format of .pyc files).

Only for what can be recomputed from vllm-lint's own files or from the interpreter: the code that
``dataclasses`` compiles (codecache.py), the parsed rule files (rulebook.py) and the packed vLLM API
snapshot (vllm_api). The folder is the user's (``$XDG_CACHE_HOME/vllm-lint``, by default
``~/.cache/vllm-lint``; a relative ``XDG_CACHE_HOME`` is ignored), never a project's, and only files the
user alone can have written are loaded, so none comes from someone else's pull request; the per-project
result cache, which can, is JSON (cache.py).
A missing, stale, corrupt or unwritable store costs only the work it would have saved.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path

# A store that grows past this (entries from older versions of what it caches) is rewritten with only
# the entries the current run used.
_MAX_BYTES = 8 << 20
# So is one of more than this size of which a run used under a quarter of the entries, changed or not: every
# run reads its stores whole (the check command's dataclass code: 1.3 MB and 5 ms a run, after builds from a
# few checkouts), and what an older build left is never asked for again.
_PRUNED_BYTES = 64 << 10
_MOSTLY_UNUSED = 4


def _store_path(name: str) -> Path | None:
    from vllm_lint.resources import user_cache_dir

    folder = user_cache_dir()
    if folder is None or os.environ.get("VLLM_LINT_NO_USER_CACHE"):
        return None
    # marshal data is only readable by the Python that wrote it: one file per interpreter build.
    tag = f"{sys.implementation.cache_tag or sys.implementation.name}-{sys.hexversion:x}"
    return folder / "marshal" / f"{name}.{tag}.marshal"


def _private(stat: os.stat_result) -> bool:
    """Whether only this user could have written the file: loading it runs its code (codecache.py)."""
    owner = getattr(os, "getuid", None)
    if owner is None:
        return True  # not POSIX: no owners or group bits to go by; the folder is the user's profile
    return stat.st_uid == owner() and not stat.st_mode & 0o022


class MarshalStore:
    """A dict of marshal-able values, read once, written back (whole, atomically) when it changed."""

    def __init__(self, name: str) -> None:
        self.path = _store_path(name)
        self._values: dict = {}
        self._used: set = set()
        self._changed = False
        self._loaded_bytes = 0
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as handle:
                if not _private(os.fstat(handle.fileno())):
                    return  # someone else could have written it: recompute, and replace it on save()
                data = handle.read()
            loaded = marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            return  # none yet, or unreadable: start empty, and write a good one on save()
        if isinstance(loaded, dict):
            self._values, self._loaded_bytes = loaded, len(data)

    def get(self, key: object) -> object | None:
        value = self._values.get(key)
        if value is not None:
            self._used.add(key)
        return value

    def put(self, key: object, value: object) -> None:
        self._values[key] = value
        self._used.add(key)
        self._changed = True

    def keep_only(self, key: object, value: object) -> None:
        """``put``, dropping every other entry: for a store of one large value (the newest one wins)."""
        self._values = {}
        self.put(key, value)

    def save(self) -> None:
        if self.path is None:
            return
        # (a process that used none, say one whose modules were all imported already, cannot tell)
        mostly_unused = self._loaded_bytes > _PRUNED_BYTES and 0 < _MOSTLY_UNUSED * len(self._used) < len(self._values)
        if not self._changed and not mostly_unused:
            return
        kept = self._values
        if self._loaded_bytes > _MAX_BYTES or mostly_unused:
            kept = {key: value for key, value in self._values.items() if key in self._used}
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            data = marshal.dumps(kept)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Readable and writable by the user alone, whatever the umask: _private() checks it on load.
            descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(descriptor, "wb") as handle:
                handle.write(data)
            os.replace(temp, self.path)  # concurrent runs each write a whole file; the last one wins
        except (OSError, ValueError):
            # A read-only home, a full disk, or a value marshal cannot store: the next run recomputes.
            try:
                temp.unlink()
            except OSError:
                pass
            return
        self._changed = False
        self._values, self._loaded_bytes = kept, len(data)


_stores: dict[str, MarshalStore] = {}


def store(name: str) -> MarshalStore:
    """The store ``name``, read on first use in this process."""
    found = _stores.get(name)
    if found is None:
        found = _stores[name] = MarshalStore(name)
    return found


def derived_from_file(name: str, path: Path, derive: Callable[[Path], object], only_latest: bool = False) -> object:
    """``derive(path)``, kept in store ``name`` under the file's path, size and mtime (an edited file is
    derived again). ``only_latest``: the store keeps this one file's value, not one per path. The caller
    saves the store when it is done with it."""
    kept_values = store(name)
    stat = path.stat()
    key, stamp = str(path.resolve()), (stat.st_size, stat.st_mtime_ns)
    kept = kept_values.get(key)
    if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == stamp:
        return kept[1]
    value = derive(path)
    (kept_values.keep_only if only_latest else kept_values.put)(key, (stamp, value))
    return value
