"""The shipped database's 0.32.0 entry agrees with raw dumps read off vLLM 0.32.0.

The database is read statically from the released wheels (``tools/vllm_api/refresh.py``); the dumps
in ``shared/vllm-0.32-facts/`` were taken independently (``vllm serve --help=all``, a loop over
``dataclasses.fields``). Needs neither vLLM nor the rest of vllm-lint's front-ends.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from vllm_lint.vllm_api import VllmApi, load_api
from vllm_lint.vllm_api.database import FILE_NAME
from vllm_lint.resources import vllm_api_dir

FACTS = Path(__file__).resolve().parents[2] / "shared" / "vllm-0.32-facts"

pytestmark = pytest.mark.skipif(
    not FACTS.is_dir(), reason=f"raw vLLM 0.32 dumps not found at {FACTS} (they live in the shared/ folder)"
)


@pytest.fixture(scope="module")
def api() -> VllmApi:
    chosen = load_api("0.32.0")
    assert chosen.version == "0.32.0" and bin(chosen.mask).count("1") == 1
    return chosen


def read_dump(name: str) -> dict[str, str]:
    """``name<TAB>repr(default)`` lines -> {name: repr text}."""
    rows: dict[str, str] = {}
    for line in (FACTS / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            field, _, raw = line.partition("\t")
            rows[field] = raw
    return rows


def help_option_strings(text: str) -> set[str]:
    """Option strings from the option lines of ``--help`` output.

    An option line is indented by two spaces and starts with ``-``; its option
    strings are the comma-separated parts that start with ``-`` (metavar lists
    such as ``['auto', 'hf']`` contain commas too).
    """
    found: set[str] = set()
    for line in text.splitlines():
        match = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if not match:
            continue
        for part in match.group(1).split(", "):
            if part.startswith("-"):
                found.add(part.split(" ", 1)[0])
    return found


def flags_by_option(api: VllmApi) -> dict[str, object]:
    return {option: flag for flag in api.serve_flags for option in flag.option_strings}


def test_database_size() -> None:
    # Read by every lint run that needs vLLM names (packed into the user cache): keep it modest.
    assert (vllm_api_dir() / FILE_NAME).stat().st_size < 6_000_000


def test_engine_args_names_match_dump(api: VllmApi) -> None:
    dump = read_dump("engine_args_fields.txt")
    assert len(dump) == 256
    assert api.engine_args == set(dump)


def test_the_defaults_the_rules_read_match_dump(api: VllmApi) -> None:
    dump = read_dump("engine_args_fields.txt")
    for field in ("gpu_memory_utilization", "enable_prefix_caching", "enable_chunked_prefill", "max_model_len"):
        assert api.engine_default(field) == ast.literal_eval(dump[field]), field
    assert api.sampling_default("max_tokens") == ast.literal_eval(read_dump("sampling_params_fields.txt")["max_tokens"])


def test_async_engine_args_add_only_enable_log_requests(api: VllmApi) -> None:
    assert api.async_engine_args - api.engine_args == {"enable_log_requests"}
    assert api.engine_args <= api.async_engine_args


def test_engine_args_facts(api: VllmApi) -> None:
    assert "kv_cache_memory_bytes" in api.engine_args
    for removed in ("swap_space", "disable_log_requests", "engine_use_ray", "worker_use_ray", "use_v2_block_manager", "num_scheduler_steps"):
        assert removed not in api.engine_args
        assert removed not in api.async_engine_args


def test_sampling_params_match_dump(api: VllmApi) -> None:
    assert api.sampling_params == set(read_dump("sampling_params_fields.txt"))
    for unknown in ("max_new_tokens", "best_of", "use_beam_search", "guided_decoding"):
        assert unknown not in api.sampling_params


def test_serve_flags_match_help_both_ways(api: VllmApi) -> None:
    help_options = help_option_strings((FACTS / "serve_help.txt").read_text(encoding="utf-8"))
    assert help_options - set(flags_by_option(api)) == set()
    assert set(flags_by_option(api)) - help_options == set()


def test_serve_flag_facts(api: VllmApi) -> None:
    flags = flags_by_option(api)
    prefix = flags["--enable-prefix-caching"]
    assert prefix.kind == "boolean_optional"
    assert prefix.option_strings == ("--enable-prefix-caching", "--no-enable-prefix-caching")
    assert flags["--no-enable-prefix-caching"] is prefix
    # argparse takes any string for --quantization (a bad one fails at model load); vLLM's own list
    # of methods is kept as known values.
    quantization = flags["--quantization"]
    assert quantization.dest == "quantization" and "-q" in quantization.option_strings
    assert quantization.choices is None and "fp8" in quantization.known_values and quantization.known_values_enforced
    assert flags["-tp"].dest == "tensor_parallel_size"
    assert flags["--device-memory-utilization"].dest == "gpu_memory_utilization"
    assert flags["--dtype"].choices is not None and "float32" in flags["--dtype"].choices
    assert flags["--kv-cache-dtype"].choices is not None and "fp8" in flags["--kv-cache-dtype"].choices
    assert flags["--help"].kind == "help"
    assert flags["--headless"].kind == "store_true"
    assert flags["--max-model-len"].kind == "value"
    assert "--model" in flags
    assert api.allows_abbreviations()


def test_module_facts(api: VllmApi) -> None:
    assert len(api.modules) > 2600
    assert "vllm.entrypoints.openai.benchmarks.benchmark_serving" not in api.modules
    assert {"vllm", "vllm.engine", "vllm.engine.async_llm_engine", "vllm.v1.engine.async_llm"} <= api.modules
    names, is_open = api.module_names("vllm.engine.async_llm_engine")
    assert "AsyncLLMEngine" in names and not is_open
    root, is_open = api.module_names("vllm")
    for lazy in ("LLM", "AsyncLLMEngine", "AsyncEngineArgs", "SamplingParams", "EngineArgs"):
        assert lazy in root
    assert "__version__" not in root  # names with a leading underscore are never reported, so not stored
    assert "engine" in root and not is_open  # submodules are attributes too


def test_class_attribute_facts(api: VllmApi) -> None:
    llm = api.class_attributes("vllm.LLM")
    assert "generate_async" not in llm
    assert {"generate", "chat", "llm_engine"} <= llm  # llm_engine is set in __init__
    engine = api.class_attributes("vllm.AsyncLLMEngine")
    assert {"generate", "abort", "shutdown", "from_engine_args"} <= engine
    # AsyncLLMEngine is an alias of AsyncLLM in 0.32.
    assert api.same_class("vllm.AsyncLLMEngine", "vllm.v1.engine.async_llm.AsyncLLM")
