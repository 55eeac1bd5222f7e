"""transformers generation keywords -> vLLM ``SamplingParams`` keywords.

Only keywords with one meaning on both sides are carried over; anything else
makes the caller refuse the rewrite with the reason given here. The ones that
choose the tokens go through a helper written into the module, which merges them
with the model's generation config at run time as transformers did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.vocabulary import DEFAULT_MAX_TOKENS

# Same meaning, new name (or the same name).
RENAMED = {
    "max_new_tokens": "max_tokens",
    "min_new_tokens": "min_tokens",
    "num_return_sequences": "n",
}
# How the tokens are chosen: transformers merges these with the model's generation config (greedy unless
# do_sample ends up True), so they reach SamplingParams through the helper that does the same at run time.
DECODING = frozenset({"do_sample", "temperature", "top_p", "top_k", "min_p", "repetition_penalty"})
# vLLM never pads a batch, so a pad token changes nothing there.
DROPPED = frozenset({"pad_token_id"})
# Not generation settings, but options of the text-generation pipeline's output.
OUTPUT_OPTIONS = frozenset({"return_full_text"})
GENERATION_KEYWORDS = frozenset({*RENAMED, *DROPPED, *DECODING, "stop_strings", "max_length"})

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
    """What ``SamplingParams(...)`` gets, as (keyword, source code) pairs, in the caller's order, and the
    call's decoding settings (transformers' names), which the decoding helper merges with the model's."""

    keywords: tuple[tuple[str, str], ...]
    # transformers' max_length counts the prompt's tokens too: max_tokens is then what is left of it
    # after the prompt, counted by the engine's own tokenizer (at least 1, as generate() makes one token).
    counts_prompt: bool = False
    decoding: tuple[tuple[str, str], ...] = ()
    pipeline: bool = False  # a text-generation pipeline's call: its own defaults lie under the model's config

    def render(self, sampling_params: str, decoded_as: str, prompt_tokens: str | None = None) -> str:
        """``SamplingParams(...)``; ``decoded_as`` is the call of the decoding helper up to its keywords
        (``decode_as_transformers(engine``); ``prompt_tokens`` the code counting the prompt's tokens (for max_length)."""
        keywords = self.keywords
        if self.counts_prompt:
            assert prompt_tokens is not None
            keywords = tuple((k, f"max(1, {v} - {prompt_tokens})" if k == "max_tokens" else v) for k, v in keywords)
        decoding = "".join(f", {k}={v}" for k, v in self.decoding)
        under = PIPELINE_DECODING if self.pipeline else "{}"
        return f"{sampling_params}({''.join(f'{k}={v}, ' for k, v in keywords)}**{decoded_as}, {under}{decoding}))"


def sampling_keywords(module: cst.Module, settings: Sequence[tuple[str, cst.BaseExpression]], *, pipeline: bool = False) -> SamplingKeywords:
    """Map transformers generation keywords (later ones win) onto SamplingParams keywords and the decoding
    settings the helper merges with the model's generation config."""
    mapped: dict[str, str] = {}
    decoding: dict[str, str] = {}
    max_length: str | None = None
    new_tokens_given = any(keyword == "max_new_tokens" for keyword, _ in settings)
    for keyword, value in settings:
        code = module.code_for_node(value)
        if keyword in RENAMED:
            mapped[RENAMED[keyword]] = code
        elif keyword == "max_length":
            if not new_tokens_given:  # transformers lets max_new_tokens win over max_length
                mapped["max_tokens"] = max_length = code
        elif keyword in DECODING:
            decoding[keyword] = code
        elif keyword == "stop_strings":
            # transformers keeps the stop string in the text it returns; vLLM drops it unless told not to.
            mapped["stop"] = code
            mapped["include_stop_str_in_output"] = "True"
        elif keyword in DROPPED:
            continue
        else:
            raise NotCarried(refusal_for(keyword))
    # transformers' default is the model's generation config; vLLM's is 16 tokens (see VLL302).
    mapped.setdefault("max_tokens", str(DEFAULT_MAX_TOKENS))
    return SamplingKeywords(
        tuple(mapped.items()), counts_prompt=max_length is not None and mapped["max_tokens"] == max_length,
        decoding=tuple(decoding.items()), pipeline=pipeline,
    )


# What a text-generation pipeline decodes with where the model's generation config says nothing
# (transformers 5.19, pipelines/text_generation.py: TextGenerationPipeline._default_generation_config, which
# Pipeline.__init__ lays under the model's config); its max_new_tokens=256 is the rewrite's own default's business.
PIPELINE_DECODING = '{"do_sample": True, "temperature": 0.7}'

