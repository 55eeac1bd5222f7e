"""The acceptance table of ../shared/spec/RULES.md ("What the seed documents must produce"), made exact: every
finding each seed code file reports (test_seeds.py on the files, test_seed_markdown.py on the documents)."""

from __future__ import annotations

# Every finding of each seed: (code, first line, last line, the text it covers on its first line). The table's
# "must report" is all of them; its "must not report" column is what exactness rules out.
TABLE = {
    "000_bad_pipeline_server.py": [("VLL101", 7, 7, "pipe(prompt, max_new_tokens=256)")],
    # must not: VLL101, VLL103, VLL201
    "000_good_async_engine_server.py": [
        ("VLL501", 5, 5, "from vllm.engine.async_llm_engine import AsyncLLMEngine"),
        ("VLL203", 8, 12, "AsyncEngineArgs("),
        ("VLL302", 15, 15, "SamplingParams(temperature=0.7)"),
    ],
    # must not: VLL206 for --enable-prefix_caching (vLLM accepts it), VLL202 (0.92 is fine)
    "000_good_entrypoint.sh": [
        ("VLL203", 3, 3, "python3 -m vllm.entrypoints.openai.api_server"),
        ("VLL401", 3, 3, "python3 -m vllm.entrypoints.openai.api_server"),
        ("VLL403", 3, 3, "python3 -m vllm.entrypoints.openai.api_server"),
    ],
    # must not: VLL201/VLL203 (both given via ${VAR:-default})
    "001_start_vllm.sh": [
        ("VLL401", 20, 20, "python3 -m vllm.entrypoints.openai.api_server"),
        ("VLL403", 23, 23, "--host 0.0.0.0"),
        ("VLL402", 29, 29, "--trust-remote-code"),
    ],
    # VLL203 on recipe 1 (line 2), VLL201 on recipe 2 (line 5), VLL403 on both, VLL303 on the
    # benchmark_serving module
    "001_recipes.sh": [
        ("VLL203", 2, 2, "vllm serve"),
        ("VLL403", 2, 2, "vllm serve"),
        ("VLL201", 5, 5, "vllm serve"),
        ("VLL403", 5, 5, "vllm serve"),
        ("VLL303", 11, 11, "vllm.entrypoints.openai.benchmarks.benchmark_serving"),
    ],
    # must not: VLL202 (the default "0.90" comes through os.getenv)
    "004_server.py": [
        ("VLL503", 26, 26, '@app.on_event("startup")'),
        ("VLL103", 33, 40, "LLM("),
        ("VLL502", 54, 54, '{"error": "Model not loaded yet. Please wait."}, 503'),
        ("VLL301", 60, 60, "max_new_tokens=request.max_tokens"),
        ("VLL303", 71, 71, "llm.generate_async"),
        ("VLL303", 81, 81, "llm.generate_async"),
    ],
    "001_vllm_client.py": [],
    "004_client.py": [],
    # not in the table: it launches something other than vLLM
    "000_bad_entrypoint.sh": [],
}
