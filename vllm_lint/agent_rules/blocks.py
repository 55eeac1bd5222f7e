"""The managed block: the only part of a shared file (CLAUDE.md, AGENTS.md, ...) that is ours.

A block runs from ``<!-- vllm-lint:begin hash=... -->`` to ``<!-- vllm-lint:end -->``.
Files that are wholly ours carry the same kind of hash in their generated-by header.
The hash covers the generated text (with the hash itself blanked and line endings
normalised), so a person's edit inside the block, or inside a generated file, is seen.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

HASH_PLACEHOLDER = "hash=" + "0" * 12
HASH_RE = re.compile(r"hash=[0-9a-f]{12}")
BEGIN_RE = re.compile(r"<!--\s*vllm-lint:begin\b[^>]*-->")
END_RE = re.compile(r"<!--\s*vllm-lint:end\s*-->")
GENERATED_RE = re.compile(r"vllm-lint:generated\s+hash=[0-9a-f]{12}")


class BlockError(ValueError):
    """The file's markers are broken (a begin without an end, two blocks, ...)."""


def _digest(text: str) -> str:
    normalised = text.replace("\r\n", "\n")
    return hashlib.blake2b(normalised.encode("utf-8"), digest_size=6).hexdigest()


def stamp(text: str) -> str:
    """Fill the first ``hash=000000000000`` in ``text`` with the hash of ``text``."""
    if HASH_PLACEHOLDER not in text:
        raise ValueError("generated text has no hash placeholder")
    return text.replace(HASH_PLACEHOLDER, f"hash={_digest(text)}", 1)


def is_intact(text: str) -> bool:
    """Whether generated ``text`` (a block, or a whole file) still matches the hash it carries."""
    match = HASH_RE.search(text)
    if match is None:
        return False
    blanked = text[: match.start()] + HASH_PLACEHOLDER + text[match.end() :]
    return match.group(0) == f"hash={_digest(blanked)}"


@dataclass(frozen=True)
class Span:
    start: int
    end: int  # just after the end marker


def find_block(text: str) -> Span | None:
    begins = list(BEGIN_RE.finditer(text))
    ends = list(END_RE.finditer(text))
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].end():
        raise BlockError(
            f"expected one `<!-- vllm-lint:begin -->` ... `<!-- vllm-lint:end -->` block, "
            f"found {len(begins)} begin and {len(ends)} end marker(s)"
        )
    return Span(begins[0].start(), ends[0].end())


def newline_of(text: str) -> str:
    """The file's line ending: CRLF when its first line ending is CRLF."""
    index = text.find("\n")
    return "\r\n" if index > 0 and text[index - 1] == "\r" else "\n"


def with_newline(text: str, newline: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", newline) if newline != "\n" else text.replace("\r\n", "\n")


def merge(existing: str | None, block: str) -> str:
    """``existing`` with its managed block replaced by ``block`` (appended when absent).

    ``block`` runs from the begin marker to the end marker, LF line endings, no
    trailing newline. Everything outside the block is kept byte for byte; the block
    takes the file's own line endings.
    """
    if not existing:
        return block + "\n"
    newline = newline_of(existing)
    block = with_newline(block, newline)
    span = find_block(existing)
    if span is not None:
        return existing[: span.start] + block + existing[span.end :]
    separator = "" if existing.endswith(("\n", "\r")) else newline
    return existing + separator + newline + block + newline


def current_block(existing: str) -> str | None:
    span = find_block(existing)
    return None if span is None else existing[span.start : span.end]
