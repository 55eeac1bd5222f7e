"""validate's decoding check: transformers' generation configs and vLLM's SamplingParams read in one form, and
the rewrite's decoding helper against transformers' own merge of a call with the model's generation config."""

from __future__ import annotations

import pytest

from vllm_lint.reference import decoding

transformers = pytest.importorskip("transformers")
vllm = pytest.importorskip("vllm")


def _effective(model_config: dict, **call) -> dict:
    """What transformers' generate() decodes with, for a model whose generation config is ``model_config``."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM(LlamaConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                                         num_attention_heads=1, num_key_value_heads=1))
    model.generation_config = GenerationConfig(**model_config)
    config, _ = model._prepare_generation_config(None, **call)
    return decoding.of_generation_config(config)


def _helper(model_config: dict, defaults: dict, **call) -> dict:
    """The rewrite's helper, as written into a rewritten module, run on an engine whose generation config
    vLLM reads as ``model_config``'s non-default fields."""
    from transformers import GenerationConfig
    from vllm import SamplingParams

    from vllm_lint.python.rewrite.generation import DECODE_AS_TRANSFORMERS_HELPER

    namespace: dict = {}
    exec(DECODE_AS_TRANSFORMERS_HELPER.format(configs="generation_config_by_engine", config="generation_config",
                                                                     name="decode_as"), namespace)

    class ModelConfig:
        def try_get_generation_config(self):  # vllm/config/model.py, 0.32
            return GenerationConfig(**model_config).to_diff_dict()

    class Engine:
        model_config = ModelConfig()

    return decoding.of_sampling_params(SamplingParams(max_tokens=8, **namespace["decode_as"](Engine(), defaults, **call)))


@pytest.mark.parametrize(("model_config", "call"), [
    ({}, {}),
    ({"do_sample": True, "temperature": 0.6, "top_p": 0.9}, {}),  # Llama-3.1-8B-Instruct's
    ({"do_sample": True, "temperature": 0.6, "top_p": 0.9}, {"do_sample": False}),
    ({"do_sample": True, "temperature": 0.6, "top_p": 0.9}, {"temperature": 0.2}),
    ({}, {"temperature": 0.7}),  # no do_sample: transformers decodes greedily
    ({}, {"do_sample": True, "top_k": 5}),
    ({"do_sample": True, "repetition_penalty": 1.05, "top_k": 20, "temperature": 0.7, "top_p": 0.8}, {}),  # Qwen2.5's
    ({"repetition_penalty": 1.2}, {"do_sample": False}),
    ({"do_sample": True, "temperature": 0.6, "top_k": 20}, {"temperature": None, "top_k": None}),  # None: off
])
def test_helper_decodes_as_transformers(model_config, call):
    assert _helper(model_config, {}, **call) == _effective(model_config, **call)


def test_helper_lays_pipeline_defaults_under_the_model_config():
    from vllm_lint.python.rewrite.generation import PIPELINE_DECODING

    defaults = eval(PIPELINE_DECODING)
    assert _helper({}, defaults) == {"greedy": False, "temperature": 0.7, "top_k": 50.0}
    assert _helper({"do_sample": False}, defaults) == {"greedy": True}


def test_sampling_params_forms():
    from vllm import SamplingParams

    assert decoding.of_sampling_params(SamplingParams(max_tokens=256)) == {"greedy": False, "temperature": 1.0}
    assert decoding.of_sampling_params(SamplingParams(temperature=0, top_p=0.5, max_tokens=8)) == {"greedy": True}
    assert decoding.of_sampling_params(SamplingParams(max_tokens=8, temperature=0.7, top_k=-1, top_p=0.95, presence_penalty=0.5)) == {
        "greedy": False, "temperature": 0.7, "top_p": 0.95, "presence_penalty": 0.5}


def test_compared_says_what_each_side_decoded_with():
    greedy, sampled = {"greedy": True}, {"greedy": False, "temperature": 1.0}
    assert decoding.compared([greedy] * 3, [greedy] * 2) == (True, "greedy on both (3 and 2 requests)")
    assert decoding.compared([greedy], [sampled]) == (False, "bad: greedy; fixed: sampled temperature=1")
    assert decoding.compared([], [greedy]) == (False, "no decoding recorded from the bad server")
    # A pipeline whose model does not generate: its task, the same on both sides or not.
    classify = decoding.of_task("text-classification")
    assert decoding.compared([classify], [classify]) == (True, "no decoding (a text-classification pipeline) on both (1 and 1 requests)")
    assert decoding.compared([classify], [greedy]) == (False, "bad: no decoding (a text-classification pipeline); fixed: greedy")
    assert decoding.described({"beams": 4}) == "beam search (4 beams)"


def test_a_wave_the_other_side_did_not_get_is_left_out(tmp_path, monkeypatch):
    """The fixed server's warm-up wave has prompts the bad server never gets: a setting that follows the prompt
    (top_k=len(tokens) + 3) would otherwise differ."""
    log = tmp_path / "fixed.decoding.jsonl"
    monkeypatch.setenv(decoding.ENVIRONMENT_VARIABLE, str(log))
    for top_k in (24, 27, 28, 25):
        decoding.record({"greedy": False, "top_k": top_k})
    assert [d["top_k"] for d in decoding.read(log)] == [24, 27, 28, 25]
    assert [d["top_k"] for d in decoding.read(log, leave_out=range(1, 3))] == [24, 25]
