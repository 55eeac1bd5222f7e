"""Findings in YAML point at the flag or value they are about, however the command is written: folded ``>``
blocks, plain and quoted scalars over several lines, escapes, shell scripts in a template, SkyPilot's ``run:``.
A launch that lacks something is reported at its first word (for vLLM's image, the first argument given to it).

Each fixture in tests/fixtures/yaml_positions stands for a kind of file found in public repositories (its
first comment says which); the expectations are every finding, exactly.
"""

from __future__ import annotations

import pytest
import yaml

from vllm_lint.surfaces.yaml_positions import exact_offsets, value_offsets

from lintutil import REPO, lint_file_paths, lint_text

FIXTURES = REPO / "tests" / "fixtures" / "yaml_positions"

EXPECTED = {
    "llm-stack.yml": [
        (8, 32, "VLL202"),  # 0.99 on the folded block's second line
        (9, 15, "VLL206"),  # halff
        (15, 32, "VLL202"),  # 0.98 on a plain scalar's continuation line
        (20, 32, "VLL202"),  # 0.97 in a double-quoted scalar over three lines, after \"rerank\"
        (21, 15, "VLL206"),
        (25, 9, "VLL201"),  # missing: at the first argument given to the image's entrypoint
    ],
    "inference.yaml": [
        (19, 40, "VLL202"),  # inside the folded sh -c script
        # a double-quoted script over two lines is one line for the shell: --gpu-memory-utilization is
        # this command's (no VLL201), and halff is checked
        (28, 50, "VLL206"),
        (45, 38, "VLL202"),  # KServe's runtime: {{.Name}} is unknown, the rest is read where it is written
    ],
    "sky-task.yaml": [(7, 3, "VLL205")],  # L4:1 for --tensor-parallel-size 2, in a plain run: over three lines
    "chart/templates/deployment.yaml": [
        (17, 42, "VLL202"),  # {{ .Values.gpuMemoryUtilization }} (0.97) in the script, at the action
        (18, 25, "VLL206"),  # {{ .Values.dtype }} (halff)
        (23, 38, "VLL202"),  # in a folded args: block
    ],
}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_findings_point_at_what_they_are_about(relative):
    found = sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([FIXTURES / relative]))
    assert found == EXPECTED[relative]


def test_folded_and_escaped_commands_are_not_edited(tmp_path):
    # positions through folds and escapes are for pointing: a fix through them is not offered
    text = 'services:\n  a:\n    image: vllm/vllm-openai:v0.8.5\n    command: "--model m --max-model-len 8192\n      --api-key k \\"x\\""\n'
    [finding] = lint_text(tmp_path, "compose.yaml", text)
    assert (finding.code, finding.start.line, finding.start.column, finding.fix) == ("VLL201", 4, 15, None)


def test_a_noqa_on_the_command_line_covers_a_block_below_it(tmp_path):
    text = "services:\n  a:\n    image: vllm/vllm-openai:v0.8.5\n    command: >  # noqa: VLL201\n      --model m\n      --max-model-len 8192 --api-key k\n"
    assert lint_text(tmp_path, "compose.yaml", text) == []


SCALARS = [
    ("k: a b c\n", "a b c", True),
    ("k: 'a ''b'' c'\n", "a 'b' c", False),
    ('k: "a \\"b\\" \\u00e9 c"\n', 'a "b" é c', False),
    ("k: a\n  b\n\n  c\nz: 1\n", "a b\nc", False),
    ("k: 'a\n  b'\n", "a b", False),
    ('k: "a \\\n  b"\n', "a b", False),  # an escaped line break joins without a space
    ('k: "a  \n   b"\n', "a b", False),
    ("k: a\r\n  b\r\n", "a b", False),
    ("k: |\n  a\n  b\n\n  c\nz: 1\n", "a\nb\n\nc\n", True),
    ("k: >\n  a\n  b\nz: 1\n", "a b\n", True),
    ("k: >\n  a\n  b\n\n  c\nz: 1\n", "a b\nc\n", False),
    ("k: >-\n  a\n    b\n  c\n", "a\n  b\nc", False),  # a more-indented line keeps its breaks
    ("k: >\n\n  a\n  b\n", "\na b\n", False),
]


@pytest.mark.parametrize(("source", "value", "exact"), SCALARS)
def test_each_character_is_placed_where_it_was_written(source, value, exact):
    node = yaml.compose(source, Loader=yaml.SafeLoader).value[0][1]
    assert node.value == value
    offsets = value_offsets(source, node)
    assert offsets is not None and len(offsets) == len(value) + 1
    for char, at in zip(value, offsets):
        # a character is its source character, a fold's space or newline sits on a line break, an escape
        # (\", \u00e9, '') on its first character
        assert source[at] == char or (char in " \n" and source[at] in "\r\n") or source[at] in "\\'", (char, at)
    assert (exact_offsets(source, node) is not None) == exact


def test_an_indentation_indicator_is_not_guessed():
    source = "k: |2\n    a\n  b\n"
    node = yaml.compose(source, Loader=yaml.SafeLoader).value[0][1]
    assert value_offsets(source, node) is None
