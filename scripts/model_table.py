"""Rebuild ``vllm_lint/data/model_configs.jsonl``, the shipped table of model facts, from its manifest of sources.

    python scripts/model_table.py                        # fetch every source over the network (GitHub, the Hub)
    python scripts/model_table.py --download DIR         # the same, keeping each fetched file under DIR
    python scripts/model_table.py --from-dir DIR         # offline, from files already under DIR (as --download lays them)
    python scripts/model_table.py --from-git MIRRORS     # GitHub sources from local git copies where there are
    python scripts/model_table.py --keep --from-dir DIR  # rows already in the table are kept; only new ones are read

The manifest (``vllm_lint/data/model_sources.tsv``) has one row per model: ``model`` (its Hub id), ``source`` (where
its ``config.json`` was read), ``weight_source`` (where the size of its weights was read, or ``-``) and
``second_source`` (``-`` when ``source`` is the model's own file, verbatim). A source is

- ``OWNER/REPO@COMMIT:PATH``: a file in a public GitHub repository at a fixed commit (a repository that vendors the
  model's ``config.json`` verbatim), fetched from ``raw.githubusercontent.com``;
- ``hf:ID@REVISION``: the model's own ``config.json`` on the Hugging Face Hub at that revision;
- for a weight source, either form followed by ``:FILE`` for a file beside the config on the Hub
  (``hf:ID@REVISION:model.safetensors.index.json``): the weight bytes are that index's ``metadata.total_size``.

A copy of the config that someone saved again (``save_pretrained`` rewrites the dtype, the Transformers version and
``_name_or_path``; a fine-tune may change more) is used only with a ``second_source``, another copy read the same
way: the row keeps the keys both copies hold with equal values, less ``RESAVED_KEYS``, and the build fails when the
two disagree on the model's architecture or type.

Each table row is the config as read, less the bulky keys vLLM never reads (``DROPPED_KEYS``, at any depth), with
its source. Fetched files are never committed: the table holds the extracted facts and where they came from.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "vllm_lint" / "data" / "model_sources.tsv"
TABLE = REPO / "vllm_lint" / "data" / "model_configs.jsonl"
COLUMNS = ("model", "source", "weight_source", "second_source")
# Label maps of classification heads and remote-code class paths: large, and nothing vLLM's engine checks read.
DROPPED_KEYS = frozenset({"id2label", "label2id", "auto_map"})
# Inside ``quantization_config``: the names of the modules left unquantized (or quantized otherwise), one per layer
# and expert. vLLM reads them when it builds each layer; the facts the table serves (the method, its bits, the
# model's shape) do not need them, and they were nine tenths of the table's bytes (2.4 MB for one model).
DROPPED_QUANTIZATION_KEYS = frozenset({"quantized_layers", "modules_to_not_convert", "ignore", "exclude_modules"})
# What saving a config again rewrites: never taken from a re-saved copy, even where two copies agree.
RESAVED_KEYS = frozenset({"_name_or_path", "torch_dtype", "dtype", "transformers_version"})
# Two copies that disagree on these are not copies of one model.
IDENTITY_KEYS = ("architectures", "model_type")
WEIGHT_TOTAL = "metadata.total_size"
_HF = "hf:"


class SourceError(Exception):
    """A manifest row names a source that cannot be read or does not hold a config."""


@dataclass(frozen=True)
class Location:
    """One file a manifest row names: on GitHub at a commit, or on the Hub at a revision."""

    hub: bool
    repository: str  # OWNER/REPO on GitHub, the model id on the Hub
    revision: str
    path: str

    @property
    def url(self) -> str:
        if self.hub:
            return f"https://huggingface.co/{self.repository}/resolve/{self.revision}/{self.path}"
        return f"https://raw.githubusercontent.com/{self.repository}/{self.revision}/{self.path}"

    @property
    def relative(self) -> Path:
        """Where ``--download`` keeps the file and ``--from-dir`` looks for it."""
        return Path("hf" if self.hub else "github", *self.repository.split("/"), self.revision, *self.path.split("/"))


def parse_location(text: str, default_file: str) -> Location:
    """``OWNER/REPO@COMMIT:PATH`` or ``hf:ID@REVISION[:FILE]`` (``default_file`` when no file is named)."""
    hub = text.startswith(_HF)
    body = text[len(_HF) :] if hub else text
    repository, at, rest = body.partition("@")
    revision, colon, path = rest.partition(":")
    if not at or not revision or repository.count("/") != 1 or (not hub and not colon):
        raise SourceError(f"not a source: {text!r} (OWNER/REPO@COMMIT:PATH or hf:ID@REVISION[:FILE])")
    return Location(hub, repository, revision, path if colon else default_file)


def without_dropped(value: Any, dropped: frozenset[str] = DROPPED_KEYS) -> Any:
    """``value`` with ``DROPPED_KEYS`` removed from every mapping in it (and ``DROPPED_QUANTIZATION_KEYS`` from its
    quantization configs), the order of the rest kept."""
    if isinstance(value, dict):
        return {
            key: without_dropped(
                item, DROPPED_KEYS | DROPPED_QUANTIZATION_KEYS if key == "quantization_config" else DROPPED_KEYS
            )
            for key, item in value.items()
            if key not in dropped
        }
    if isinstance(value, list):
        return [without_dropped(item) for item in value]
    return value


def read_manifest(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    if rows and tuple(rows[0]) != COLUMNS:
        raise SourceError(f"{path}: the columns are {', '.join(COLUMNS)}")
    seen: set[str] = set()
    for row in rows:
        if row["model"] in seen:
            raise SourceError(f"{path}: {row['model']} is listed twice")
        seen.add(row["model"])
    return rows


Reader = Callable[[Location], bytes]


def network_reader(keep: Path | None) -> Reader:
    def read(location: Location) -> bytes:
        request = urllib.request.Request(location.url, headers={"User-Agent": "vllm-lint model_table"})
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (fixed https hosts)
            data: bytes = response.read()
        if keep is not None:
            target = keep / location.relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return data

    return read


def folder_reader(folder: Path) -> Reader:
    def read(location: Location) -> bytes:
        path = folder / location.relative
        if not path.is_file():
            raise SourceError(f"{location.url}: no {path}")
        return path.read_bytes()

    return read


def git_reader(mirrors: Path, other: Reader) -> Reader:
    """GitHub sources from ``MIRRORS/OWNER/REPO`` clones or ``MIRRORS/OWNER+REPO/repo`` bare copies; Hub sources, and
    GitHub sources with no copy there, from ``other``."""

    def read(location: Location) -> bytes:
        if location.hub:
            return other(location)
        owner, name = location.repository.split("/")
        for candidate in (mirrors / owner / name, mirrors / f"{owner}+{name}" / "repo"):
            if candidate.is_dir():
                shown = subprocess.run(
                    ["git", "-C", str(candidate), "show", f"{location.revision}:{location.path}"],
                    capture_output=True,
                    check=False,
                )
                if shown.returncode == 0:
                    return shown.stdout
                raise SourceError(f"{location.url}: {shown.stderr.decode(errors='replace').strip()}")
        return other(location)

    return read


def weight_bytes(index: dict[str, Any], where: str) -> int:
    total = index.get("metadata", {}).get("total_size")
    if not isinstance(total, int) or isinstance(total, bool):
        raise SourceError(f"{where}: no integer {WEIGHT_TOTAL}")
    return total


def read_config(model: str, source: str, read: Reader) -> dict[str, Any]:
    location = parse_location(source, "config.json")
    try:
        config = json.loads(read(location))
    except (OSError, ValueError) as error:
        raise SourceError(f"{model}: {location.url}: {error}") from error
    if not isinstance(config, dict) or not ("architectures" in config or "model_type" in config):
        raise SourceError(f"{model}: {location.url} is not a model's config.json")
    return config


def agreed(model: str, config: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The keys two re-saved copies of one model's config hold with equal values, less ``RESAVED_KEYS``."""
    for key in IDENTITY_KEYS:
        if config.get(key) != second.get(key):
            raise SourceError(f"{model}: the two copies disagree on {key}: {config.get(key)!r}, {second.get(key)!r}")
    return {
        key: value
        for key, value in config.items()
        if key not in RESAVED_KEYS and key in second and second[key] == value
    }


