"""What a project's ``.proto`` file declares, read just far enough to type a gRPC servicer's request.

The generated ``*_pb2_grpc.XServicer`` a servicer subclasses says nothing about the request's fields; the
``.proto`` it was generated from does: ``service X { rpc M(Req) returns (Rep); }`` and ``message Req { string
prompt = 1; }``. A field of type ``string`` that is not ``repeated`` (``optional``, ``required`` and ``oneof``
members included) reads as one ``str`` in Python. The reader knows the statements of proto2/proto3 files
(syntax, edition, package, import, option, message, enum, service, oneof, map, reserved, extensions, extend);
anything else, or an import (a type may come from another file), makes the whole file unclear, and the
caller then knows nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class ProtoUnclear(Exception):
    """The file has something the reader does not know; nothing is concluded from it."""


@dataclass(frozen=True, slots=True)
class ProtoField:
    name: str
    type: str  # as written: ``string``, ``GenerateRequest``, ``.pkg.Msg``; ``map`` for a map field
    repeated: bool


@dataclass(frozen=True, slots=True)
class Rpc:
    name: str
    request: str  # the request message's name as written
    reply: str
    client_streaming: bool
    server_streaming: bool


@dataclass
class ProtoFile:
    package: str = ""
    imports: list[str] = field(default_factory=list)
    messages: dict[str, dict[str, ProtoField]] = field(default_factory=dict)  # dotted name inside the package
    enums: set[str] = field(default_factory=set)
    services: dict[str, dict[str, Rpc]] = field(default_factory=dict)

    def message(self, written: str, scope: str = "") -> dict[str, ProtoField] | None:
        """The fields of the message a type name refers to, resolved as protoc does (innermost scope first);
        None when it is not a message of this file."""
        name = written
        if name.startswith("."):
            name = name[1:]
            if self.package:
                if not name.startswith(self.package + "."):
                    return None
                name = name[len(self.package) + 1 :]
            return self.messages.get(name)
        parts = scope.split(".") if scope else []
        for cut in range(len(parts), -1, -1):
            candidate = ".".join([*parts[:cut], name])
            if candidate in self.messages:
                return self.messages[candidate]
        if self.package and name.startswith(self.package + "."):
            return self.messages.get(name[len(self.package) + 1 :])
        return None

    def string_fields(self, service: str, method: str) -> frozenset[str] | None:
        """The request fields of ``service.method`` that are one string each; None when anything is unclear
        (an import, an unknown service, method or message, a client-streaming request)."""
        fields = self.request_fields(service, method)
        return None if fields is None else frozenset(f.name for f in fields if f.type == "string" and not f.repeated)

    def request_fields(self, service: str, method: str) -> list[ProtoField] | None:
        """Every field of ``service.method``'s request message; None when anything is unclear."""
        if self.imports:
            return None
        rpc = self.services.get(service, {}).get(method)
        if rpc is None or rpc.client_streaming:
            return None
        fields = self.message(rpc.request)
        return None if fields is None else list(fields.values())


