"""Refresh the database of vLLM's API (``vllm_lint/vllm_api/data/vllm-api.json``): the one command.

    PYTHONPATH=. python -m tools.vllm_api.refresh [--work DIR] [--sources DIR] [VERSION ...]

Without versions it asks pip which vLLM releases exist (``pip index versions vllm``) and covers
every one from ``--oldest`` (0.6.0) on, so after a new vLLM release the same command adds it. For
each release not read before, it downloads the wheel (``pip download --no-deps --only-binary :all:``),
unpacks its ``.py`` files (and empty stand-ins for its extension modules, whose names are modules
too), reads it statically (``static_read.py``), keeps the reading in ``--work`` and deletes the
wheel and the unpacked files. Reading a release takes ~10-60 s; the ~70 wheels are 6-16 GB in all,
but only one is on disk at a time. Then it writes the database from all the readings.

The image entrypoint of a release comes from the Dockerfile of its source distribution or
checkout, unpacked under ``--sources DIR/<version>/`` (``image_entrypoint.py``); a release without
one keeps the entrypoint of the newest older release that has one (releases older than every one
read take the oldest read), and the database says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tools.vllm_api import database, image_entrypoint
from tools.vllm_api.snapshot_io import write_snapshot
from tools.vllm_api.static_read import StaticReader
from vllm_lint.vllm_api.versionsets import release_key

REPOSITORY = Path(__file__).resolve().parents[2]
DATABASE_FILE = REPOSITORY / "vllm_lint" / "vllm_api" / "data" / "vllm-api.json"
# Bumped when static_read.py reads something new: older readings in --work are read again.
READER_VERSION = 1


def released_versions(python: str) -> list[str]:
    result = subprocess.run(
        [python, "-m", "pip", "index", "versions", "vllm"], capture_output=True, text=True, check=True
    )
    match = re.search(r"Available versions:\s*(.+)", result.stdout)
    if match is None:
        raise SystemExit(f"pip index versions vllm printed no versions:\n{result.stdout}{result.stderr}")
    return [version.strip() for version in match.group(1).split(",") if version.strip()]


def unpack_wheel(wheel: Path, into: Path) -> None:
    """The wheel's Python files and metadata; each extension module as an empty file of its name."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith((".py", ".pyi")) or ".dist-info/" in name:
                archive.extract(name, into)
            elif name.startswith("vllm/") and (name.endswith(".so") or ".so." in name or name.endswith(".pyd")):
                stand_in = into / name
                stand_in.parent.mkdir(parents=True, exist_ok=True)
                stand_in.touch()


def read_release(version: str, python: str, scratch: Path) -> dict:
    download = scratch / "wheel"
    tree = scratch / "tree"
    shutil.rmtree(scratch, ignore_errors=True)
    download.mkdir(parents=True)
    subprocess.run(
        [python, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", f"vllm=={version}", "-d", str(download)],
        check=True,
    )
    wheels = sorted(download.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"pip downloaded no wheel for vllm=={version}")
    unpack_wheel(wheels[0], tree)
    shutil.rmtree(download)
    try:
        return StaticReader(tree, version).snapshot()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def reading(version: str, work: Path, python: str) -> dict:
    path = work / f"vllm-{version}.json"
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("reader") == READER_VERSION:
            return kept
    print(f"reading vllm {version} ...", file=sys.stderr, flush=True)
    snapshot = {"reader": READER_VERSION, **read_release(version, python, work / "scratch")}
    write_snapshot(snapshot, path)
    return snapshot


def entrypoints(versions: list[str], sources: Path | None) -> dict[str, dict]:
    found: dict[str, dict] = {}
    previous: tuple[list[str], str] | None = None
    for version in sorted(versions, key=release_key):  # type: ignore[arg-type]
        argv, where = None, ""
        folder = sources / version if sources is not None else None
        if folder is not None and folder.is_dir():
            roots = [folder, *[child for child in sorted(folder.iterdir()) if child.is_dir()]]
            for root in roots:
                argv, where = image_entrypoint.from_tree(root)
                if argv is not None:
                    where = f"{where} of the vllm {version} source distribution"
                    break
        if argv is not None:
            previous = (argv, version)
            found[version] = {"argv": argv, "source": where}
        elif previous is not None:
            found[version] = {"argv": previous[0], "source": f"not read: the entrypoint of {previous[1]}"}
    # Releases older than the first whose Dockerfile was read (0.6.0-0.6.1's source distributions have
    # none) take the entrypoint of that first one.
    first = next(((version, entry) for version, entry in found.items() if not entry["source"].startswith("not read")), None)
    if first is not None:
        for version in versions:
            if version not in found:
                found[version] = {"argv": first[1]["argv"], "source": f"not read: the entrypoint of {first[0]}"}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Refresh vllm-lint's database of vLLM's API from the released wheels.")
    parser.add_argument("versions", nargs="*", help="releases to cover (default: every release pip lists from --oldest on)")
    parser.add_argument("--oldest", default="0.6.0", help="the oldest release to cover (default: 0.6.0)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "vllm-lint-api-readings",
                        help="where readings are kept between runs (default: %(default)s)")
    parser.add_argument("--sources", type=Path, default=None,
                        help="folder with one unpacked source distribution or checkout per release, for the image entrypoint")
    parser.add_argument("--out", type=Path, default=DATABASE_FILE, help="the database file (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable, help="the Python whose pip downloads the wheels")
    args = parser.parse_args(argv)

    versions = args.versions or released_versions(args.python)
    oldest = release_key(args.oldest)
    versions = sorted({v for v in versions if (key := release_key(v)) is not None and key >= oldest}, key=release_key)  # type: ignore[operator]
    args.work.mkdir(parents=True, exist_ok=True)
    snapshots = {version: reading(version, args.work, args.python) for version in versions}
    built = database.build(snapshots, entrypoints(versions, args.sources))
    size = database.write(built, args.out)
    print(
        f"{len(versions)} releases ({versions[0]} to {versions[-1]}), {len(built['versions'])} database entries "
        f"-> {args.out} ({size:,} bytes)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    sys.exit(main())
