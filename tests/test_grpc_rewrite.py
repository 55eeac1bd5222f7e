"""gRPC servicers in the server rewrite: the .proto reader on its own, and the request fields it types.

The YAML examples pin whole fixed servicers; these tests pin what the reader concludes from a .proto and
every case where it concludes nothing (the rewrite then refuses as it does without a .proto).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.proto_files import ProtoField, ProtoUnclear, Rpc, read_proto

from lintutil import run_cli

GENERATE_PROTO = """\
// The text generation service.
syntax = "proto3";

package generate.v1;

option go_package = "example.com/gen;gen"; // a // inside a string is no comment

/* A block comment
   message Hidden { string nope = 1; } */
service Generator {
  rpc Generate (GenerateRequest) returns (GenerateReply);
  rpc Stream (GenerateRequest) returns (stream GenerateReply) {
    option deprecated = false;
  }
  rpc Upload (stream GenerateRequest) returns (GenerateReply) {}
}

message GenerateRequest {
  string prompt = 1;
  optional string system = 2 [json_name = "sys"];
  repeated string stop = 3;
  int32 max_tokens = 4;
  map<string, string> labels = 5;
  oneof extra {
    string suffix = 6;
    int32 seed = 7;
  }
  message Options { string name = 1; }
  Options options = 8;
  reserved 9, 10 to 12;
  enum Mode { MODE_UNSPECIFIED = 0; GREEDY = 1; }
}

message GenerateReply {
  string text = 1;
}
"""


def test_reads_services_messages_and_fields():
    proto = read_proto(GENERATE_PROTO)
    assert proto.package == "generate.v1"
    assert proto.imports == []
    assert proto.services == {
        "Generator": {
            "Generate": Rpc("Generate", "GenerateRequest", "GenerateReply", False, False),
            "Stream": Rpc("Stream", "GenerateRequest", "GenerateReply", False, True),
            "Upload": Rpc("Upload", "GenerateRequest", "GenerateReply", True, False),
        }
    }
    assert sorted(proto.messages) == ["GenerateReply", "GenerateRequest", "GenerateRequest.Options"]
    assert proto.messages["GenerateRequest"] == {
        "prompt": ProtoField("prompt", "string", False),
        "system": ProtoField("system", "string", False),
        "stop": ProtoField("stop", "string", True),
        "max_tokens": ProtoField("max_tokens", "int32", False),
        "labels": ProtoField("labels", "map", True),
        "suffix": ProtoField("suffix", "string", False),
        "seed": ProtoField("seed", "int32", False),
        "options": ProtoField("options", "Options", False),
    }
    assert proto.enums == {"GenerateRequest.Mode"}
    assert proto.string_fields("Generator", "Generate") == frozenset({"prompt", "system", "suffix"})
    assert proto.string_fields("Generator", "Stream") == frozenset({"prompt", "system", "suffix"})


@pytest.mark.parametrize(
    ("service", "method"),
    [("Generator", "Upload"), ("Generator", "Missing"), ("Other", "Generate")],
    ids=["client-streaming request", "unknown method", "unknown service"],
)
def test_string_fields_unknown(service, method):
    assert read_proto(GENERATE_PROTO).string_fields(service, method) is None


def test_qualified_and_nested_request_types():
    proto = read_proto(
        "package a.b; service S { rpc M (.a.b.Outer.Req) returns (Outer.Req); rpc N (a.b.Outer) returns (Outer); }"
        " message Outer { message Req { string q = 1; } string z = 1; }"
    )
    assert proto.string_fields("S", "M") == frozenset({"q"})
    assert proto.string_fields("S", "N") == frozenset({"z"})
    assert proto.message(".other.Outer") is None


def test_an_import_makes_types_unknown():
    proto = read_proto('syntax = "proto3"; import "google/protobuf/empty.proto";' + GENERATE_PROTO.split("package generate.v1;")[1])
    assert proto.imports == ['"google/protobuf/empty.proto"']
    assert proto.string_fields("Generator", "Generate") is None


def test_request_message_from_elsewhere_is_unknown():
    proto = read_proto("service S { rpc M (Missing) returns (Missing); }")
    assert proto.string_fields("S", "M") is None


@pytest.mark.parametrize(
    "text",
    [
        "message M { group G = 1 { } }",
        "frobnicate M { }",
        "message M { string a = 1; string a = 2; }",
        "message M { string a = 1 }",
        "service S { stream M (A) returns (B); }",
        'message M { string a = 1; } "',
        "message M { string a = 1;",
    ],
    ids=["group", "unknown statement", "field twice", "missing semicolon", "unknown service statement", "unclosed string", "unclosed block"],
)
def test_unclear_files_raise(text):
    with pytest.raises(ProtoUnclear):
        read_proto(text)


SERVICER = """\
from concurrent import futures

import grpc
from transformers import pipeline

import generate_pb2
import generate_pb2_grpc


