"""Write the corpus's files, at the manifest's commits, from local git copies into a folder.

    python benchmarks/realworld/restore.py OUT [--mirrors /work/.mirror] [--manifest benchmarks/realworld/manifest.tsv]

Each file lands at OUT/owner+name/path (the repository's own layout, so version pins and build
contexts sit where the linter looks for them). The copies are read with ``git cat-file``: bare
snapshots as ``fetch`` leaves them (``MIRRORS/owner+name/repo``) or ordinary clones
(``MIRRORS/owner/name``; run ``git fetch`` for the commit first if the clone is older). A repository
that is missing, or lacks a commit, is reported and skipped. OUT must lie outside this repository:
the corpus's files are never committed, only the manifest.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repos import locate

HERE = Path(__file__).resolve().parent
REPOSITORY_ROOT = HERE.parent.parent


def read_manifest(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def folder_name(repository: str) -> str:
    return repository.replace("/", "+")


def _safe(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not PurePosixPath(path).is_absolute() and ".." not in parts


def restore_repository(git_dir: Path, wanted: list[tuple[str, str]], into: Path) -> tuple[int, list[str]]:
    """Write (commit, path) blobs under ``into``; returns how many were written and what was missing."""
    request = "".join(f"{commit}:{path}\n" for commit, path in wanted).encode()
    done = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input=request, capture_output=True, check=False)
    out = done.stdout
    written, missing, position = 0, [], 0
    for commit, path in wanted:
        end = out.find(b"\n", position)
        if end < 0:
            missing.append(f"{path} (git cat-file stopped)")
            continue
        header = out[position:end].split()
        position = end + 1
        if len(header) != 3 or header[1] != b"blob":
            missing.append(f"{path}@{commit[:12]} ({b' '.join(header[1:]).decode(errors='replace') or 'missing'})")
            continue
        size = int(header[2])
        data = out[position:position + size]
        position += size + 1
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    return written, missing


def restore(manifest: Path, mirrors: Path, out: Path) -> dict[str, object]:
    rows = read_manifest(manifest)
    by_repository: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        if _safe(row["path"]):
            by_repository[row["repository"]].append((row["commit"], row["path"]))
    written, absent, missing = 0, [], []
    for repository, wanted in sorted(by_repository.items()):
        git_dir = locate(mirrors, repository)
        if git_dir is None:
            absent.append(repository)
            continue
        count, lost = restore_repository(git_dir, wanted, out / folder_name(repository))
        written += count
        missing += [f"{repository}: {item}" for item in lost]
    return {"rows": len(rows), "written": written, "absent": absent, "missing": missing}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write into, outside this repository")
    parser.add_argument("--mirrors", type=Path, default=Path(os.environ.get("REALWORLD_MIRRORS", "/work/.mirror")),
                        help="folder of local git copies: owner+name/repo (fetch's snapshots) or owner/name (clones)")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.tsv")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if out == REPOSITORY_ROOT or REPOSITORY_ROOT in out.parents:
        parser.error(f"{out} is inside this repository; restore the corpus outside it")
    out.mkdir(parents=True, exist_ok=True)
    result = restore(args.manifest, args.mirrors, out)
    for repository in result["absent"]:
        print(f"missing repository (skipped): {repository}", file=sys.stderr)
    for item in result["missing"]:
        print(f"missing file (skipped): {item}", file=sys.stderr)
    repositories = len({row["repository"] for row in read_manifest(args.manifest)})
    print(f"restored {result['written']} of {result['rows']} manifest rows from "
          f"{repositories - len(result['absent'])} of {repositories} repositories into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
