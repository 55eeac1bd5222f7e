"""Shell as launch scripts write it: arrays, optional flags, here-documents, eval, env files; Dockerfile
ENTRYPOINT + CMD and the entrypoint of vLLM's own image.

Fixtures in tests/fixtures/shell, each standing for a kind of file of public repositories (its first
comment says which); the expectations are every finding, exactly.
"""

from __future__ import annotations

import pytest

from lintutil import REPO, lint_file_paths, lint_text

SHELL = REPO / "tests" / "fixtures" / "shell"

EXPECTED = {
    # args=(...) with the flags; --max-model-len appended under an if: conditional, so VLL203 is silent
    "idioms.sh": [(8, 28, "VLL202")],
    # ${MAX_MODEL_LEN:+--max-model-len ...}: checked when written, never counted as always set or missing
    "optional_flags.sh": [(7, 27, "VLL206")],
    # cmd=$(cat <<EOF ...) + eval $cmd; cat > run_worker.sh <<'EOF'; ssh host bash <<EOF; `source .env`
    "heredoc.sh": [(7, 18, "VLL206"), (13, 27, "VLL206"), (16, 71, "VLL202")],
    # ENTRYPOINT + CMD are one launch; `pip install vllm==0.6.3` pins it, where prefix caching is off by default
    "Dockerfile.entrypoint": [(5, 13, "VLL204"), (6, 61, "VLL202")],
    # vLLM's v0.5.5 image runs api_server, which needs --model: no VLL401 --model advice
    "Dockerfile.old-image": [(3, 1, "VLL403")],
    "sglang_llamacpp.sh": [],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shell_files(name):
    assert sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([SHELL / name])) == EXPECTED[name]


@pytest.mark.parametrize(
    "tag, codes",
    [
        # api_server entrypoint: `--model` is how it takes the model; prefix caching is off by default in 0.6.3
        ("v0.6.3", ["VLL204", "VLL403"]),
        # `vllm serve` from 0.11.1 on (docker/Dockerfile of the 0.11.1 source distribution, line 500)
        ("v0.12.0", ["VLL401", "VLL403"]),
        ("v0.32.0", ["VLL401", "VLL403"]),  # `vllm serve`: pass the model positionally
        ("latest", ["VLL401", "VLL403", "VLL405"]),  # and the tag floats
    ],
)
def test_image_entrypoint_by_tag(tmp_path, tag, codes):
    text = f"docker run --gpus 1 vllm/vllm-openai:{tag} --model m --max-model-len 4096 --gpu-memory-utilization 0.9\n"
    assert sorted(d.code for d in lint_text(tmp_path, "run.sh", text)) == codes


def test_assigned_value_known_only_when_unconditional(tmp_path):
    text = (
        "LEN=4096\n"
        "[ -n \"$LONG\" ] && LEN=oops\n"  # under && the value is no longer known
        "UTIL=0.99\n"
        "vllm serve m --max-model-len $LEN --gpu-memory-utilization $UTIL --api-key k\n"
    )
    assert [(d.start.line, d.code) for d in lint_text(tmp_path, "s.sh", text)] == [(4, "VLL202")]


def test_optional_flag_known_from_the_script(tmp_path):
    text = "UTIL=0.99\nLEN=\nvllm serve m --api-key k ${UTIL:+--gpu-memory-utilization $UTIL} ${LEN:+--max-model-len $LEN}\n"
    # UTIL is set: its flag is always there (and wrong); LEN is empty: its flag is never there
    assert sorted((d.start.line, d.code) for d in lint_text(tmp_path, "s.sh", text)) == [(3, "VLL202"), (3, "VLL203")]


def test_a_json_argument_in_dot_notation_is_that_argument(tmp_path):
    """vLLM's parser takes one key of a JSON argument as ``--speculative-config.method mtp`` (a systemd unit of
    the real-world corpus); a dotted flag whose first part vLLM lacks is still unknown."""
    text = (
        "vllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9 --host 127.0.0.1 "
        "--speculative-config.method mtp --speculative-config.num_speculative_tokens 1 --compilation-config.level=3 "
        "--bogus.key=1\n"
    )
    assert [(d.code, d.start.column, d.message) for d in lint_text(tmp_path, "serve.sh", text)] == [
        ("VLL206", 188, "unknown engine argument --bogus.key: vLLM does not have it; the engine fails at start-up"),
    ]
