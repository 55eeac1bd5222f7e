"""The tiny-model builder (size S: a few seconds, no vLLM needed)."""

from __future__ import annotations

import hashlib
import json

import pytest

from .conftest import require_modules


def test_tiny_model_loads_and_generates(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] // config["num_attention_heads"] >= 32  # CPU attention's minimum head size
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"]) == (64, 2, 2)

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert len(tok) == 512 == config["vocab_size"]
    ids = tok.encode("Hello world, def f(x): return 1")
    assert ids[0] == tok.bos_token_id
    assert tok.decode(ids, skip_special_tokens=True) == "Hello world, def f(x): return 1"
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert chat.endswith("<|assistant|>\n")

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    inputs = tok("Hello", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert out.shape[1] >= inputs["input_ids"].shape[1] + 1
    # every token the model can emit decodes to text (the alphabet is printable ASCII)
    assert all(ch.isprintable() or ch in "\t\n" for ch in tok.decode(list(range(len(tok))), skip_special_tokens=True))


def test_tiny_model_is_deterministic(tiny_model_dir, tmp_path):
    from vllm_lint.reference.tiny_model import build, ensure, is_tiny_model

    again = build(tmp_path / "again", size="S")

    def digest(d):
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}

    assert digest(again) == digest(tiny_model_dir)
    assert is_tiny_model(again, "S") and not is_tiny_model(again, "M")
    assert ensure(again, "S") == again  # already there: nothing rebuilt


def test_unknown_size():
    require_modules("torch", "transformers", "tokenizers", what="the tiny model")
    from vllm_lint.reference.tiny_model import build

    with pytest.raises(ValueError, match="S, M, L"):
        build("/nonexistent", size="XL")


def test_make_tiny_model_command(tmp_path):
    require_modules("torch", "transformers", "tokenizers", what="the tiny model")
    from click.testing import CliRunner

    from vllm_lint.cli.reference import reference

    result = CliRunner().invoke(reference, ["make-tiny-model", str(tmp_path / "m"), "--size", "s"])
    assert result.exit_code == 0, result.output
    assert "hidden 64" in result.output and (tmp_path / "m" / "model.safetensors").is_file()


def test_an_encoder_decoder_model_is_built_beside_it_with_its_tokenizer(tiny_model_dir, tmp_path, monkeypatch):
    """For servers that load AutoModelForSeq2SeqLM: a Bart of the causal model's shape, built once, in a copy (the
    session's model folder is digested file by file above)."""
    import shutil

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from vllm_lint.reference.tiny_model import SEQ2SEQ_FOLDER, ensure_seq2seq

    model_dir = shutil.copytree(tiny_model_dir, tmp_path / "model")
    out = ensure_seq2seq(model_dir)
    assert out == model_dir / SEQ2SEQ_FOLDER
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BartForConditionalGeneration"]
    assert (config["d_model"], config["encoder_layers"], config["vocab_size"]) == (64, 2, 512)
    built = (out / "model.safetensors").stat().st_mtime_ns
    assert ensure_seq2seq(model_dir) == out and (out / "model.safetensors").stat().st_mtime_ns == built
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSeq2SeqLM.from_pretrained(out)
    inputs = tok(["Hello world"], return_tensors="pt")
    with torch.no_grad():
        first, again = (model.generate(**inputs, max_new_tokens=4, do_sample=False) for _ in range(2))
    assert first.shape == (1, 5) and torch.equal(first, again)
    # A model folder not built here (the user's --model) is not written to: its Bart is kept in the cache.
    (model_dir / "vllm_lint_tiny_model.json").unlink()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ensure_seq2seq(model_dir).parent == tmp_path / "cache" / "vllm-lint"


def test_the_launcher_tells_an_encoder_decoder_class():
    require_modules("transformers", what="the launcher's model classes")
    import transformers

    from vllm_lint.reference.launch import _seq2seq_class

    assert _seq2seq_class(transformers.AutoModelForSeq2SeqLM)
    assert _seq2seq_class(transformers.BlenderbotSmallForConditionalGeneration)
    assert not _seq2seq_class(transformers.AutoModelForCausalLM)
    assert not _seq2seq_class(transformers.LlamaForCausalLM)
