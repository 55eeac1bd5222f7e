"""Which file of a Dockerfile's build context a path in its image comes from (COPY and ADD).

An image often starts through a script it copies in (``COPY entrypoint.sh /`` then ``ENTRYPOINT
["/entrypoint.sh"]``), which runs ``vllm serve "$@"`` with the CMD's words, or ``exec "$@"`` of a CMD
that names vLLM. Reading that script needs the file the COPY took, from the build context: the
Dockerfile's folder, or a folder above it up to the repository's root (``docker build -f docker/Dockerfile
.``). A copy from another stage or a URL, a destination or source with a variable, a COPY with
``--parents``, or the same path in two candidate contexts with different contents: not known, not read.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

_PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
_GLOB = re.compile(r"[*?\[]")
_SHELL_SHEBANG = re.compile(r"^#!\s*\S*(/|\s)(env\s+)?(ba|da|k|z)?sh\b")
_CONTEXT_LEVELS = 3  # folders above the Dockerfile's that may be the build context
_SCRIPT_LIMIT = 256 * 1024


@dataclass(frozen=True, slots=True)
class Copy:
    sources: tuple[str, ...]  # paths in the build context, normalised ("." for all of it)
    dest: str  # absolute path in the image; ends with "/" when it is a folder


def parse_copy(args: str, workdir: str | None) -> Copy | None:
    """A COPY or ADD's arguments; None when what it copies is not from the build context or where it goes
    is not known."""
    args = args.strip()
    if "<<" in args:
        return None  # a here-document's text, not a file of the context
    words = _json_list(args) if args.startswith("[") else args.split()
    if words is None:
        return None
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag.startswith(("--from", "--parents")):
            return None
    if len(words) < 2 or any("$" in word for word in words):
        return None
    *sources, dest = words
    kept = []
    for source in sources:
        if "://" in source or source.startswith("git@"):
            continue
        path = posixpath.normpath(source.lstrip("/") or ".")
        if path == ".." or path.startswith("../"):
            return None
        kept.append(path)
    if not kept:
        return None
    folder = dest.endswith("/") or len(sources) > 1
    if not dest.startswith("/"):
        if workdir is None:
            return None
        dest = posixpath.join(workdir, dest)
    dest = posixpath.normpath(dest)
    return Copy(tuple(kept), dest.rstrip("/") + "/" if folder else dest)


def workdir_after(current: str | None, arg: str) -> str | None:
    arg = arg.strip()
    if not arg or "$" in arg:
        return None
    if arg.startswith("/"):
        return posixpath.normpath(arg)
    return posixpath.normpath(posixpath.join(current, arg)) if current is not None else None


def program_paths(program: str, workdir: str | None) -> list[str]:
    """Where in the image a program named in ENTRYPOINT may be: its path, one relative to WORKDIR, or each
    folder of a usual PATH for a bare name."""
    if program.startswith("/"):
        return [posixpath.normpath(program)]
    if "/" in program:
        return [posixpath.normpath(posixpath.join(workdir, program))] if workdir is not None else []
    return [f"{folder}/{program}" for folder in _PATH_DIRS]


def copied_script(job, copies: list[Copy], paths: list[str]) -> tuple[str, str] | None:
    """The shell script a COPY put at one of ``paths``: (its name in the context, its text), or None."""
    found: dict[str, str] = {}
    for context in _contexts(job.path.parent):
        for path in paths:
            source = _context_file(copies, path, context, job.is_file_beside)
            if source is None:
                continue
            text = job.read_beside(source, _SCRIPT_LIMIT)
            if text is not None:
                found.setdefault(text, source.relative_to(context).as_posix())
            break
    if len(found) != 1:
        return None
    [(text, name)] = found.items()
    first = text.split("\n", 1)[0]
    shell = bool(_SHELL_SHEBANG.match(first)) if first.startswith("#!") else name.endswith(".sh")
    return (name, text) if shell else None


def _contexts(folder: Path) -> list[Path]:
    folder = folder.absolute()
    contexts = [folder]
    for parent in list(folder.parents)[:_CONTEXT_LEVELS]:
        if (contexts[-1] / ".git").exists():
            break  # the repository's root is as far as a build context goes here
        contexts.append(parent)
    return contexts


def _context_file(copies: list[Copy], target: str, context: Path, is_file) -> Path | None:
    """The file under ``context`` that the last COPY writing ``target`` took; None when that COPY's source
    is not there (this is not the build context) or no COPY writes it. ``is_file``: whether a file exists
    (each one asked is a dependency of the reading)."""
    for copy in reversed(copies):
        for source in reversed(copy.sources):
            written, path = _source_for(copy, source, target, context, is_file)
            if path is not None:
                return path if _inside(path, context) else None
            if written:
                return None
    return None


def _source_for(copy: Copy, source: str, target: str, context: Path, is_file) -> tuple[bool, Path | None]:
    """Whether this source certainly writes ``target``, and the context file it takes when it does."""
    if _GLOB.search(source):
        folder, pattern = posixpath.split(source)
        if _GLOB.search(folder) or not copy.dest.endswith("/") or posixpath.dirname(target) != copy.dest.rstrip("/"):
            return False, None
        name = posixpath.basename(target)
        path = context / folder / name
        return False, (path if fnmatch.fnmatchcase(name, pattern) and is_file(path) else None)
    path = context / source if source != "." else context
    if path.is_dir():
        # a folder's contents go into the destination
        dest = copy.dest.rstrip("/")
        if not target.startswith(dest + "/"):
            return False, None
        inner = path / target[len(dest) + 1 :]
        return False, (inner if is_file(inner) else None)
    expected = copy.dest + posixpath.basename(source) if copy.dest.endswith("/") else copy.dest
    if expected != target:
        return False, None
    return True, (path if is_file(path) else None)


def _inside(path: Path, context: Path) -> bool:
    try:
        path.resolve().relative_to(context.resolve())
    except (OSError, ValueError):
        return False
    return True


def _json_list(text: str) -> list[str] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(item, str) for item in value) else None