# Comments out, strings kept whole: ``//`` inside "a // b" is no comment.
_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|(?P<tok>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_][\w.]*|\.[A-Za-z_][\w.]*|[-+]?\d[\w.+-]*|[{}()\[\];=<>,:\-+])""",
    re.DOTALL,
)
_LABELS = frozenset({"repeated", "optional", "required"})


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ProtoUnclear(f"unexpected character {text[position]!r}")
        if match.group("tok") is not None:
            tokens.append(match.group("tok"))
        position = match.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0
        self.file = ProtoFile()

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ProtoUnclear(f"expected {expected or 'more'}, found {token!r}")
        self.at += 1
        return token

    def name(self) -> str:
        token = self.take()
        if not re.fullmatch(r"\.?[A-Za-z_][\w.]*", token):
            raise ProtoUnclear(f"expected a name, found {token!r}")
        return token

    def skip_statement(self) -> None:
        """Up to and including the ``;`` ending it, over brackets (an option's aggregate value)."""
        depth = 0
        while True:
            token = self.take()
            if token in "{[(":
                depth += 1
            elif token in "}])":
                depth -= 1
            elif token == ";" and depth == 0:
                return

    def skip_block(self) -> None:
        self.take("{")
        depth = 1
        while depth:
            token = self.take()
            depth += token == "{"
            depth -= token == "}"

    def read(self) -> ProtoFile:
        while self.peek() is not None:
            token = self.take()
            if token in ("syntax", "edition", "option"):
                self.skip_statement()
            elif token == "package":
                self.file.package = self.name()
                self.take(";")
            elif token == "import":
                if self.peek() in ("public", "weak"):
                    self.take()
                self.file.imports.append(self.take())
                self.take(";")
            elif token == "message":
                self.message("")
            elif token == "enum":
                self.file.enums.add(self.name())
                self.skip_block()
            elif token == "service":
                self.service()
            elif token == "extend":
                self.name()
                self.skip_block()
            elif token != ";":
                raise ProtoUnclear(f"unknown statement {token!r}")
        return self.file

    def message(self, scope: str) -> None:
        name = self.name()
        full = f"{scope}.{name}" if scope else name
        fields: dict[str, ProtoField] = {}
        self.file.messages[full] = fields
        self.take("{")
        while self.peek() != "}":
            token = self.peek()
            if token == "message":
                self.take()
                self.message(full)
            elif token == "enum":
                self.take()
                self.file.enums.add(f"{full}.{self.name()}")
                self.skip_block()
            elif token in ("option", "reserved", "extensions"):
                self.skip_statement()
            elif token == "extend":
                self.take()
                self.name()
                self.skip_block()
            elif token == "oneof":
                self.take()
                self.name()
                self.take("{")
                while self.peek() != "}":
                    if self.peek() == "option":
                        self.skip_statement()
                    else:
                        self.field(fields, oneof=True)
                self.take("}")
            elif token == ";":
                self.take()
            else:
                self.field(fields)
        self.take("}")

    def field(self, fields: dict[str, ProtoField], oneof: bool = False) -> None:
        label = self.take() if self.peek() in _LABELS and not oneof else None
        if self.peek() == "group":
            raise ProtoUnclear("a group field")
        if self.peek() == "map":
            self.take()
            self.take("<")
            self.name()
            self.take(",")
            self.name()
            self.take(">")
            type_ = "map"
        else:
            type_ = self.name()
        name = self.name()
        self.take("=")
        self.take()  # the field number
        if self.peek() == "[":
            self.skip_statement()
        else:
            self.take(";")
        if name in fields:
            raise ProtoUnclear(f"field {name} declared twice")
        fields[name] = ProtoField(name, type_, repeated=label == "repeated" or type_ == "map")

    def service(self) -> None:
        name = self.name()
        rpcs: dict[str, Rpc] = {}
        self.file.services[name] = rpcs
        self.take("{")
        while self.peek() != "}":
            token = self.take()
            if token == "option":
                self.skip_statement()
                continue
            if token == ";":
                continue
            if token != "rpc":
                raise ProtoUnclear(f"unknown service statement {token!r}")
            method = self.name()
            request, client_streaming = self._rpc_type()
            self.take("returns")
            reply, server_streaming = self._rpc_type()
            if self.peek() == "{":
                self.skip_block()
            else:
                self.take(";")
            rpcs[method] = Rpc(method, request, reply, client_streaming, server_streaming)
        self.take("}")

    def _rpc_type(self) -> tuple[str, bool]:
        self.take("(")
        streaming = self.peek() == "stream" and self.tokens[self.at + 1 : self.at + 2] != [")"]
        if streaming:
            self.take()
        type_ = self.name()
        self.take(")")
        return type_, streaming


def read_proto(text: str) -> ProtoFile:
    """The declarations of a ``.proto`` file's text; raises ProtoUnclear for anything the reader does not know."""
    return _Reader(_tokens(text)).read()


__all__ = ["ProtoField", "ProtoFile", "ProtoUnclear", "Rpc", "read_proto"]