class GeneratorServicer(generate_pb2_grpc.GeneratorServicer):
    def __init__(self):
        self.generator = pipeline("text-generation", model="gpt2")

    def Generate(self, request, context):
        out = self.generator(request.PROMPT, max_new_tokens=64, return_full_text=False)
        return generate_pb2.GenerateReply(text=out[0]["generated_text"])


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    generate_pb2_grpc.add_GeneratorServicer_to_server(GeneratorServicer(), server)
    server.add_insecure_port("127.0.0.1:50051")
    server.start()
    server.wait_for_termination()
"""
PROTO = """\
syntax = "proto3";
service Generator { rpc Generate (GenerateRequest) returns (GenerateReply); }
message GenerateRequest { string prompt = 1; repeated string prompts = 2; int32 n = 3; Other other = 4; }
message GenerateReply { string text = 1; }
message Other { string a = 1; }
"""
REFUSED = "cannot tell that the pipeline input `request.{field}` is one string"


def _outcome(tmp_path: Path, source: str, files: dict[str, str]) -> tuple[str, str]:
    """(the fixed file, the message of the VLL101 finding left after the fix, or "")."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "server.py"
    path.write_text(source)
    outcome = fix_file(path, select=("VLL101",), settings=Settings(root=tmp_path))
    remaining = [d.message for d in outcome.remaining if d.code == "VLL101"]
    return outcome.fixed.decode(), remaining[0] if remaining else ""


# What the .proto says of the field the servicer passes as the prompt: "string" (rewritten as it is), "other"
# (typed as something else: refused), "unknown" (no .proto, or one the reader cannot tell: rewritten behind a check
# at run time that answers INVALID_ARGUMENT when it is not one string).
@pytest.mark.parametrize(
    ("field", "files", "typed"),
    [
        ("prompt", {"generate.proto": PROTO}, "string"),
        ("prompt", {"protos/generate.proto": PROTO}, "string"),
        ("prompts", {"generate.proto": PROTO}, "other"),
        ("n", {"generate.proto": PROTO}, "other"),
        ("other", {"generate.proto": PROTO}, "other"),
        ("missing", {"generate.proto": PROTO}, "unknown"),
        ("prompt", {}, "unknown"),
        ("prompt", {"generate.proto": PROTO.replace("string prompt", "bytes prompt")}, "other"),
        ("prompt", {"generate.proto": PROTO.replace("service Generator", "service Other")}, "unknown"),
        ("prompt", {"generate.proto": PROTO.replace("syntax", "import \"other.proto\";\nsyntax")}, "unknown"),
        ("prompt", {"generate.proto": PROTO + "message Broken {"}, "unknown"),
        ("prompt", {"generate.proto": PROTO, "protos/generate.proto": PROTO.replace("string prompt", "bytes prompt")}, "unknown"),
    ],
    ids=[
        "string field", "proto in protos/", "repeated string", "int32", "message type", "no such field", "no .proto",
        "bytes", "other service", "an import", "unclear file", "two different .proto files",
    ],
)
def test_request_field_typed_by_the_proto(tmp_path, field, files, typed):
    fixed, remaining = _outcome(tmp_path, SERVICER.replace("PROMPT", field), files)
    check = (f"        if not isinstance(request.{field}, str):\n"
             '            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the prompt must be one string")\n')
    if typed == "other":
        assert REFUSED.format(field=field) in remaining
        assert fixed == SERVICER.replace("PROMPT", field)
        return
    assert remaining == ""
    decoding = '**decode_as_transformers(self.generator.engine, {"do_sample": True, "temperature": 0.7})'
    assert f"self.generator.generate(request.{field}, SamplingParams(max_tokens=64, {decoding}))" in fixed
    assert (check in fixed) == (typed == "unknown")


def test_rebound_request_is_not_typed(tmp_path):
    source = SERVICER.replace("        out = self", "        request = context\n        out = self").replace("PROMPT", "prompt")
    fixed, remaining = _outcome(tmp_path, source, {"generate.proto": PROTO})
    assert remaining == "" and "if not isinstance(request.prompt, str):" in fixed  # not known from the .proto: checked


def test_a_change_to_the_proto_lints_again(tmp_path):
    """The cached result of the servicer holds only while its .proto is unchanged."""
    (tmp_path / "generate.proto").write_text(PROTO)
    (tmp_path / "server.py").write_text(SERVICER.replace("PROMPT", "prompt"))
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LINT_CACHE_DIR"}

    def messages():
        result = run_cli("check", "--isolated", "--output-format", "json", "--select", "VLL101", "server.py", cwd=tmp_path, env=env)
        return [item["message"] for item in json.loads(result.stdout)]

    assert ["no automatic fix" in m for m in messages()] == [False]
    assert list((tmp_path / ".vllm_lint_cache").glob("v*.json"))
    (tmp_path / "generate.proto").write_text(PROTO.replace("string prompt = 1", "repeated string prompt = 1"))
    assert [REFUSED.format(field="prompt") in m for m in messages()] == [True]
