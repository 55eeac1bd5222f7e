"""VLL001, the noqa comments that suppress nothing (ruff's RUF100): which codes are judged, the fix on every
kind of file with a noqa comment form, and ``--add-noqa`` writing none that VLL001 then reports."""

from __future__ import annotations

import pytest

from vllm_lint.config import Settings, enabled_codes
from vllm_lint.diagnostics import CellLocation, Position
from vllm_lint.engine.discovery import claim_named
from vllm_lint.engine.fixer import add_noqa_bytes, fix_file
from vllm_lint.engine.runner import RunOptions
from vllm_lint.rulebook import all_codes
from vllm_lint.surfaces import all_surfaces

from lintutil import REPO, lint_file_paths, lint_text, notebook_json

SERVER = (
    "from vllm import LLM\n"
    "\n"
    'llm = LLM(model="m", gpu_memory_utilization=0.9)  # noqa: VLL203\n'
    "a = 1  # noqa: VLL999\n"
    "b = 2  # noqa: E501, VLL101\n"
    "c = 3  # noqa\n"
    # the shape of the one noqa comment of benchmarks/realworld (MharoonZ/gemma4-modal-vllm-inference)
    "d = 4  # noqa: BLE001 - keep retrying health probes.\n"
    "e = 5  # noqa: VLL203, VLL203\n"
    's = "# noqa: VLL101"\n'
    "f = 6  # noqa: VLL209\n"
    "g = 7  # noqa: VLL101, VLL001\n"
    "h = 8  # noqa:vll101,E501 # type: ignore\n"
    "i = 9  # noqa: VLL101 - the reason stays\n"
)
SERVER_FIXED = (
    "from vllm import LLM\n"
    "\n"
    'llm = LLM(model="m", gpu_memory_utilization=0.9)  # noqa: VLL203\n'
    "a = 1\n"
    "b = 2  # noqa: E501\n"
    "c = 3  # noqa\n"
    "d = 4  # noqa: BLE001 - keep retrying health probes.\n"
    "e = 5\n"
    's = "# noqa: VLL101"\n'
    "f = 6  # noqa: VLL209\n"
    "g = 7  # noqa: VLL101, VLL001\n"
    "h = 8  # noqa:E501 # type: ignore\n"
    "i = 9  # - the reason stays\n"
)


def _unused(found) -> list[tuple[int, int, str]]:
    return [(d.start.line, d.start.column, d.message) for d in found if d.code == "VLL001"]


def test_what_each_comment_is_judged(tmp_path):
    assert _unused(lint_text(tmp_path, "server.py", SERVER)) == [
        (4, 8, "noqa comment that suppresses nothing (unknown: `VLL999`)"),
        (5, 8, "noqa comment that suppresses nothing (unused: `VLL101`)"),
        (8, 8, "noqa comment that suppresses nothing (unused: `VLL203`; duplicated: `VLL203`)"),
        (12, 8, "noqa comment that suppresses nothing (unused: `vll101`)"),
        (13, 8, "noqa comment that suppresses nothing (unused: `VLL101`)"),
    ]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_fix_takes_out_only_the_dead_codes(tmp_path, newline):
    path = tmp_path / "server.py"
    path.write_bytes(SERVER.replace("\n", newline).encode())
    outcome = fix_file(path, unsafe=False, settings=Settings(root=tmp_path))
    assert outcome.fixed.decode() == SERVER_FIXED.replace("\n", newline)
    assert dict(outcome.applied) == {"VLL001": 5}


@pytest.mark.parametrize(
    ("settings", "select", "expected"),
    [
        # the rules it names did not run: only the code no rule has, and a code named twice, are judged
        ({}, ("VLL001",), [4, 8]),
        ({"extend_select": ("VLL001",)}, ("VLL101",), [4, 5, 8, 12, 13]),
        ({}, ("VLL203", "VLL001"), [4, 8]),
        ({"ignore": ("VLL001",)}, (), []),
        ({"per_file_ignores": (("server.py", ("VLL101",)),)}, (), [4, 8]),
        ({"per_file_ignores": (("server.py", ("VLL001",)),)}, (), []),
        ({"preview": True}, (), [4, 5, 8, 10, 12, 13]),  # VLL209 runs: its comment on line 10 is dead
    ],
)
def test_a_code_is_judged_only_where_its_rule_ran(tmp_path, settings, select, expected):
    found = lint_text(tmp_path, "server.py", SERVER, select, **settings)
    assert [line for line, _, _ in _unused(found)] == expected


