"""Reading a file's text the way Python would: BOM, PEP 263 cookie, NUL bytes.

Fixes must write the file back byte-for-byte in the same encoding, BOM and line
endings, so the decoded text keeps what is needed to do that.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """The file cannot be read or decoded; becomes a VLL000 diagnostic."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class SourceText:
    """A file's text, with the encoding and byte order mark to write it back with."""
    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def _position_of(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column


def decode_python(data: bytes) -> SourceText:
    """Decode Python source as the interpreter would (PEP 263, UTF-8 BOM)."""
    nul = data.find(b"\x00")
    if nul != -1:
        line, column = _position_of(data, nul)
        raise SourceError("source contains a NUL byte", line, column)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"invalid encoding declaration: {exc.msg}", exc.lineno or 1) from None
    bom = encoding == "utf-8-sig"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    codec = "utf-8" if bom else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        line, column = _position_of(body, exc.start)
        raise SourceError(f"cannot decode as {codec}: {exc.reason}", line, column) from None
    return SourceText(text=text, encoding=codec, bom=bom)


def decode_text(data: bytes) -> SourceText:
    """Decode a non-Python text file (shell, YAML, Markdown, Dockerfile) as UTF-8."""
    nul = data.find(b"\x00")
    if nul != -1:
        line, column = _position_of(data, nul)
        raise SourceError("file contains a NUL byte (binary file?)", line, column)
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position_of(body, exc.start)
        raise SourceError(f"cannot decode as utf-8: {exc.reason}", line, column) from None
    return SourceText(text=text, encoding="utf-8", bom=bom)


def read_bytes(path: Path) -> bytes:
    """The bytes of a regular file.

    Anything else is refused without waiting on it: a FIFO would block forever and
    a device such as ``/dev/zero`` (say, behind a symlink) would never end.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if os.path.islink(path):
            raise SourceError("broken symlink: it points to a file that does not exist") from None
        raise SourceError("file vanished before it could be read") from None
    except IsADirectoryError:
        raise SourceError("is a directory, not a file") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise SourceError("is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise SourceError("not a regular file (a FIFO, socket or device): not read")
        # Read to the end with the descriptor itself (a file object costs more than the read of a small file): the
        # first read asks for more than the size, so a file that did not grow is read whole by it and an empty one.
        chunks = []
        wanted = status.st_size + 1
        while chunk := os.read(fd, wanted):
            chunks.append(chunk)
            wanted = max(wanted, 1 << 16)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        if fd != -1:
            os.close(fd)
