"""The VLL102 rewrite run for real: a server calling a transformers model's generate() (chat template rendered
as text, greedy, the new tokens only) against what `vllm-lint check --fix --unsafe-fixes` makes of it, both
served on the tiny model under `vllm-lint validate`, with the same greedy load: the fixed server must answer
each request with the same JSON shape and the same text."""

from __future__ import annotations

import json

import pytest

from .conftest import require_modules

pytestmark = pytest.mark.slow

LOAD = ["--concurrency", "4", "--requests", "8", "--max-tokens", "16", "--timeout", "60", "--max-seconds", "180"]


def test_validate_a_model_generate_server_against_its_autofix(tiny_model_dir, tmp_path):
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "transformers", "psutil", what="the validation harness")
    from click.testing import CliRunner

    from vllm_lint.cli.reference import validate
    from vllm_lint.rulebook import load_rules

    example = next(e for e in load_rules()["VLL102"].examples
                   if e.kind == "bad" and e.fixed and "apply_chat_template" in e.code)
    (tmp_path / "server.py").write_text(example.clean_code)
    out_json = tmp_path / "numbers.json"
    result = CliRunner().invoke(validate, [str(tmp_path / "server.py"), "--model", str(tiny_model_dir), *LOAD,
                                           "--json", str(out_json), "--keep", str(tmp_path / "work")])
    logs = "\n".join(f"--- {p}\n" + p.read_text(errors="replace")[-3000:] for p in (tmp_path / "work").rglob("*.log"))
    assert result.exit_code == 0, result.output + logs
    [run] = json.loads(out_json.read_text())["runs"]
    assert run["fixes_applied"] == {"VLL102": 1}
    assert "engine.generate(text, SamplingParams(" in run["autofix_diff"]
    assert run["endpoint"] == "POST /chat with 'prompt' in the JSON body"
    assert run["bad"]["ok"] == run["fixed"]["ok"] == 8
    # The bad server's tokens come from its own model.generate, counted by the launcher as vLLM's are.
    assert run["bad"]["tokens_counted_by"] == run["fixed"]["tokens_counted_by"] == "server"
    assert 0 < run["bad"]["tokens"] == run["fixed"]["tokens"] <= 8 * 16
    assert run["comparison"]["same_text"] == run["comparison"]["compared"] == 8 and run["comparison"]["passed"]
    assert "responses: 8/8 same JSON shape, 8/8 same completion text as the bad server's -> PASS" in result.output