def table_row(row: dict[str, str], read: Reader) -> dict[str, Any]:
    config = read_config(row["model"], row["source"], read)
    if row["second_source"] not in ("", "-"):
        config = agreed(row["model"], config, read_config(row["model"], row["second_source"], read))
    weights, weight_source = None, None
    if row["weight_source"] not in ("", "-"):
        weight_location = parse_location(row["weight_source"], "model.safetensors.index.json")
        weights = weight_bytes(json.loads(read(weight_location)), weight_location.url)
        weight_source = f"{row['weight_source']} {WEIGHT_TOTAL}"
    return {
        "model": row["model"],
        "config": without_dropped(config),
        "source": row["source"],
        "weight_bytes": weights,
        "weight_source": weight_source,
    }


def render(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def kept_rows(table: Path) -> dict[tuple[str, str, str | None], dict[str, Any]]:
    """The rows of an existing table, by model, source and weight source: ``--keep`` reuses a row whose manifest entry
    still names the same sources instead of reading them again (the files a row was built from need not be at hand)."""
    if not table.is_file():
        return {}
    rows = [json.loads(line) for line in table.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(row["model"], row["source"], row["weight_source"]): row for row in rows}


def _weight_key(row: dict[str, str]) -> str | None:
    return None if row["weight_source"] in ("", "-") else f"{row['weight_source']} {WEIGHT_TOTAL}"


def build(manifest: Path, read: Reader, kept: dict[tuple[str, str, str | None], dict[str, Any]] | None = None) -> str:
    kept = kept or {}
    return render(
        [
            kept.get((row["model"], row["source"], _weight_key(row))) or table_row(row, read)
            for row in read_manifest(manifest)
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--output", type=Path, default=TABLE)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--download", type=Path, metavar="DIR", help="fetch, keeping each file under DIR")
    where.add_argument("--from-dir", type=Path, metavar="DIR", help="read files already under DIR")
    parser.add_argument("--from-git", type=Path, metavar="MIRRORS", help="read GitHub sources from git copies")
    parser.add_argument(
        "--keep", action="store_true", help="keep the output's rows whose model and sources are unchanged, unread"
    )
    args = parser.parse_args(argv)
    read: Reader
    if args.from_dir is not None:
        read = folder_reader(args.from_dir)
    else:
        read = network_reader(args.download)
    if args.from_git is not None:
        read = git_reader(args.from_git, read)
    try:
        text = build(args.manifest, read, kept_rows(args.output) if args.keep else None)
    except SourceError as error:
        print(f"model_table: {error}", file=sys.stderr)
        return 1
    args.output.write_text(text, encoding="utf-8")
    print(f"{args.output}: {text.count(chr(10))} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