# Written once into a rewritten module whose calls decoded through transformers: what generate() would have
# decoded with, from the generation config vLLM reads for the model (vllm/config/model.py, 0.32:
# ModelConfig.try_get_generation_config, the non-default fields of transformers' GenerationConfig) and
# transformers' own defaults for the rest (GenerationConfig._get_default_generation_params, 5.x).
DECODE_AS_TRANSFORMERS_HELPER = '''{configs} = {{}}


def {config}(engine):
    """The model's generation config (its generation_config.json), read once per engine, as vLLM reads it (kept in
    a plain dict: a functools cache cannot travel with a Ray Serve deployment)."""
    if id(engine) not in {configs}:
        {configs}[id(engine)] = engine.model_config.try_get_generation_config()
    return {configs}[id(engine)]


def {name}(engine, defaults, **call):
    """SamplingParams settings that choose tokens as transformers' generate() did: the call's settings over the
    model's generation config, over ``defaults`` (a pipeline's own), over transformers' defaults (top_k=50); a
    setting the call gives as None is off, as generate() reads it; greedy unless do_sample ends up True."""
    settings = {{"top_k": 50, **defaults, **{config}(engine), **call}}
    neutral = {{"repetition_penalty": 1.0, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0}}
    chosen = {{key: value if settings.get(key) is None else settings[key] for key, value in neutral.items()}}
    if not settings.get("do_sample"):
        return {{"repetition_penalty": chosen["repetition_penalty"], "temperature": 0.0}}
    return chosen
'''

# LLM.generate() without sampling params decodes with LLM.get_default_sampling_params(): the sampling fields
# of the model's generation config (vllm/entrypoints/llm.py, 0.32), which it reads once.
SAMPLING_DEFAULTS_HELPER = '''{read} = {{}}


def {name}(engine):
    """The model's generation config's sampling settings, read once per engine, as LLM.generate() reads them
    (kept in a plain dict: a functools cache cannot travel with a Ray Serve deployment)."""
    if id(engine) not in {read}:
        {read}[id(engine)] = engine.model_config.get_diff_sampling_param()
    return {read}[id(engine)]
'''


# pipeline(task) with no model loads transformers' default for the task at its revision (transformers'
# pipelines/__init__.py: check_task's ["default"]["model"], keyed by framework ("pt") in 4.x, one pair in 5.x;
# pipeline() passes that revision to the model and the tokenizer, and vLLM's tokenizer_revision defaults to the
# model's revision, vllm/config/model.py). The length: vLLM stops at start-up above the model's own (same file).
PIPELINE_DEFAULT_HELPER = '''def {name}(task, longest):
    """The engine arguments for the model transformers' pipeline(task) loads when it names none: the installed
    transformers' default for the task at its revision, as pipeline() reads them, and a max_model_len of at most
    ``longest`` that the model's positions allow."""
    from transformers import AutoConfig
    from transformers.pipelines import check_task

    default = check_task(task)[1]["default"]["model"]
    model, revision = default["pt"] if isinstance(default, dict) else default
    positions = AutoConfig.from_pretrained(model, revision=revision).max_position_embeddings
    return {{"model": model, "revision": revision, "max_model_len": min(longest, positions)}}
'''


# LLM.chat() on the engine: each conversation rendered as LLM.chat() renders it, by vLLM's own functions on the
# engine's renderer (vllm/entrypoints/common/offline.py, 0.32: OfflineInferenceMixin._add_chat_requests and
# _preprocess_chat; the async renderer applies the same template in a worker thread, as vLLM's chat server does),
# then one request each, the final outputs in the conversations' order, as LLM.chat() returns them.
CHAT_OUTPUTS_HELPER = '''async def {name}(
    engine, messages, sampling_params, *, chat_template=None, chat_template_content_format="auto", add_generation_prompt=True,
    continue_final_message=False, tools=None, chat_template_kwargs=None, tokenization_kwargs=None, mm_processor_kwargs=None,
    lora_request=None,
):
    """What LLM.chat() returns for ``messages`` (one conversation, or a list of them), from the engine: each one
    rendered by the engine's renderer as LLM.chat() renders it (the model's chat template unless one is given, a
    generation prompt, no special tokens added by the tokenizer), then one request each."""
    import asyncio
    from uuid import uuid4

    from vllm.entrypoints.common.offline import OfflineInferenceMixin
    from vllm.renderers import ChatParams, merge_kwargs
    from vllm.renderers.inputs.preprocess import conversation_to_seq
    from vllm.utils.mistral import is_mistral_tokenizer

    renderer = engine.renderer
    if (chat_template_kwargs and chat_template_kwargs.get("enable_thinking")) or tools:
        OfflineInferenceMixin._adjust_params_for_parsing(engine, [sampling_params])
    chat_params = ChatParams(
        chat_template=chat_template,
        chat_template_content_format=chat_template_content_format,
        chat_template_kwargs=merge_kwargs(chat_template_kwargs, dict(
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            tools=tools,
            tokenize=is_mistral_tokenizer(renderer.tokenizer) or engine.model_config.enable_prompt_embeds,
        )),
        mm_processor_kwargs=mm_processor_kwargs,
    )
    tok_params = renderer.default_chat_tok_params.with_kwargs(**{{"add_special_tokens": False, **(tokenization_kwargs or {{}})}})
    extras = None if mm_processor_kwargs is None else {{"mm_processor_kwargs": mm_processor_kwargs}}
    _, engine_inputs = await renderer.render_chat_async(conversation_to_seq(messages), chat_params, tok_params, prompt_extras=extras)

    async def final_output(engine_input):
        async for request_output in engine.generate(engine_input, sampling_params, request_id=uuid4().hex, lora_request=lora_request):
            pass  # the stream is cumulative: its last output holds the whole completion
        return request_output

    return list(await asyncio.gather(*(final_output(engine_input) for engine_input in engine_inputs)))
'''
