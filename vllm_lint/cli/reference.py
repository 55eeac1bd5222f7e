"""Click commands of the reference server: ``serve-reference``, ``reference make-tiny-model``, ``validate``.

Importing this module is cheap: vLLM, torch, FastAPI and transformers are imported inside the commands.
The main CLI adds them as ``vllm-lint serve-reference``, ``vllm-lint reference make-tiny-model`` and
``vllm-lint validate``.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import click

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_bytes(value: str) -> int:
    """``268435456``, ``256MiB``, ``256M``, ``1GiB``, ``1.5G`` (binary units) -> bytes."""
    match = _SIZE_RE.match(str(value))
    if not match:
        raise click.BadParameter(f"{value!r} is not a size (examples: 268435456, 256MiB, 1GiB)")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** "_kmgt".index(unit)) if unit else int(number)


class _Bytes(click.ParamType):
    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_bytes(value)
        except click.BadParameter as exc:
            self.fail(str(exc), param, ctx)


BYTES = _Bytes()


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def default_model_dir(size: str) -> Path:
    from vllm_lint.resources import user_cache_dir

    cache = user_cache_dir()
    if cache is None:
        raise click.UsageError("no home folder to keep the tiny model in: pass --model DIR or set XDG_CACHE_HOME")
    return cache / f"tiny-model-{size}"


@click.command("serve-reference")
@click.option("--model", required=True, help="Model directory (or hub id where the hub is reachable).")
@click.option("--served-model-name", default=None, help="Name clients send as `model` (default: --model).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; use 0.0.0.0 only behind a proxy or in a container.")
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--max-model-len", default=2048, show_default=True, type=int,
              help="Longest prompt + completion, in tokens; sizes the KV cache per sequence.")
@click.option("--gpu-memory-utilization", default=0.90, show_default=True, type=float,
              help="Fraction of GPU memory vLLM may use (ignored on CPU, where --kv-cache-memory applies).")
@click.option("--tensor-parallel-size", default=None, type=int,
              help="GPUs to shard the model over [default: all visible GPUs, 1 without a GPU].")
@click.option("--kv-cache-memory", "kv_cache_memory_bytes", default=None, type=BYTES,
              help="KV cache size, e.g. 512MiB [default on CPU: 512MiB; on GPU: from the utilization].")
@click.option("--dtype", default="auto", show_default=True)
@click.option("--max-num-seqs", default=None, type=int, help="Sequences batched per step [vLLM's default].")
@click.option("--enforce-eager/--no-enforce-eager", default=None,
              help="Disable CUDA graphs [default: on for CPU, off for GPU].")
@click.option("--api-key", envvar="VLLM_API_KEY", default=None,
              help="Require 'Authorization: Bearer KEY' on /v1 (env VLLM_API_KEY).")
@click.option("--max-in-flight", default=256, show_default=True, type=int,
              help="Requests accepted at once; more get 429.")
@click.option("--max-body", "max_body_bytes", default="1MiB", show_default=True, type=BYTES,
              help="Largest request body accepted; larger gets 413.")
@click.option("--body-timeout", default=30.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds a client may take to send its request body; slower gets 408 and is closed.")
@click.option("--default-max-tokens", default=16, show_default=True, type=int,
              help="max_tokens when a request gives none.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve_reference(**kwargs) -> None:
    """Serve a model with the reference OpenAI-compatible server on vLLM's AsyncLLMEngine.

    Endpoints: /v1/completions, /v1/chat/completions (add "stream": true for server-sent events),
    /v1/models and /health.
    """
    from vllm_lint.reference.server import serve
    from vllm_lint.reference.settings import ServerSettings

    settings = ServerSettings(**kwargs)
    try:
        settings.validate()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    serve(settings)


@click.group("reference")
def reference() -> None:
    """The reference vLLM server's helpers: a tiny local model and the fix validation harness."""


@reference.command("make-tiny-model")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--size", type=click.Choice(["S", "M", "L"], case_sensitive=False), default="M", show_default=True,
              help="S: hidden 64 x 2 layers; M: hidden 256 x 4 layers; L: hidden 512 x 8 layers.")
@click.option("--seed", default=0, show_default=True, type=int)
def make_tiny_model(directory: Path, size: str, seed: int) -> None:
    """Build a random-weight Llama and a byte-level BPE tokenizer in DIRECTORY (no download)."""
    from vllm_lint.reference.tiny_model import SIZES, build

    out = build(directory, size=size.upper(), seed=seed)
    shape = SIZES[size.upper()]
    click.echo(f"tiny model {size.upper()} (hidden {shape.hidden_size}, {shape.num_hidden_layers} layers, "
               f"{shape.num_attention_heads} heads) written to {out}")


@click.command("validate")
@click.argument("bad_files", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--rule", "rules", multiple=True, metavar="CODE",
              help="Validate this rule's bad example servers, or one of them as CODE:NUMBER (repeatable) "
                   "[default, with no BAD_FILES: every rule whose fix rewrites a server].")
