"""A fix regenerates only the statement it changes, and the file comes out as regenerating the whole module
with the replacement would make it (LibCST's own ``deep_replace``), wherever the statement is."""

from __future__ import annotations

from pathlib import Path

import pytest

from lintutil import REPO, SEEDS
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.python import checker
from vllm_lint.surfaces.python import PYTHON
from vllm_lint.rulebook import all_codes
from vllm_lint.surfaces import LintJob

CORPUS = sorted([*SEEDS.glob("*.py"), *(REPO / "examples").glob("*.py")], key=str)

SAMPLING = "SamplingParams(temperature=0, max_new_tokens=64)"
# The same fixable call, at the places a statement can be: each gets VLL301's rename.
PLACES = {
    "top level": f"from vllm import SamplingParams\nparams = {SAMPLING}\n",
    "no newline at the end": f"from vllm import SamplingParams\nparams = {SAMPLING}",
    "in a function after comments": (
        "from vllm import SamplingParams\n\n\ndef make():\n    # why\n\n    # more\n"
        f"    params = {SAMPLING}\n    return params\n"
    ),
    "elif and else": (
        "from vllm import SamplingParams\nif a:\n    pass\n"
        f"elif b:\n    p = {SAMPLING}\nelse:\n    q = {SAMPLING}\n"
    ),
    "an elif's own test": f"from vllm import SamplingParams\nif a:\n    pass\nelif {SAMPLING}:\n    pass\n",
    "tabs and a method": (
        f"from vllm import SamplingParams\nclass A:\n\tdef f(self):\n\t\twith x:\n\t\t\treturn {SAMPLING}\n"
    ),
    "semicolons": f"from vllm import SamplingParams\nif a: b = 1; p = {SAMPLING}\n",
    "match case": (
        "from vllm import SamplingParams\nmatch x:\n    case 1:\n"
        f"        p = {SAMPLING}\n    case _:\n        pass\n"
    ),
    "decorator": f"from vllm import SamplingParams\n\n@use({SAMPLING})\ndef f():\n    pass\n",
    "crlf": f"from vllm import SamplingParams\r\ndef f():\r\n    return {SAMPLING}\r\n",
    "try and finally": f"from vllm import SamplingParams\ntry:\n    pass\nfinally:\n    p = {SAMPLING}\n",
}


def _fixed_edits(path: Path, text: str, monkeypatch) -> list[tuple[str | None, str | None]]:
    """(the text a fix makes, the text LibCST makes of the whole module) for each replacement a fix asks for."""
    made = []
    replaced_text = checker._replaced_text

    def recording(module, text, edit, locator):
        new = replaced_text(module, text, edit, locator)
        made.append((new, module.deep_replace(edit.node, edit.replacement).code))
        return new

    monkeypatch.setattr(checker, "_replaced_text", recording)
    job = LintJob(path, str(path), text.encode("utf-8"), frozenset(all_codes()), LaunchSettings(None, None))
    PYTHON.lint(job)
    return made


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_fixes_in_real_files_equal_regenerating_the_module(path: Path, monkeypatch):
    for new, whole in _fixed_edits(path, path.read_text(encoding="utf-8"), monkeypatch):
        assert new == whole


@pytest.mark.parametrize("place", PLACES)
def test_a_fix_anywhere_equals_regenerating_the_module(place: str, tmp_path: Path, monkeypatch):
    text = PLACES[place]
    made = _fixed_edits(tmp_path / "m.py", text, monkeypatch)
    assert made, "no fix was asked for"
    for new, whole in made:
        assert new == whole
        assert "max_tokens=64" in new and new.count("max_new_tokens") == text.count("max_new_tokens") - 1
