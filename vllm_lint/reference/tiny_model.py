"""Build a tiny random-weight Llama model and its tokenizer locally, with no download.

The model is only there so that servers can be started and compared: its weights are random, so what it
writes is gibberish, but it is a real ``LlamaForCausalLM`` that both transformers and vLLM load from a
directory, and greedy decoding gives the same tokens in both.

* Tokenizer: a byte-level BPE (vocab 512) trained with ``tokenizers`` on generated English-like text, wrapped
  in ``PreTrainedTokenizerFast`` with a chat template. Its alphabet is printable ASCII plus tab/newline (other
  bytes map to ``<unk>``), so every token the model can emit decodes to valid text.
* Model: ``LlamaForCausalLM`` with random weights (fixed seed), fp32, saved with ``save_pretrained``.
  vLLM's CPU attention needs a head size of 32 or more, so every size keeps ``hidden / heads >= 32``.
* Beside it, built on first use into its ``seq2seq`` folder: a random-weight ``BartForConditionalGeneration``
  of the same shape with the same tokenizer, for servers that load an encoder-decoder model (for a model folder
  not built here, in vllm-lint's cache).

Everything is deterministic: the same size gives byte-identical tokenizer files and equal weights.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

VOCAB_SIZE = 512
MAX_POSITIONS = 2048
SEED = 0
MARKER = "vllm_lint_tiny_model.json"  # what build() records of a model (its size, seed and shape), beside it

SPECIAL_TOKENS = ["<s>", "</s>", "<unk>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class ModelSize:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


SIZES: dict[str, ModelSize] = {
    "S": ModelSize(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128),
    "M": ModelSize(hidden_size=256, num_hidden_layers=4, num_attention_heads=8, intermediate_size=512),
    "L": ModelSize(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=1408),
}

_WORDS = (
    "the a an of to and in is it that for on with as at by from this be are was model server request "
    "token tokens batch engine cache memory prompt reply stream latency throughput queue worker gpu cpu "
    "async await event loop fast slow small large first last next every some many few one two three "
    "four five six seven eight nine ten hello world question answer user assistant system time data "
    "text word line file code test value result error output input send read write start stop run "
    "serve load keep make take give find show tell ask use work call try need want know think say go"
).split()
_PUNCT = [".", ".", ".", "?", "!", ",", ";", ":"]


def corpus(n_sentences: int = 4000, seed: int = SEED) -> list[str]:
    """Deterministic English-like lines (plus digits, code-ish symbols) to train the tokenizer on."""
    rng = random.Random(seed)
    lines = []
    for i in range(n_sentences):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 9999)))
        if rng.random() < 0.5:
            words[0] = words[0].capitalize()
        line = " ".join(words) + rng.choice(_PUNCT)
        if i % 7 == 0:
            line = f"def {rng.choice(_WORDS)}_{rng.choice(_WORDS)}(x, y=[1, 2]): return {{'k': x + y}}  # {line}"
        if i % 11 == 0:
            line = "\t" + line.replace(" ", "_", 2) + ' "quoted" (paren) <tag> a/b\\c @#$%^&*-+=|~`'
        lines.append(line)
    return lines


def _ascii_alphabet() -> list[str]:
    """The byte-level symbols of tab, newline and printable ASCII (GPT-2's byte-to-unicode map)."""
    from tokenizers import pre_tokenizers

    full = pre_tokenizers.ByteLevel.alphabet()  # 256 symbols, one per byte
    # GPT-2's mapping keeps printable bytes as themselves and shifts the others to U+0100.. in byte order.
    shifted = [b for b in range(256) if not (33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255)]
    mapping = {b: chr(b) for b in range(256) if b not in shifted}
    mapping.update({b: chr(256 + i) for i, b in enumerate(shifted)})
    assert set(mapping.values()) == set(full)
    return sorted(mapping[b] for b in [9, 10, *range(32, 127)])


def build_tokenizer(seed: int = SEED):
    """Train the byte-level BPE and wrap it in a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=_ascii_alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(seed=seed), trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<|system|>", "<|user|>", "<|assistant|>"],
        clean_up_tokenization_spaces=False,
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build(directory: str | Path, size: str = "M", seed: int = SEED) -> Path:
    """Write the tokenizer and a random-weight Llama of the given size into ``directory``; return it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}: choose one of {', '.join(SIZES)}")
    shape = SIZES[size]
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer(seed=seed)
    tokenizer.save_pretrained(out)

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_attention_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        # Larger than Llama's 0.02 so that logits are decisive: greedy decoding then picks the same token in
        # transformers and in vLLM instead of flipping on rounding differences between near-equal logits.
        initializer_range=0.3,
        torch_dtype="float32",
    )
    model = _random_greedy_model(LlamaForCausalLM, config, tokenizer, seed)
    model.save_pretrained(out, safe_serialization=True)
    (out / MARKER).write_text(
        json.dumps({"size": size, "seed": seed, **shape.__dict__, "vocab_size": len(tokenizer)}, indent=2)
        + "\n"
    )
    return out


