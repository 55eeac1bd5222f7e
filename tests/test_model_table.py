"""scripts/model_table.py rebuilds the shipped table of model configs from its manifest, offline from files already
downloaded; the shipped table is what its manifest names, row for row."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

from lintutil import REPO

_spec = importlib.util.spec_from_file_location("model_table", REPO / "scripts" / "model_table.py")
assert _spec is not None and _spec.loader is not None
model_table = sys.modules["model_table"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(model_table)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
MANIFEST = (
    "model\tsource\tweight_source\tsecond_source\n"
    f"acme/tiny-base\tacme/zoo@{COMMIT}:configs/tiny-base.json\t-\t-\n"
    "acme/tiny-chat\thf:acme/tiny-chat@5e1f00d\thf:acme/tiny-chat@5e1f00d:model.safetensors.index.json\t-\n"
)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _downloaded(folder: Path) -> None:
    _write(
        folder / "github" / "acme" / "zoo" / COMMIT / "configs" / "tiny-base.json",
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "id2label": {"0": "LABEL_0"},\n'
        ' "max_position_embeddings": 2048, "auto_map": {"AutoConfig": "x.Config"}}\n',
    )
    _write(
        folder / "hf" / "acme" / "tiny-chat" / "5e1f00d" / "config.json",
        '{"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",\n'
        ' "text_config": {"num_attention_heads": 4, "label2id": {"A": 0}},\n'
        ' "quantization_config": {"quant_method": "fp8", "ignore": ["lm_head"], "weight_block_size": [128, 128]}}\n',
    )
    _write(
        folder / "hf" / "acme" / "tiny-chat" / "5e1f00d" / "model.safetensors.index.json",
        '{"metadata": {"total_size": 123456}, "weight_map": {}}\n',
    )


def test_rebuilds_the_table_offline_from_downloaded_files(tmp_path):
    manifest, downloaded, output = tmp_path / "sources.tsv", tmp_path / "downloaded", tmp_path / "table.jsonl"
    manifest.write_text(MANIFEST, encoding="utf-8")
    _downloaded(downloaded)
    code = model_table.main(["--manifest", str(manifest), "--from-dir", str(downloaded), "--output", str(output)])
    assert code == 0
    assert output.read_text(encoding="utf-8") == (
        '{"model": "acme/tiny-base", "config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", '
        '"max_position_embeddings": 2048}, "source": "acme/zoo@' + COMMIT + ':configs/tiny-base.json", '
        '"weight_bytes": null, "weight_source": null}\n'
        '{"model": "acme/tiny-chat", "config": {"architectures": ["Qwen2VLForConditionalGeneration"], '
        '"model_type": "qwen2_vl", "text_config": {"num_attention_heads": 4}, "quantization_config": '
        '{"quant_method": "fp8", "weight_block_size": [128, 128]}}, "source": "hf:acme/tiny-chat@5e1f00d", '
        '"weight_bytes": 123456, "weight_source": '
        '"hf:acme/tiny-chat@5e1f00d:model.safetensors.index.json metadata.total_size"}\n'
    )


def test_a_resaved_copy_keeps_only_what_a_second_copy_agrees_on(tmp_path):
    manifest, downloaded, output = tmp_path / "sources.tsv", tmp_path / "downloaded", tmp_path / "table.jsonl"
    manifest.write_text(
        "model\tsource\tweight_source\tsecond_source\nacme/tiny\thf:someone/tiny-openvino@1\t-\thf:other/tiny-ft@2\n",
        encoding="utf-8",
    )
    _write(
        downloaded / "hf" / "someone" / "tiny-openvino" / "1" / "config.json",
        '{"_name_or_path": "acme/tiny", "architectures": ["LlamaForCausalLM"], "model_type": "llama",'
        ' "num_hidden_layers": 22, "max_position_embeddings": 2048, "pad_token_id": 0, "torch_dtype": "float32",'
        ' "transformers_version": "4.42.4"}',
    )
    _write(
        downloaded / "hf" / "other" / "tiny-ft" / "2" / "config.json",
        '{"_name_or_path": "acme/tiny", "architectures": ["LlamaForCausalLM"], "model_type": "llama",'
        ' "num_hidden_layers": 22, "max_position_embeddings": 2048, "torch_dtype": "float32",'
        ' "transformers_version": "4.42.4", "unsloth_fixed": true}',
    )
    code = model_table.main(["--manifest", str(manifest), "--from-dir", str(downloaded), "--output", str(output)])
    assert code == 0
    assert output.read_text(encoding="utf-8") == (
        '{"model": "acme/tiny", "config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", '
        '"num_hidden_layers": 22, "max_position_embeddings": 2048}, "source": "hf:someone/tiny-openvino@1", '
        '"weight_bytes": null, "weight_source": null}\n'
    )


def test_copies_of_two_different_models_are_refused(tmp_path, capsys):
    manifest, downloaded, output = tmp_path / "sources.tsv", tmp_path / "downloaded", tmp_path / "table.jsonl"
    manifest.write_text(
        "model\tsource\tweight_source\tsecond_source\nacme/tiny\thf:a/x@1\t-\thf:b/y@2\n", encoding="utf-8"
    )
    _write(downloaded / "hf" / "a" / "x" / "1" / "config.json", '{"model_type": "llama"}')
    _write(downloaded / "hf" / "b" / "y" / "2" / "config.json", '{"model_type": "mistral"}')
    code = model_table.main(["--manifest", str(manifest), "--from-dir", str(downloaded), "--output", str(output)])
    assert (code, output.exists()) == (1, False)
    assert capsys.readouterr().err == (
        "model_table: acme/tiny: the two copies disagree on model_type: 'llama', 'mistral'\n"
    )


def test_a_source_missing_from_the_folder_fails_and_says_which(tmp_path, capsys):
    manifest, output = tmp_path / "sources.tsv", tmp_path / "table.jsonl"
    manifest.write_text(MANIFEST, encoding="utf-8")
    code = model_table.main(
        ["--manifest", str(manifest), "--from-dir", str(tmp_path / "empty"), "--output", str(output)]
    )
    assert (code, output.exists()) == (1, False)
    assert capsys.readouterr().err.startswith(
        f"model_table: https://raw.githubusercontent.com/acme/zoo/{COMMIT}/configs/tiny-base.json: no "
    )


def test_sources_name_a_fixed_revision():
    assert model_table.parse_location(f"acme/zoo@{COMMIT}:a/b.json", "config.json").url == (
        f"https://raw.githubusercontent.com/acme/zoo/{COMMIT}/a/b.json"
    )
    assert model_table.parse_location("hf:acme/m@main", "config.json").url == (
        "https://huggingface.co/acme/m/resolve/main/config.json"
    )
    for bad in ("acme/zoo:a.json", "acme/zoo@abc", "hf:m@main", "acme@abc:a.json"):
        try:
            model_table.parse_location(bad, "config.json")
        except model_table.SourceError:
            continue
        raise AssertionError(bad)


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(item) for item in value))
    return set()


def test_the_shipped_table_is_its_manifest_row_for_row():
    manifest = model_table.read_manifest(model_table.MANIFEST)
    rows = [json.loads(line) for line in model_table.TABLE.read_text(encoding="utf-8").splitlines()]
    assert [(row["model"], row["source"]) for row in rows] == [(row["model"], row["source"]) for row in manifest]
    assert len(rows) >= 115
    for row, listed in zip(rows, manifest):
        assert list(row) == ["model", "config", "source", "weight_bytes", "weight_source"], row["model"]
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["model"]), row["model"]
        assert re.fullmatch(r"hf:[\w.-]+/[\w.-]+@[\w.-]+|[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", row["source"]), row[
            "source"
        ]
        assert "architectures" in row["config"] or "model_type" in row["config"], row["model"]
        assert not _keys(row["config"]) & model_table.DROPPED_KEYS, row["model"]
        if listed["second_source"] != "-":
            assert re.fullmatch(r"hf:[\w.-]+/[\w.-]+@[\w.-]+|[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", listed["second_source"])
            assert not set(row["config"]) & model_table.RESAVED_KEYS, row["model"]
        if listed["weight_source"] == "-":
            assert (row["weight_bytes"], row["weight_source"]) == (None, None), row["model"]
        else:
            assert isinstance(row["weight_bytes"], int) and row["weight_source"].startswith(listed["weight_source"])


def test_keep_reuses_the_rows_whose_sources_are_unchanged_and_reads_only_the_new_ones(tmp_path):
    manifest, downloaded, output = tmp_path / "sources.tsv", tmp_path / "downloaded", tmp_path / "table.jsonl"
    _downloaded(downloaded)
    manifest.write_text(MANIFEST, encoding="utf-8")
    assert model_table.main(["--manifest", str(manifest), "--from-dir", str(downloaded), "--output", str(output)]) == 0
    built = output.read_text(encoding="utf-8")
    # The files the rows were built from are gone: only --keep can rebuild, and a new row is read from its file.
    (downloaded / "github").rename(tmp_path / "gone")
    _write(downloaded / "hf" / "acme" / "new" / "1" / "config.json", '{"model_type": "llama"}')
    manifest.write_text(MANIFEST + "acme/new\thf:acme/new@1\t-\t-\n", encoding="utf-8")
    args = ["--manifest", str(manifest), "--from-dir", str(downloaded), "--output", str(output)]
    assert model_table.main(args) == 1
    assert model_table.main([*args, "--keep"]) == 0
    assert output.read_text(encoding="utf-8") == built + (
        '{"model": "acme/new", "config": {"model_type": "llama"}, "source": "hf:acme/new@1", '
        '"weight_bytes": null, "weight_source": null}\n'
    )
