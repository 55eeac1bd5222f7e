"""benchmarks/run_lint_benchmark.py's lower bound for the pre-filter: the files that have something to report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _benchmark():
    spec = importlib.util.spec_from_file_location("run_lint_benchmark", REPO / "benchmarks" / "run_lint_benchmark.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_only_files_with_a_finding_or_a_project_fact_are_kept(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text("from vllm import LLM\nllm = LLM(model='m')\n", encoding="utf-8")  # VLL201, VLL203
    # A vLLM server started with every setting given: no finding, but a fact (the server) for VLL304.
    (tmp_path / "serve.sh").write_text(
        "vllm serve org/m --gpu-memory-utilization 0.9 --max-model-len 4096 --host 127.0.0.1 --port 8000\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("import vllm  # mentions vLLM, reports nothing\nprint(vllm.__version__)\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing to run here.\n", encoding="utf-8")
    found = _benchmark().files_with_findings(tmp_path)
    assert sorted(path.name for path in found) == ["engine.py", "serve.sh"]