@click.option("--fixed", "fixed_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="With one BAD_FILE: compare against this fixed file instead of the autofixer's.")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Local model directory both servers load [default: a tiny model built in the cache].")
@click.option("--size", type=click.Choice(["S", "M", "L"], case_sensitive=False), default="M", show_default=True,
              help="Tiny model size when --model is not given.")
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(1, 256))
@click.option("--requests", default=None, type=click.IntRange(1, 10_000),
              help="Requests per load run [default: 4 x --concurrency, at least 8: a few rounds, so that the "
                   "figures are past the start of the run].")
@click.option("--max-tokens", default=64, show_default=True, type=click.IntRange(1, 4096),
              help="New tokens per request on both servers (decoding is greedy).")
@click.option("--timeout", default=300.0, show_default=True, type=float, help="Seconds per request.")
@click.option("--max-seconds", default=600.0, show_default=True, type=float,
              help="Time limit of each load run; requests not done by then count as failed.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the numbers as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a PNG of throughput against concurrency 1, 4, 16, 64 (runs the sweep).")
@click.option("--endpoint", default=None, help="Route to call, e.g. /chat [default: found in the OpenAPI schema].")
@click.option("--prompt-field", default="prompt", show_default=True, help="With --endpoint: the prompt's name.")
@click.option("--prompt-in", type=click.Choice(["query", "json"]), default="query", show_default=True,
              help="With --endpoint: send the prompt in the query string or a JSON body.")
@click.option("--kv-cache-memory", "kv_cache_bytes", default="256MiB", show_default=True, type=BYTES,
              help="KV cache of a vLLM server on CPU.")
@click.option("--max-num-seqs", default=16, show_default=True, type=int,
              help="Batch size of a vLLM server on CPU.")
@click.option("--keep", "keep_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the prepared files and server logs in this directory.")
def validate(bad_files: tuple[Path, ...], rules: tuple[str, ...], fixed_file: Path | None, model: Path | None,
             size: str, concurrency: int, requests: int | None, max_tokens: int, timeout: float, max_seconds: float,
             json_path: Path | None, plot_path: Path | None, endpoint: str | None, prompt_field: str,
             prompt_in: str, kv_cache_bytes: int, max_num_seqs: int, keep_dir: Path | None) -> None:
    """Run bad servers and their autofix side by side on a local model; compare answers and speed.

    BAD_FILES are server files (a folder: each of its .py files the autofixer rewrites into a server); with
    none, the bad example servers of the rules whose fix rewrites a server (VLL101, VLL102, VLL103). The fixed
    version is what `vllm-lint check --fix --unsafe-fixes` makes of each, after the model it names is
    pointed at the local model. Both servers get the same prompts (greedy, --max-tokens new tokens); each
    fixed response must have the bad response's JSON shape and completion text. Exits 1 when any differs
    or a server cannot be run. The summary ends with `fixed/bad throughput ratio: X.XX` (the lowest).
    """
    from vllm_lint.reference.tiny_model import ensure
    from vllm_lint.reference.validate.cases import file_cases, rule_cases
    from vllm_lint.reference.validate.endpoint import Endpoint
    from vllm_lint.reference.validate.errors import ValidationError
    from vllm_lint.reference.validate.plot import write_plot
    from vllm_lint.reference.validate.results import SWEEP_LEVELS, Options
    from vllm_lint.reference.validate.run import run_validation
    from vllm_lint.reference.validate.summary import format_summary

    if fixed_file is not None and (len(bad_files) != 1 or bad_files[0].is_dir() or rules):
        raise click.UsageError("--fixed goes with exactly one BAD_FILE (and no --rule)")
    try:
        cases = file_cases(list(bad_files))
        if rules or not bad_files:
            cases += rule_cases(tuple(rules))
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from exc
    if not cases:
        raise click.UsageError("no server to validate (a folder without .py files?)")
    if model is None:
        model = default_model_dir(size.upper())
        click.echo(f"model: tiny model {size.upper()} in {model}", err=True)
        ensure(model, size.upper())
    if requests is None:
        requests = max(8, 4 * concurrency)
    options = Options(
        cases=cases, fixed=fixed_file, model=model.resolve(), concurrency=concurrency, requests=requests,
        max_tokens=max_tokens, timeout=timeout, max_seconds=max_seconds,
        sweep=SWEEP_LEVELS if plot_path else (), workdir=keep_dir,
        endpoint=Endpoint(endpoint, prompt_field, prompt_in) if endpoint else None,
        kv_cache_bytes=kv_cache_bytes, max_num_seqs=max_num_seqs)
    # The servers run in sessions of their own (out of reach of the terminal's signals): a validate that is
    # terminated (`kill`, a CI time-out) stops them on its way out, as Ctrl-C does, instead of leaving them.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        result = run_validation(options, progress=lambda msg: click.echo(msg, err=True))
    except ValidationError as exc:
        raise click.ClickException(str(exc)) from exc
    if json_path:
        json_path.write_text(json.dumps(result.as_dict(), indent=2) + "\n")
        click.echo(f"numbers written to {json_path}", err=True)
    if plot_path and result.reports:
        write_plot(result, plot_path)
        click.echo(f"plot written to {plot_path}", err=True)
    click.echo(format_summary(result))
    if not result.passed:
        raise SystemExit(1)


reference.add_command(validate)

__all__ = ["serve_reference", "reference", "make_tiny_model", "validate", "parse_bytes"]