def _random_greedy_model(model_class, config, tokenizer, seed: int, **generation):
    """``model_class(config)`` in float32 with random weights (the same seed gives the same weights), its generation
    config greedy with the tokenizer's special tokens (and ``generation``'s other settings)."""
    import torch
    from transformers import GenerationConfig

    torch.manual_seed(seed)
    with torch.no_grad():
        model = model_class(config).to(torch.float32).eval()
    model.generation_config = GenerationConfig(
        do_sample=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **generation,
    )
    return model


SEQ2SEQ_FOLDER = "seq2seq"  # inside a tiny model's folder: the encoder-decoder model beside it (build_seq2seq)


def seq2seq_dir(model_dir: str | Path) -> Path:
    """Where the encoder-decoder model for the model in ``model_dir`` is kept: inside it where this module built it,
    else in vllm-lint's cache (a model folder of the user's is not written to), named by the folder's path."""
    import hashlib
    import tempfile

    model_dir = Path(model_dir)
    if is_tiny_model(model_dir):
        return model_dir / SEQ2SEQ_FOLDER
    from vllm_lint.resources import user_cache_dir

    cache = user_cache_dir() or Path(tempfile.gettempdir()) / "vllm-lint"
    return cache / f"seq2seq-for-{hashlib.sha256(str(model_dir.resolve()).encode()).hexdigest()[:16]}"


def build_seq2seq(model_dir: str | Path, seed: int = SEED) -> Path:
    """Write a random-weight encoder-decoder model (``BartForConditionalGeneration``) with the tokenizer of the
    model in ``model_dir`` into :func:`seq2seq_dir`; return that folder.

    For the servers that load an encoder-decoder model (``AutoModelForSeq2SeqLM``), which vLLM does not serve
    and a causal LM cannot stand in for: both the bad and the fixed server then load this one, with the
    tokenizer they load from ``model_dir``. Its shape is the causal model's (its size's, where this module built
    it; size S's otherwise). Written to a temporary folder first and renamed, so a server that starts while
    another builds it never reads half a model; the same seed gives equal weights."""
    import os
    import tempfile

    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    model_dir = Path(model_dir)
    out = seq2seq_dir(model_dir)
    shape = SIZES.get(_built_size(model_dir) or "S", SIZES["S"])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=shape.hidden_size,
        encoder_layers=shape.num_hidden_layers,
        decoder_layers=shape.num_hidden_layers,
        encoder_attention_heads=shape.num_attention_heads,
        decoder_attention_heads=shape.num_attention_heads,
        encoder_ffn_dim=shape.intermediate_size,
        decoder_ffn_dim=shape.intermediate_size,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        forced_eos_token_id=None,
        init_std=0.3,  # decisive logits, as the causal model's initializer_range
        dropout=0.0,
    )
    model = _random_greedy_model(BartForConditionalGeneration, config, tokenizer, seed, decoder_start_token_id=tokenizer.bos_token_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".seq2seq-", dir=out.parent))
    tokenizer.save_pretrained(building)
    model.save_pretrained(building, safe_serialization=True)
    try:
        os.rename(building, out)
    except OSError:  # built meanwhile by another server: that one is the same
        import shutil

        shutil.rmtree(building, ignore_errors=True)
    return out


def ensure_seq2seq(model_dir: str | Path) -> Path:
    """The encoder-decoder model for the model in ``model_dir``, built on first use (build_seq2seq)."""
    out = seq2seq_dir(model_dir)
    if (out / "config.json").is_file():
        return out
    return build_seq2seq(model_dir)


def _built_size(directory: Path) -> str | None:
    """The size recorded by :func:`build` in ``directory``'s marker; None without one (or unreadable)."""
    try:
        return json.loads((directory / MARKER).read_text()).get("size")
    except (OSError, ValueError):
        return None


def is_tiny_model(directory: str | Path, size: str | None = None) -> bool:
    """True when ``directory`` already holds a model built here (of ``size`` when given)."""
    directory = Path(directory)
    if not (directory / MARKER).is_file() or not (directory / "config.json").is_file():
        return False
    return size is None or _built_size(directory) == size


def ensure(directory: str | Path, size: str = "M") -> Path:
    """Build the model into ``directory`` unless a model of that size is already there."""
    if is_tiny_model(directory, size):
        return Path(directory)
    return build(directory, size=size)
