"""How rule examples become files: a notebook example's cells (the percent form) as a valid .ipynb and back,
an example's other files (a chart's values.yaml) written beside it, and findings placed on the example's lines."""

from __future__ import annotations

import nbformat
import pytest

from vllm_lint.rulebook import Example, load_rules

from lintutil import example_line, example_text, lint_example, notebook_json, write_example

NOTEBOOK = """\
# %% [markdown]
# # Serve a model
# Start the server, then query it.
# %%
!pip install vllm
# %%
!vllm serve m --max-model-len 8192 --host 127.0.0.1  # expect: VLL201
"""

NOTEBOOK_EXAMPLES = [
    pytest.param(example, id=f"{rule.code}-{index}")
    for rule in load_rules().values()
    for index, example in enumerate(rule.examples)
    if example.lang == "ipynb"
]


def test_percent_form_is_a_valid_notebook_that_reads_back(tmp_path):
    example = Example("ipynb", "bad", NOTEBOOK)
    path = write_example(tmp_path, example)
    notebook = nbformat.read(str(path), as_version=4)
    nbformat.validate(notebook)
    assert [(c.cell_type, c.source) for c in notebook.cells] == [
        ("markdown", "# Serve a model\nStart the server, then query it."),
        ("code", "!pip install vllm"),
        ("code", "!vllm serve m --max-model-len 8192 --host 127.0.0.1"),  # written without its marker
    ]
    assert example_text(example, path) == example.clean_code


def test_findings_land_on_the_percent_form_lines(tmp_path):
    example = Example("ipynb", "bad", NOTEBOOK)
    found = lint_example(tmp_path, example)
    assert sorted((example_line(example, d), d.code) for d in found) == [(7, "VLL201")]


def test_other_files_are_written_beside_the_example(tmp_path):
    example = Example("helm", "bad", "kind: x\n", files=(("Chart.yaml", "name: c\n"), ("values.yaml", "a: 1\n")))
    path = write_example(tmp_path, example)
    assert path == tmp_path / "templates" / "deployment.yaml"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "Chart.yaml", "templates/deployment.yaml", "values.yaml"]


def test_a_notebook_example_must_start_with_a_cell_marker():
    with pytest.raises(ValueError, match="starts with a `# %%` cell marker"):
        notebook_json("!vllm serve m\n")


@pytest.mark.parametrize("example", NOTEBOOK_EXAMPLES)
def test_every_notebook_example_is_a_valid_notebook(tmp_path, example):
    path = write_example(tmp_path, example)
    nbformat.validate(nbformat.read(str(path), as_version=4))
    assert example_text(example, path) == example.clean_code


# The surfaces whose examples the rule files carry: a rule that lists one has a bad example of it.
EXAMPLE_LANG = {"notebook": "ipynb", "helm": "helm", "skypilot": "skypilot"}


@pytest.mark.parametrize("rule", [r for r in load_rules().values() if r.code != "VLL000"], ids=lambda r: r.code)
def test_a_listed_surface_has_an_example(rule):
    for surface, lang in EXAMPLE_LANG.items():
        if surface in rule.surfaces:
            assert any(e.lang == lang for e in rule.bad_examples), f"{rule.code} lists {surface} without a bad {lang} example"
    listed = {lang for surface, lang in EXAMPLE_LANG.items() if surface in rule.surfaces}
    assert {e.lang for e in rule.examples if e.lang in EXAMPLE_LANG.values()} <= listed, f"{rule.code}: an example of a surface it does not list"
