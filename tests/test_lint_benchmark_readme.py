"""benchmarks/run_lint_benchmark.py: README's performance table is the benchmark's, between markers (--readme); and
the files its lower bound for the pre-filter lints, those that have something to report (--realworld)."""

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


def test_the_table_between_the_markers_is_replaced_and_nothing_else():
    bench = _benchmark()
    text = f"# Title\n\nbefore\n{bench.README_START}\nold table\n| a | b |\n{bench.README_END}\nafter\n"
    updated = bench.readme_with_table(text, ["| input | x |", "|---|---|", "| row | 1 s |"], "2026-12-02, 2 cores")
    assert updated == (f"# Title\n\nbefore\n{bench.README_START}\nMeasured 2026-12-02, 2 cores\n\n| input | x |\n"
                       f"|---|---|\n| row | 1 s |\n{bench.README_END}\nafter\n")
    assert bench.readme_with_table(updated, ["| input | x |"], "later").count(bench.README_START) == 1


def test_a_text_without_the_markers_is_refused():
    bench = _benchmark()
    assert bench.readme_with_table("# Title\nno table here\n", ["| a |"], "today") is None
    assert bench.readme_with_table(f"{bench.README_END}\n{bench.README_START}\n", ["| a |"], "today") is None


def test_readme_holds_a_measured_table_of_every_main_row():
    bench = _benchmark()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = readme.index(bench.README_START), readme.index(bench.README_END)
    block = readme[start:end]
    assert "\nMeasured " in block
    for row in bench.README_ROWS:
        assert f"\n| {row} | " in block, row


def test_the_pre_filter_s_lower_bound_lints_only_files_with_a_finding_or_a_project_fact(tmp_path):
    (tmp_path / "engine.py").write_text("from vllm import LLM\nllm = LLM(model='m')\n", encoding="utf-8")  # VLL201, VLL203
    # A vLLM server started with every setting given: no finding, but a fact (the server) for VLL304.
    (tmp_path / "serve.sh").write_text(
        "vllm serve org/m --gpu-memory-utilization 0.9 --max-model-len 4096 --host 127.0.0.1 --port 8000\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("import vllm  # mentions vLLM, reports nothing\nprint(vllm.__version__)\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing to run here.\n", encoding="utf-8")
    found = _benchmark().files_with_findings(tmp_path)
    assert sorted(path.name for path in found) == ["engine.py", "serve.sh"]


def test_both_tools_of_every_row_print_alike(tmp_path):
    bench = _benchmark()
    big = {name: tmp_path / name for name in bench.BIG_ROWS}
    commands = bench.build_commands(["vllm-lint"], ["ruff"], tmp_path, tmp_path / "vllm-src", tmp_path / "stdlib", big, True)
    pairs = {label: tools for label, tools in bench._by_row(commands).items() if "ruff" in tools}
    assert sorted(pairs) == sorted(["vllm source, cold", "standard library, cold", "one clean file", "one file with findings",
                                    *(label for name, label in bench.BIG_ROWS.items() if not name.endswith(".ipynb"))])
    for label, tools in pairs.items():
        ours, theirs = (bench.output_options(tools[tool].argv) for tool in ("vllm-lint", "ruff"))
        assert ours == theirs == ["--exit-zero", "--output-format", "concise"], label


def test_the_output_options_are_read_with_their_values():
    bench = _benchmark()
    assert bench.output_options(["ruff", "check", "-q", "--select", "ALL", "--output-format", "full", "x.py"]) == [
        "-q", "--output-format", "full"]
