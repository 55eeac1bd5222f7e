"""Cut a release: ``python scripts/release.py X.Y.Z``.

1. Sets the version (``vllm_lint/__init__.py``'s ``__version__``, which pyproject.toml reads) and every place
   a user copies it from: the README's pre-commit ``rev: vX.Y.Z`` and the Action's ``@vX.Y.Z`` and
   ``version:``, the same in docs/ and the hook manifest's comment.
2. Turns CHANGELOG.md's "Unreleased" section into "X.Y.Z - date", with a new empty "Unreleased" above it.
3. Builds the sdist and the wheel into dist/ (``python -m build``) and checks them with ``twine check``
   (when either fails, the files are put back as they were).
4. Commits the change, and tags it ``vX.Y.Z`` (annotated): the tag the snippets name.

It pushes and uploads nothing: it prints the two commands that publish the release. The working tree must be
clean and the tag new. ``--no-isolation`` is passed to ``build`` (offline, with setuptools installed).
Needs the ``release`` extra (build, twine).
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERSION_FILE = REPO / "vllm_lint" / "__init__.py"
CHANGELOG = REPO / "CHANGELOG.md"
# The files whose snippets name the release, and how each names it.
SNIPPETS = ("README.md", "docs/ci-and-pre-commit.md", ".pre-commit-hooks.yaml")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_NAMES = (
    (re.compile(r"(rev: v)\d+\.\d+\.\d+"), r"\g<1>{version}"),
    (re.compile(r"(vllm-lint/vllm-lint@v)\d+\.\d+\.\d+"), r"\g<1>{version}"),
    (re.compile(r'((?<![\w-])version: ")\d+\.\d+\.\d+(")'), r"\g<1>{version}\g<2>"),
)


class ReleaseError(Exception):
    pass


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def current_version() -> str:
    match = re.search(r'^__version__ = "([^"]+)"$', VERSION_FILE.read_text(encoding="utf-8"), re.M)
    if match is None:
        raise ReleaseError(f"{VERSION_FILE}: no __version__ line")
    return match.group(1)


def set_version(version: str, today: datetime.date) -> list[Path]:
    """Write ``version`` everywhere it is named; the files changed."""
    changed = []
    text = VERSION_FILE.read_text(encoding="utf-8")
    VERSION_FILE.write_text(
        re.sub(r'^__version__ = "[^"]+"$', f'__version__ = "{version}"', text, flags=re.M), encoding="utf-8"
    )
    changed.append(VERSION_FILE)
    for name in SNIPPETS:
        path = REPO / name
        text = original = path.read_text(encoding="utf-8")
        for pattern, replacement in _NAMES:
            text = pattern.sub(replacement.format(version=version), text)
        if text != original:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    log = CHANGELOG.read_text(encoding="utf-8")
    if "\n## Unreleased\n" not in log:
        raise ReleaseError("CHANGELOG.md has no '## Unreleased' section")
    CHANGELOG.write_text(
        log.replace("\n## Unreleased\n", f"\n## Unreleased\n\n## {version} - {today.isoformat()}\n", 1),
        encoding="utf-8",
    )
    changed.append(CHANGELOG)
    return changed


def build_and_check(version: str, isolation: bool) -> list[Path]:
    dist = REPO / "dist"
    command = [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist)]
    if not isolation:
        command.append("--no-isolation")
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    built = sorted(
        p for p in dist.iterdir() if p.name.startswith(f"vllm_lint-{version}") and p.name.endswith((".whl", ".tar.gz"))
    )
    if len(built) != 2:
        raise ReleaseError(f"expected an sdist and a wheel of {version} in dist/, found {[p.name for p in built]}")
    subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)], check=True)
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("version", help="X.Y.Z")
    parser.add_argument("--no-isolation", action="store_true", help="build without build isolation (offline)")
    args = parser.parse_args(argv)
    version = args.version
    try:
        if not _VERSION.match(version):
            raise ReleaseError(f"{version!r} is not X.Y.Z")
        tag = f"v{version}"
        if git("status", "--porcelain"):
            raise ReleaseError("the working tree has uncommitted changes: commit or stash them first")
        if git("tag", "--list", tag):
            raise ReleaseError(f"the tag {tag} exists already")
        changed = set_version(version, datetime.date.today())
        try:
            built = build_and_check(version, isolation=not args.no_isolation)
        except (ReleaseError, subprocess.CalledProcessError):
            git("checkout", "--", *(str(path.relative_to(REPO)) for path in changed))  # no half release
            raise
        git("add", *(str(path.relative_to(REPO)) for path in changed))
        git("commit", "-q", "-m", f"Release {version}")
        git("tag", "-a", tag, "-m", f"vllm-lint {version}")
    except (ReleaseError, subprocess.CalledProcessError) as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 1
    print(
        f"Tagged {tag} ({git('rev-parse', '--short', 'HEAD')}); built and checked {', '.join(p.name for p in built)}."
    )
    print(f"Publish: git push origin HEAD {tag} && python -m twine upload {' '.join(f'dist/{p.name}' for p in built)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
