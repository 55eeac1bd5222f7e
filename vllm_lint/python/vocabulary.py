"""What Python code means for serving, shared by the checkers and the server rewrite: which calls load a model,
which build a transformers pipeline, whether a SamplingParams call serves requests.

Rule modules import this module; nothing imports a rule module.
"""

from __future__ import annotations

import re

from vllm_lint.python.context import PyContext
from vllm_lint.python.model import CallSite

HF_GENERATIVE_MODEL = re.compile(r"^transformers\.(AutoModelFor\w+|\w+ForCausalLM|\w+ForConditionalGeneration|\w+LMHeadModel|\w+ForSeq2SeqLM)\.from_pretrained$")
_MODEL_LOADS = ("vllm.LLM", "vllm.AsyncLLMEngine.from_engine_args", "vllm.LLMEngine.from_engine_args")
# What a fix asks for when the request carries no length of its own.
DEFAULT_MAX_TOKENS = 512


def is_pipeline_factory(qualified: str | None) -> bool:
    return qualified is not None and qualified.startswith("transformers.") and qualified.endswith(".pipeline")


def is_model_load(qualified: str | None) -> bool:
    if qualified is None:
        return False
    if is_pipeline_factory(qualified) or qualified in _MODEL_LOADS:
        return True
    return qualified.startswith("transformers.") and qualified.endswith(".from_pretrained")


def serves_requests(ctx: PyContext, site: CallSite) -> bool:
    semantics = ctx.semantics
    if semantics.enclosing_handler(site.function) is not None or semantics.defines_web_app:
        return True
    return any(
        semantics.callee(other.node) == "vllm.AsyncLLMEngine.from_engine_args" for other in ctx.model.calls
    )
