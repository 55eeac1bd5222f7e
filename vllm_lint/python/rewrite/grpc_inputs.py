"""Which fields of a gRPC servicer method's request are one string, from the project's ``.proto``.

A servicer subclasses the generated ``<stem>_pb2_grpc.<Service>Servicer``; its method ``M(self, request,
context)`` serves ``rpc M(Req) returns (...)`` of ``service <Service>`` in ``<stem>.proto``, and protobuf
hands it ``request.<field>`` as a ``str`` for each ``string`` field of ``Req`` that is not ``repeated``. Only
a servicer that names the generated base directly, a method whose request is its second plain parameter,
and a ``.proto`` the reader understands whole count; anything else knows no field.
"""

from __future__ import annotations

from vllm_lint.python.model import FunctionInfo
from vllm_lint.python.rewrite.facts import ModuleFacts

_GENERATED = "_pb2_grpc."
_SERVICER = "Servicer"


class GrpcInputs(ModuleFacts):
    def text_fields(self, function: FunctionInfo) -> dict[str, frozenset[str]]:
        """{the request parameter's name: its fields that are one string}, or {} when that is not known."""
        return self._fields(function, one_string=True)

    def other_fields(self, function: FunctionInfo) -> dict[str, frozenset[str]]:
        """{the request parameter's name: its fields the ``.proto`` types as something else than one string
        (a number, bytes, a message, a repeated field)}, or {} when that is not known."""
        return self._fields(function, one_string=False)

    def _fields(self, function: FunctionInfo, one_string: bool) -> dict[str, frozenset[str]]:
        klass = function.class_info
        project = self.semantics.project
        if klass is None or not function.is_method or project is None:
            return {}
        params = function.node.params
        plain = [*params.posonly_params, *params.params]
        if len(plain) < 2 or params.kwonly_params or plain[1].default is not None:
            return {}
        services = []
        for base in klass.node.bases:
            qualified = self.semantics.qualify(base.value) or ""
            module, _, service = qualified.rpartition(".")
            if (module + ".").endswith(_GENERATED) and service.endswith(_SERVICER) and len(service) > len(_SERVICER):
                services.append((module, service.removesuffix(_SERVICER)))
        if len(services) != 1:
            return {}
        module, service = services[0]
        source = project.proto_source(module)
        if source is None:
            return {}
        from vllm_lint.python.proto_files import ProtoUnclear, read_proto

        try:
            text = source.decode("utf-8")
            request = read_proto(text).request_fields(service, function.name)
        except (UnicodeDecodeError, ProtoUnclear, RecursionError):
            return {}
        if request is None:
            return {}
        fields = frozenset(f.name for f in request if (f.type == "string" and not f.repeated) == one_string)
        return {plain[1].name.value: fields} if fields else {}


__all__ = ["GrpcInputs"]
