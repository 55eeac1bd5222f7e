"""Which of the pre-filter's words a text holds, found in one scan of the text instead of one scan a word.

The byte conditions start with substring tests (``present``), dozens of words a file, and a test for an absent word
reads the whole file. Here the words the conditions ask about are learnt as they ask (literals of their code), and
each new text is scanned once for all of them by a multi-pattern matcher (``ahocorasick_rs``, a binding of the Rust
aho-corasick crate) that reports every occurrence, overlapping ones included ("AsyncEngineArgs" holds
"EngineArgs", "vLLM" holds "LLM"): a word is then present exactly when ``word in text``, case and all. A word first
asked about after a text was scanned is looked for in that text on its own, and joins the matcher for the next
text. Where the matcher's wheel is not installed, each word is scanned for once per text, as ``in`` would.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from operator import itemgetter

# The words are literals of the conditions' code; a bound in case one is ever made from a file's contents.
_MAX_WORDS = 1000
# Texts scanned a word at a time before the matcher is built: a run over one file (two texts, its bytes and its
# code alone) is spared importing the package (~3 ms), where a few scans cost less.
_TEXTS_BEFORE_MATCHER = 8
_texts_seen = [0]

_words: dict[bytes, None] = {}  # every word asked about, in the order asked: the matcher's patterns
# (matcher, the words it holds), replaced whole when a word has joined; None until built, or without the package.
_built: list = [None]
_installed = [True]
# [text, {word: count (from the matcher) or found (True/False, looked for on its own)}] for the last two texts
# asked about (a file's bytes and its code alone, which conditions read in turn), the newest first.
_texts: list[list] = []
_PATTERN = itemgetter(0)  # of a match: (pattern index, start, end)


def _current_matcher():
    """(the matcher of every word asked so far, its words), or None."""
    built = _built[0]
    if (built is not None and len(built[1]) == len(_words)) or not _installed[0]:
        return built
    try:
        from ahocorasick_rs import BytesAhoCorasick
    except ImportError:
        _installed[0] = False
        return None
    words = tuple(_words)
    built = _built[0] = (BytesAhoCorasick(words), words)
    return built


def _scanned(data: bytes) -> dict[bytes, int | bool] | None:
    """What is known of the words of a text scanned lately, or None."""
    for entry in _texts:
        if entry[0] is data:  # identity, and the reference keeps ``id`` from being reused
            return entry[1]
    return None


def _known(data: bytes) -> dict[bytes, int | bool]:
    scanned = _scanned(data)
    if scanned is not None:
        return scanned
    known: dict[bytes, int | bool] = {}
    _texts_seen[0] += 1
    built = _current_matcher() if _words and _texts_seen[0] > _TEXTS_BEFORE_MATCHER else None
    if built is not None:
        matcher, words = built
        known = dict.fromkeys(words, 0)
        for index, count in Counter(map(_PATTERN, matcher.find_matches_as_indexes(data, overlapping=True))).items():
            known[words[index]] = count
    _texts.insert(0, [data, known])
    del _texts[2:]
    return known


def present(data: bytes, word: bytes) -> bool:
    """``word in data``: read off the text's one scan for all the words asked about."""
    known = _known(data)
    found = known.get(word)
    if found is None:
        found = known[word] = word in data
        if len(_words) < _MAX_WORDS:
            _words.setdefault(word)
    return bool(found)


def present_if_scanned(data: bytes, word: bytes) -> bool:
    """``word in data``: read off the text's scan where a condition had it scanned, else looked for on its own (one
    question is not worth a scan for every word)."""
    return present(data, word) if _scanned(data) is not None else word in data


def occurrences(data: bytes, word: bytes) -> int:
    """``data.count(word)``: the matcher's count where that is the same (a word that cannot overlap itself, whose
    overlapping occurrences are its non-overlapping ones)."""
    count = _known(data).get(word)
    if type(count) is int and not _overlaps_itself(word):
        return count
    if count is False:
        return 0
    if count is None:
        present(data, word)  # joins the matcher
    return data.count(word)


@lru_cache(maxsize=1024)
def _overlaps_itself(word: bytes) -> bool:
    return any(word[:size] == word[-size:] for size in range(1, len(word)))
