"""A gRPC server's endpoint: the unary method its servicer serves, called through the project's own stub.

The servicer subclasses ``<stem>_pb2_grpc.<Service>Servicer``; each of its methods that is a unary rpc of
that service in the generated descriptors, and reads one ``string`` field of its request (``request.prompt``),
is a candidate. The prompt goes in that field; the reply's text is its one ``string`` field (or the one named
like a completion). The load is sent by a ``grpc.aio`` channel with the same concurrency as HTTP's, each
answer recorded as a JSON-like ``{field: text}`` so the comparison reads it as it reads an HTTP body.
"""

from __future__ import annotations

import ast
import importlib
import sys
import time
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record, drive
from vllm_lint.reference.validate.endpoint import PROMPT_FIELDS
from vllm_lint.reference.validate.errors import ValidationError

_GENERATED = "_pb2_grpc"
_REPLY_FIELDS = ("text", "completion", "generated_text", "output", "response", "answer", "content")
OK = 200  # a Record's status for an answer with gRPC's OK status (the load's records are HTTP-shaped)


@dataclass
class GrpcEndpoint:
    grpc_module: str  # the generated module: ``generate_pb2_grpc``
    service: str  # ``generate.Generator``
    method: str
    request_type: str  # the request message's full name
    field: str  # the request's prompt field
    reply_field: str
    where: str = "grpc"
    stream_field: str | None = None
    # dataclasses.field by its module: the class's own ``field`` (the prompt field) shadows the bare name
    _stub: Any = dataclasses.field(default=None, repr=False, compare=False)
    _request: Any = dataclasses.field(default=None, repr=False, compare=False)

    def describe(self) -> str:
        return f"gRPC {self.service}/{self.method} with {self.field!r} in {self.request_type}, the text from {self.reply_field!r}"

    async def run_load(self, address: str, prompt: Callable[[int], str], *, requests: int, concurrency: int,
                       timeout: float, max_seconds: float, count_tokens: Callable[[Record], int] | None,
                       progress: Callable[[str], None] | None) -> LoadResult:
        import grpc

        async with grpc.aio.insecure_channel(address) as channel:
            call = getattr(self._stub(channel), self.method)

            async def one(i: int) -> Record:
                t0 = time.perf_counter()
                try:
                    reply = await call(self._request(**{self.field: prompt(i)}), timeout=timeout)
                except grpc.aio.AioRpcError as exc:
                    return Record(i, None, time.perf_counter() - t0, None, error=f"gRPC {exc.code().name}: {exc.details()}")
                latency = time.perf_counter() - t0
                record = Record(i, OK, latency, latency, {self.reply_field: getattr(reply, self.reply_field)}, "application/grpc")
                if count_tokens is not None:
                    record.tokens = count_tokens(record)
                return record

            return await drive(one, requests=requests, concurrency=concurrency, max_seconds=max_seconds, progress=progress)


def _servicer_methods(source: str) -> list[tuple[str, str, str, set[str]]]:
    """(generated module, service name, method, the request attributes it reads) for each servicer method."""
    tree = ast.parse(source)
    imported: dict[str, str] = {}  # local name -> generated module (``import x_pb2_grpc as g``, ``from x_pb2_grpc import S``)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.endswith(_GENERATED):
                    imported[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name.endswith(_GENERATED):
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif node.module.endswith(_GENERATED):
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for klass in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for base in klass.bases:
            dotted = ast.unparse(base)
            head, _, rest = dotted.partition(".")
            target = imported.get(head)
            if target is None:
                continue
            qualified = f"{target}.{rest}" if rest else target
            module, _, servicer = qualified.rpartition(".")
            if not module.endswith(_GENERATED) or not servicer.endswith("Servicer"):
                continue
            for method in klass.body:
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.name.startswith("_"):
                    continue
                args = method.args.args
                request = args[1].arg if len(args) >= 2 else None
                reads = {n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute)
                         and isinstance(n.value, ast.Name) and n.value.id == request}
                found.append((module, servicer.removesuffix("Servicer"), method.name, reads))
    return found


def discover_grpc_endpoint(source: str, folder: Path) -> GrpcEndpoint:
    """The unary method of the server's servicer that takes a prompt, from the generated modules in ``folder``."""
    from google.protobuf import message_factory
    from google.protobuf.descriptor import FieldDescriptor

    methods = _servicer_methods(source)
    if not methods:
        raise ValidationError("no servicer subclassing a generated *_pb2_grpc.*Servicer in the gRPC server")
    sys.path.insert(0, str(folder))
    for module, *_ in methods:  # this server's own modules, not those of a server validated before it
        for name in (module, module.removesuffix("_grpc")):
            sys.modules.pop(name, None)
    try:
        candidates = []
        for module, service, method, reads in methods:
            try:
                generated = importlib.import_module(module)
                messages = importlib.import_module(module.removesuffix("_grpc"))
            except Exception as exc:  # a generated module that does not import (version checks) says why
                raise ValidationError(f"cannot import the generated {module} from {folder}: {type(exc).__name__}: {exc}") from exc
            descriptor = messages.DESCRIPTOR.services_by_name.get(service)
            rpc = descriptor.methods_by_name.get(method) if descriptor is not None else None
            stub = getattr(generated, f"{service}Stub", None)
            if rpc is None or stub is None or rpc.client_streaming or rpc.server_streaming:
                continue
            strings = lambda message: [f.name for f in message.fields if f.type == FieldDescriptor.TYPE_STRING  # noqa: E731
                                       and not _repeated(f)]
            prompt_fields = [f for f in strings(rpc.input_type) if f in reads] or [f for f in PROMPT_FIELDS if f in strings(rpc.input_type)][:1]
            replies = strings(rpc.output_type)
            reply = next((f for f in _REPLY_FIELDS if f in replies), replies[0] if len(replies) == 1 else None)
            if len(prompt_fields) != 1 or reply is None:
                continue
            candidates.append(GrpcEndpoint(module, descriptor.full_name, method, rpc.input_type.full_name,
                                           prompt_fields[0], reply, _stub=stub,
                                           _request=message_factory.GetMessageClass(rpc.input_type)))
    finally:
        sys.path.remove(str(folder))
    if len(candidates) != 1:
        raise ValidationError(f"{'no' if not candidates else 'more than one'} unary method of the servicer reads one "
                              "string field of its request and answers one string field")
    return candidates[0]


def _repeated(descriptor) -> bool:
    is_repeated = getattr(descriptor, "is_repeated", None)  # protobuf >= 5.28; ``label`` goes in 7
    if is_repeated is not None:
        return bool(is_repeated)
    return descriptor.label == descriptor.LABEL_REPEATED
