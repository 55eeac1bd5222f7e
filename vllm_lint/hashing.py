"""The content hash the result cache and the module summaries key files by."""

from __future__ import annotations

try:
    # CPython's BLAKE2 module itself: hashlib would load OpenSSL first (about 4 ms of every run) for
    # hashes we never use.
    from _blake2 import blake2b
except ImportError:  # another Python: the same function through hashlib
    from hashlib import blake2b


def content_hash(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


__all__ = ["blake2b", "content_hash"]
