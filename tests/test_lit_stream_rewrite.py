"""The rewrite of a LitServe API whose predict() streams a generation thread through a TextIteratorStreamer
(rewrite/lit_stream.py): what it accepts besides the rule examples, and what it refuses, with the reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


from lintutil import fixed_server, lint_text

NO_FIX = "; no automatic fix: "

# model.generate in a thread, its streamer on the API, the token ids and generation args from decode_request.
GENERATE_API = """\
from threading import Thread

import litserve as ls
from transformers import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


class ChatAPI(ls.LitAPI):
    def setup(self, device):
        self.tokenizer = AutoTokenizer.from_pretrained(MODEL)
        self.model = AutoModelForCausalLM.from_pretrained(MODEL).to(device)
        self.streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)

    def decode_request(self, request, context):
        context["generation_args"] = {"max_new_tokens": request["max_tokens"] or 64}
        messages = [{"role": "user", "content": request["prompt"]}]
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)

    def predict(self, inputs, context):
        kwargs = dict(**inputs, streamer=self.streamer, **context["generation_args"])
        thread = Thread(target=self.model.generate, kwargs=kwargs)
        thread.start()
        for text in self.streamer:
            yield text
        thread.join()


if __name__ == "__main__":
    ls.LitServer(ChatAPI(stream=True), devices=1).run(port=8000)
"""

# A pipeline given chat messages in a thread, streamed with `yield from`, encoded by a generator.
PIPELINE_API = """\
from threading import Thread

import litserve as ls
from transformers import AutoTokenizer, TextIteratorStreamer, pipeline


class ChatAPI(ls.LitAPI):
    def setup(self, device):
        self.tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        self.pipe = pipeline("text-generation", model="Qwen/Qwen2.5-0.5B-Instruct")
        self.streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True)

    def decode_request(self, request):
        return [{"role": "user", "content": request["prompt"]}]

    def predict(self, messages):
        thread = Thread(target=self.pipe, kwargs={"text_inputs": messages, "streamer": self.streamer, "max_new_tokens": 64})
        thread.start()
        yield from self.streamer

    def encode_response(self, output):
        for text in output:
            yield {"output": text}


if __name__ == "__main__":
    ls.LitServer(ChatAPI(stream=True), devices=1).run(port=8000)
"""


def _fixed(tmp_path: Path, source: str) -> str:
    return fixed_server(tmp_path, source)


def _message(tmp_path: Path, source: str, code: str) -> str:
    [finding] = [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code == code]
    assert finding.fix is None and NO_FIX in finding.message, finding.message
    return finding.message


def test_generate_stream_reads_token_ids_and_context_settings(tmp_path):
    fixed = _fixed(tmp_path, GENERATE_API)
    assert "async def predict(self, inputs, context):" in fixed
    assert ('async for text in new_text(self.model.generate({"prompt_token_ids": inputs["input_ids"][0].tolist()}, '
            'SamplingParams(max_tokens=context["generation_args"]["max_new_tokens"], **decode_as_transformers(self.model, {})), '
            'request_id=uuid4().hex), ') in fixed
    assert "Thread(" not in fixed and "TextIteratorStreamer(" not in fixed and "thread.join()" not in fixed
    assert "ChatAPI(stream=True, enable_async=True)" in fixed
    compile(fixed, "server.py", "exec")


def test_pipeline_stream_renders_the_chat_and_makes_encode_response_async(tmp_path):
    fixed = _fixed(tmp_path, PIPELINE_API)
    assert "prompt_token_ids = self.tokenizer.apply_chat_template(messages, " in fixed
    assert "async for text in new_text(" in fixed and "yield from" not in fixed
    assert "prompt_text=self" not in fixed  # skip_prompt=True: the prompt's text is not sent
    assert "async def encode_response(self, output):\n        async for text in output:" in fixed
    compile(fixed, "server.py", "exec")


def test_model_named_by_an_hf_argument_parser_option_is_accepted(tmp_path):
    source = GENERATE_API.replace('MODEL = "Qwen/Qwen2.5-0.5B-Instruct"', """\
from dataclasses import dataclass

from transformers import HfArgumentParser


@dataclass
class ModelArguments:
    model_name_or_path: str


def parse_args():
    return HfArgumentParser([ModelArguments]).parse_args_into_dataclasses()


(model_args,) = parse_args()""").replace("(MODEL)", "(model_args.model_name_or_path)")
    fixed = _fixed(tmp_path, source)
    assert "model=model_args.model_name_or_path," in fixed


def test_a_context_setting_that_may_be_none_reaches_the_decoding_helper(tmp_path):
    fixed = _fixed(tmp_path, GENERATE_API.replace('"max_new_tokens": request["max_tokens"] or 64', '"temperature": request["temperature"]'))
    # None reaches the decoding helper, which reads it as generate() does
    assert ', {}, temperature=context["generation_args"]["temperature"]))' in fixed


REFUSED = {
    "a setting that may be None": (
        GENERATE_API.replace('"max_new_tokens": request["max_tokens"] or 64', '"stop_strings": request["stop"]'),
        "`context[\"generation_args\"]` carries stop_strings=",
    ),
    "the streamer read elsewhere": (
        GENERATE_API.replace("        thread.join()\n", "        thread.join()\n        print(self.streamer)\n"),
        "the streamer is used as `print(self.streamer)`",
    ),
    "untokenized input": (
        GENERATE_API.replace(', return_tensors="pt", return_dict=True)', ", tokenize=False)"),
        "not a tokenizer's output with return_tensors=\"pt\"",
    ),
    "a thread not started right after": (
        GENERATE_API.replace("        thread.start()\n", "        print(kwargs)\n        thread.start()\n"),
        "is not bound, then started right after, in predict()",
    ),
    "workers per device computed by a call": (
        GENERATE_API.replace("devices=1)", 'devices=1, workers_per_device=int(os.environ["WORKERS"]))'),
        'takes workers_per_device=`int(os.environ["WORKERS"])`, which may be above 1',
    ),
}

PIPELINE_REFUSED = {
    "an encode_response that does not yield": (
        PIPELINE_API.replace('        for text in output:\n            yield {"output": text}', "        return output"),
        "encode_response() does not yield",
    ),
    "a streamer tokenizer of another model": (
        PIPELINE_API.replace('AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")', 'AutoTokenizer.from_pretrained("gpt2")'),
        "is not loaded in setup() from the pipeline's model=",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_generate_stream_refusal_says_why(tmp_path, case):
    source, reason = REFUSED[case]
    assert reason in _message(tmp_path, source, "VLL102")


@pytest.mark.parametrize("case", sorted(PIPELINE_REFUSED))
def test_pipeline_stream_refusal_says_why(tmp_path, case):
    source, reason = PIPELINE_REFUSED[case]
    assert reason in _message(tmp_path, source, "VLL101")


def test_a_worker_count_from_a_setting_is_checked_at_start_up(tmp_path):
    source = GENERATE_API.replace("devices=1)", "devices=1, workers_per_device=WORKERS)")
    fixed = _fixed(tmp_path, source)
    check = ("if WORKERS != 1:\n    raise SystemExit(f\"workers_per_device={WORKERS}: one vLLM engine serves every request; "
             "run one worker (a second one would build a second engine on GPU 0)\")\n")
    assert textwrap.indent(check, "    ") + "    ls.LitServer(" in fixed, fixed
    compile(fixed, "server.py", "exec")
    # the check runs before the server is built: with two workers, the script stops and says why
    with pytest.raises(SystemExit, match="workers_per_device=2: one vLLM engine serves every request"):
        exec(compile("WORKERS = 2\n" + check, "check", "exec"), {})
