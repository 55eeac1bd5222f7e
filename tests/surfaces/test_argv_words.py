"""The command-line library's words for arguments written in code (vllm_lint.cmdline.argv), on their own."""

from __future__ import annotations

from vllm_lint.cmdline.argv import (
    HOLE,
    command_words,
    known_argument,
    split_words,
    unknown_argument,
    unknown_arguments,
)
from vllm_lint.cmdline.launches import Extractor
from vllm_lint.cmdline.shell import Environment, Word
from vllm_lint.vllm_api import load_api


def _fields(word: Word) -> tuple:
    return (word.raw, word.start, word.end, word.parts, word.value, word.single)


def test_one_argument_is_one_word_whatever_its_value():
    assert _fields(known_argument("--port 8000", "PORT", 4, 15)) == (
        "--port 8000", 4, 15, [("lit", "--port 8000")], "--port 8000", True)
    assert known_argument("x", "PORT", 0, 1).origin == "PORT"
    assert _fields(unknown_argument("--max-model-len=", 2, 18)) == (
        "--max-model-len=", 2, 18, [("lit", "--max-model-len="), ("unknown",)], None, True)
    assert _fields(unknown_argument("", 7, 8)) == ("?", 7, 8, [("unknown",)], None, True)
    star = unknown_arguments(9, 10)
    assert _fields(star) == ("*", 9, 10, [("unknown",)], None, False)


def test_split_words_keep_offsets_and_make_holes_unknown():
    text = f"vllm serve  m --port={HOLE} {HOLE}x"
    assert [_fields(w) for w in split_words(text, 100)] == [
        ("vllm", 100, 104, [("lit", "vllm")], "vllm", True),
        ("serve", 105, 110, [("lit", "serve")], "serve", True),
        ("m", 112, 113, [("lit", "m")], "m", True),
        (f"--port={HOLE}", 114, 122, [("lit", "--port="), ("unknown",)], None, True),
        (f"{HOLE}x", 123, 125, [("unknown",)], None, True),
    ]


def test_command_words_split_as_the_shell_does_and_holes_stay_unknown():
    commands = command_words(f"vllm serve m --port '{HOLE}' && echo {HOLE}", 10)
    assert [[w.raw for w in c.words] for c in commands] == [
        ["vllm", "serve", "m", "--port", f"'{HOLE}'"], ["echo", HOLE]]
    port, echoed = commands[0].words[4], commands[1].words[1]
    assert (port.start, port.end, port.parts, port.single) == (30, 33, [("unknown",)], False)
    assert (echoed.parts, echoed.single) == ([("unknown",)], True)


def test_command_words_none_when_the_shell_could_not_split_it():
    assert command_words("vllm serve 'm", 0) is None


def test_the_words_make_a_launch():
    words = [known_argument(text, None, i * 10, i * 10 + len(text))
             for i, text in enumerate(["vllm", "serve", "m", "--gpu-memory-utilization", "0.99"])]
    extractor = Extractor(load_api(), "")
    extractor.command(words, Environment(), None, fixable=False)
    (found,) = extractor.found
    setting = next(s for s in found.launch.settings if s.key == "gpu_memory_utilization")
    assert (setting.value.value, setting.anchor.start, setting.value_anchor.start) == ("0.99", 30, 40)
