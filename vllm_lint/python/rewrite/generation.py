"""transformers generation keywords -> vLLM ``SamplingParams`` keywords.

Only keywords with one meaning on both sides are carried over; anything else
makes the caller refuse the rewrite with the reason given here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.rewrite.shapes import literal_flag
from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS

# Same meaning, new name (or the same name).
RENAMED = {
    "max_new_tokens": "max_tokens",
    "min_new_tokens": "min_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "repetition_penalty": "repetition_penalty",
    "num_return_sequences": "n",
}
# vLLM never pads a batch, so a pad token changes nothing there.
DROPPED = frozenset({"pad_token_id"})
# Not generation settings, but options of the text-generation pipeline's output.
OUTPUT_OPTIONS = frozenset({"return_full_text"})
GENERATION_KEYWORDS = frozenset({*RENAMED, *DROPPED, "do_sample", "stop_strings", "max_length"})

_WHY_NOT = {
    "streamer": "a streamer callback has no place in the engine's async stream; stream with `async for output in "
    "engine.generate(...)`, whose outputs carry the text so far",
    "num_beams": "beam search is a separate API in vLLM",
    "generation_config": "a GenerationConfig object cannot be read statically",
    "return_tensors": "the pipeline would return token ids, not text",
    "return_text": "the pipeline's output shape depends on it",
}


class NotCarried(Exception):
    """A keyword the rewrite cannot carry over; the message says why."""


def refusal_for(keyword: str) -> str:
    why = _WHY_NOT.get(keyword, "it has no SamplingParams equivalent")
    return f"the generation keyword {keyword}= cannot be carried over ({why})"


@dataclass(frozen=True, slots=True)
class SamplingKeywords:
    """What ``SamplingParams(...)`` gets, as (keyword, source code) pairs, in the caller's order."""

    keywords: tuple[tuple[str, str], ...]
    # transformers' max_length counts the prompt's tokens too: max_tokens is then what is left of it
    # after the prompt, counted by the engine's own tokenizer (at least 1, as generate() makes one token).
    counts_prompt: bool = False

    def render(self, sampling_params: str, prompt_tokens: str | None = None) -> str:
        """``SamplingParams(...)``; ``prompt_tokens`` is the code counting the prompt's tokens (for max_length)."""
        keywords = self.keywords
        if self.counts_prompt:
            assert prompt_tokens is not None
            keywords = tuple((k, f"max(1, {v} - {prompt_tokens})" if k == "max_tokens" else v) for k, v in keywords)
        return f"{sampling_params}({', '.join(f'{k}={v}' for k, v in keywords)})"


def sampling_keywords(module: cst.Module, settings: Sequence[tuple[str, cst.BaseExpression]]) -> SamplingKeywords:
    """Map transformers generation keywords (later ones win) onto SamplingParams keywords."""
    mapped: dict[str, str] = {}
    greedy = False
    max_length: str | None = None
    new_tokens_given = any(keyword == "max_new_tokens" for keyword, _ in settings)
    for keyword, value in settings:
        code = module.code_for_node(value)
        if keyword in RENAMED:
            mapped[RENAMED[keyword]] = code
        elif keyword == "max_length":
            if not new_tokens_given:  # transformers lets max_new_tokens win over max_length
                mapped["max_tokens"] = max_length = code
        elif keyword == "do_sample":
            flag = literal_flag(value)
            if flag is None:
                raise NotCarried("do_sample= is not a literal True/False, so greedy or sampled decoding is unknown")
            greedy = not flag
        elif keyword == "stop_strings":
            # transformers keeps the stop string in the text it returns; vLLM drops it unless told not to.
            mapped["stop"] = code
            mapped["include_stop_str_in_output"] = "True"
        elif keyword in DROPPED:
            continue
        else:
            raise NotCarried(refusal_for(keyword))
    if greedy:
        # do_sample=False: transformers ignores temperature; vLLM decodes greedily at temperature 0.
        mapped["temperature"] = "0"
    # transformers' default is the model's generation config; vLLM's is 16 tokens (see VLL302).
    mapped.setdefault("max_tokens", str(DEFAULT_MAX_TOKENS))
    return SamplingKeywords(tuple(mapped.items()), counts_prompt=max_length is not None and mapped["max_tokens"] == max_length)
