"""lazy_re.lazy_compile: nothing compiled until the first use, then what ``re.compile`` gives, its methods the
compiled pattern's own."""

from __future__ import annotations

import re

import pytest

from vllm_lint.lazy_re import lazy_compile

CALLS = [
    ("search", ("xa1b22",)),
    ("match", ("a1",)),
    ("fullmatch", ("a1",)),
    ("findall", ("a1 b22 c",)),
    ("sub", ("<\\1>", "a1 b22")),
    ("subn", ("-", "a1 b22")),
    ("split", ("a1 b22 c",)),
]


@pytest.mark.parametrize(("method", "args"), CALLS, ids=[method for method, _ in CALLS])
def test_each_method_answers_as_the_compiled_pattern_does(method, args):
    lazy, real = lazy_compile(r"([a-z])(\d+)", re.IGNORECASE), re.compile(r"([a-z])(\d+)", re.IGNORECASE)
    assert "_pattern" not in vars(lazy)  # not compiled yet
    first, expected = getattr(lazy, method)(*args), getattr(real, method)(*args)
    if isinstance(expected, re.Match):
        assert first.group(0, 1, 2) == expected.group(0, 1, 2)
    else:
        assert first == expected
    assert getattr(lazy, method).__self__ is vars(lazy)["_pattern"]  # the pattern's own method from now on


def test_finditer_and_the_pattern_s_attributes():
    lazy = lazy_compile(rb"(?P<word>\w+)")
    assert [m.group("word") for m in lazy.finditer(b"a bc")] == [b"a", b"bc"]
    assert (lazy.pattern, lazy.groups, lazy.groupindex) == (rb"(?P<word>\w+)", 1, {"word": 1})
    assert lazy_compile("x", re.MULTILINE).flags & re.MULTILINE
