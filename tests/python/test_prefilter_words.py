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


def test_the_same_answers_as_in_and_count(fresh) -> None:
    for round_number in range(3):  # the first texts teach the words; the later ones are read off the matcher
        for text in TEXTS:
            data = bytes(bytearray(text))  # a new object each round: nothing is remembered across texts
            for word in WORDS[: 3 + 3 * round_number]:
                assert prefilter_words.present(data, word) is (word in data), (text, word)
                assert prefilter_words.occurrences(data, word) == data.count(word), (text, word)


def test_a_word_that_overlaps_itself_is_counted_as_count_does(fresh) -> None:
    prefilter_words.present(b"x", b"aa")
    assert prefilter_words.occurrences(b"aaaa", b"aa") == 2  # the matcher finds 3, overlapping
