"""Reference answers for a bad server that answers no request at all: transformers' greedy decoding.

Seed 004's server, for one, calls ``LLM.generate_async``, which vLLM's ``LLM`` does not have: every request
fails, so there is nothing of its own to compare the fixed server with. What its author meant it to answer
is the model's greedy completion of each prompt, which transformers computes here independently of vLLM:
the prompt tokenised as vLLM tokenises it (with the tokenizer's special tokens), ``max_tokens`` new tokens
at most, and the completion decoded as a text-generation pipeline decodes it (the whole sequence, less the
prompt's text). Only the texts are compared then: the server that never answered has no response shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from vllm_lint.reference.loadgen import LoadResult, Record


def greedy_reference(model: Path, requests: int, max_tokens: int, prompt: Callable[[int], str]) -> LoadResult:
    """A LoadResult whose record ``i`` carries the greedy completion of ``prompt(i)`` as its text body."""
    import time

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model))
    lm = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32)
    lm.eval()
    records = []
    start = time.perf_counter()
    for i in range(requests):
        t0 = time.perf_counter()
        inputs = tokenizer(prompt(i), return_tensors="pt")
        with torch.no_grad():
            out = lm.generate(**inputs, max_new_tokens=max_tokens, do_sample=False,
                              pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        whole = tokenizer.decode(sequences[0], skip_special_tokens=True)
        prompt_text = tokenizer.decode(inputs["input_ids"][0], skip_special_tokens=True)
        records.append(Record(i, 200, time.perf_counter() - t0, None, whole[len(prompt_text):], "text/plain",
                              tokens=int(sequences.shape[1] - inputs["input_ids"].shape[1])))
    return LoadResult(concurrency=1, requested=requests, wall=time.perf_counter() - start, records=records)
