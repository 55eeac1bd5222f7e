"""prefilter_words answers as ``in`` and ``count`` do, whichever words the matcher holds when a text is scanned."""

import pytest

from vllm_lint.python import prefilter_words

WORDS = (b"EngineArgs", b"AsyncEngineArgs", b"LLM", b"vLLM", b"aa", b"@", b")(", b"vllm/vllm", b"absent", b"Route")
TEXTS = (
    b"",
    b"from vllm import AsyncEngineArgs\nengine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model='m'))\n",
    b"# vLLM and vLLM, LLM( aaaa @app.get('/')\nf()(x) 'vllm/vllm-openai' Route\n",
    b"aaa LLMLLM vLLMvLLM",
)


@pytest.fixture(params=["matcher", "no matcher"])
def fresh(request, monkeypatch):
    """A process's state before its first question; "no matcher": as where ahocorasick_rs is not installed."""
    monkeypatch.setattr(prefilter_words, "_words", {})
    monkeypatch.setattr(prefilter_words, "_texts", [])
    monkeypatch.setattr(prefilter_words, "_built", [None])
    monkeypatch.setattr(prefilter_words, "_installed", [request.param == "matcher"])
    monkeypatch.setattr(prefilter_words, "_texts_seen", [0])
    monkeypatch.setattr(prefilter_words, "_TEXTS_BEFORE_MATCHER", 1)


def test_the_same_answers_as_in_and_count(fresh) -> None:
    for round_number in range(3):  # the first texts teach the words; the later ones are read off the matcher
        for text in TEXTS:
            data = bytes(bytearray(text))  # a new object each round: nothing is remembered across texts
            for word in WORDS[: 3 + 3 * round_number]:
                assert prefilter_words.present(data, word) is (word in data), (text, word)
                assert prefilter_words.occurrences(data, word) == data.count(word), (text, word)


def test_a_run_over_one_file_does_not_import_the_matcher() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom pathlib import Path\nfrom vllm_lint.python import prefilter\n"
        "data = b'from fastapi import FastAPI\\nfrom transformers import pipeline\\napp = FastAPI()\\n"
        "@app.post(\"/g\")\\ndef g():\\n    return pipeline(\"x\")\\n'\n"
        "assert prefilter.may_match(data, Path('app.py'), frozenset({'VLL101'}), lambda: None)\n"
        "print('ahocorasick_rs' in sys.modules)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_word_that_overlaps_itself_is_counted_as_count_does(fresh) -> None:
    prefilter_words.present(b"x", b"aa")
    assert prefilter_words.occurrences(b"aaaa", b"aa") == 2  # the matcher finds 3, overlapping