_LAUNCH = "vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --host 127.0.0.1"
_CMD = '["--model", "m", "--gpu-memory-utilization", "0.9", "--max-model-len", "8192", "--host", "127.0.0.1"]'
SURFACES = [
    ("serve.sh", f"#!/bin/sh\n{_LAUNCH}  # noqa: VLL203, SC2086\n", f"#!/bin/sh\n{_LAUNCH}  # noqa: SC2086\n", 2),
    (
        "Dockerfile",
        f"FROM vllm/vllm-openai:v0.11.0\n# noqa: VLL405\nCMD {_CMD}\n",
        f"FROM vllm/vllm-openai:v0.11.0\nCMD {_CMD}\n",
        2,
    ),
    (
        "docker-compose.yaml",
        f"services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0  # noqa: VLL405\n    command: {_CMD}\n",
        f"services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: {_CMD}\n",
        3,
    ),
    (
        "README.md",
        f"Serve it:\n\n<!-- noqa: VLL203 -->\n```bash\n{_LAUNCH}\n```\n",
        f"Serve it:\n\n```bash\n{_LAUNCH}\n```\n",
        3,
    ),
    (
        "README.md",
        f"Serve it:\n\n```bash\n{_LAUNCH}  # noqa: VLL999\n```\n",
        f"Serve it:\n\n```bash\n{_LAUNCH}\n```\n",
        4,
    ),
]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize(("name", "text", "fixed", "line"), SURFACES, ids=[f"{s[0]}-{s[3]}" for s in SURFACES])
def test_every_kind_of_file_with_a_noqa_comment(tmp_path, name, text, fixed, line, newline):
    assert [found[0] for found in _unused(lint_text(tmp_path, name, text.replace("\n", newline)))] == [line]
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode())
    outcome = fix_file(path, unsafe=False, settings=Settings(root=tmp_path))
    assert outcome.fixed.decode() == fixed.replace("\n", newline)


def test_a_notebook_s_comment_is_taken_out_of_its_json_string(tmp_path):
    cells = "# %%\nfrom vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.9, max_model_len=8192)  # noqa: VLL203\n"
    text = notebook_json(cells)
    found = [d for d in lint_text(tmp_path, "serve.ipynb", text) if d.code == "VLL001"]
    # where the comment is in the .ipynb's text (line 11 of nbformat's layout), and in its cell
    assert [(d.start.line, d.start.column, d.cell) for d in found] == [
        (11, 76, CellLocation(1, Position(2, 71), Position(2, 85)))
    ]
    outcome = fix_file(tmp_path / "serve.ipynb", unsafe=False, settings=Settings(root=tmp_path))
    assert outcome.fixed.decode() == notebook_json(cells.replace("  # noqa: VLL203", ""))


def test_add_noqa_writes_no_comment_that_vll001_reports(tmp_path):
    codes = all_codes()
    settings = Settings(root=tmp_path)
    options = RunOptions(settings, enabled_codes(settings, codes), codes)
    examples = sorted((REPO / "examples").iterdir())
    added = 0
    for example in examples:
        path = tmp_path / example.name
        path.write_bytes(example.read_bytes())
        surface = claim_named(path, path.read_bytes()[:256], all_surfaces())
        outcome = add_noqa_bytes(path, path.read_bytes(), surface, options)
        added += sum(count for code, count in outcome.applied.items() if code != "VLL001")
        path.write_bytes(outcome.fixed)
    found = lint_file_paths([tmp_path / example.name for example in examples])
    assert added > 20
    assert _unused(found) == []
    # the example of VLL001 itself is recorded as the others are: its code added to its comment
    assert "# noqa: VLL999, VLL001" in (tmp_path / "vll001_unused_noqa.py").read_text()


def test_the_rule_reads_no_comment_in_a_file_without_noqa(tmp_path):
    assert _unused(lint_text(tmp_path, "server.py", "from vllm import LLM\nllm = LLM(model='m')\n")) == []


def test_it_stays_silent_in_a_file_it_could_not_read(tmp_path):
    # A syntax error: no other rule looked at the file, so no comment can be judged.
    found = lint_text(tmp_path, "server.py", "from vllm import LLM\nllm = LLM(model='m'  # noqa: VLL101\n")
    assert [d.code for d in found] == ["VLL000"]
