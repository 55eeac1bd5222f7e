"""A big module is linted on what its rules could read (python/focus.py): the top-level functions nothing kept
reaches stand as a bytes literal over the same lines, and findings are those of the whole module, at the same
places; a fix that would edit those lines is left out."""

from __future__ import annotations

import pytest

from vllm_lint.python import focus as focus_module
from vllm_lint.python.focus import FOCUS_BYTES, focus

from fixture_files import SEEDS, lint_in

MODULE = '''"""Docstring.
def not_code(at_column_zero):
    pass
"""
import json
from fastapi import FastAPI

app = FastAPI()


def reached(value):
    return chain(value)


def chain(value):
    return value + 1


def unreached(value):
    total = value * 2
    return total


def uses_module_name(value):
    return json.dumps(value)


def imports_its_own(value):
    from vllm import LLM
    return LLM(value)


def rebinds():
    global app
    app = None


@app.get("/")
def handler():
    return reached(1)


def last_unreached(a, b=3):
    return a + b'''


def test_the_functions_nothing_kept_reaches_become_a_literal_over_their_lines(monkeypatch):
    monkeypatch.setattr(focus_module, "FOCUS_BYTES", 0)
    focused = focus(MODULE)
    assert focused is not None
    assert focused.dropped == ((19, 23), (43, 44))
    lines = MODULE.split("\n")
    assert focused.text.split("\n") == [*lines[:18], 'b"""', "", "", "", '"""', *lines[23:42], 'b"""', '"""']
    assert [
        focused.touches_dropped(first, last) for first, last in ((1, 18), (18, 19), (23, 23), (24, 42), (44, 60))
    ] == [False, True, True, False, True]


def test_a_small_module_or_one_where_everything_is_reached_is_left_alone(monkeypatch):
    assert len(MODULE) < FOCUS_BYTES and focus(MODULE) is None
    monkeypatch.setattr(focus_module, "FOCUS_BYTES", 0)
    assert focus("import os\n\n\ndef main():\n    return os.getcwd()\n") is None


HELPERS = "".join(
    f"\n\ndef helper_{i:05d}(value: int) -> int:\n    total = value * 3\n    return total + {i}\n" for i in range(4_000)
)


@pytest.mark.parametrize("name", sorted(path.name for path in SEEDS.glob("*.py")))
def test_a_seed_with_thousands_of_helpers_after_it_has_the_seed_s_findings(tmp_path, name):
    """Past FOCUS_BYTES (the helpers alone are over it), every finding is the seed's own, at its own place; the
    fixes too, but for one whose edits reach the end of the module (where the helpers were dropped)."""
    seed = (SEEDS / name).read_text(encoding="utf-8")
    (tmp_path / name).write_text(seed, encoding="utf-8")
    alone = lint_in(tmp_path, name)
    big = seed + HELPERS
    assert len(big) > FOCUS_BYTES
    (tmp_path / name).write_text(big, encoding="utf-8")
    with_helpers = lint_in(tmp_path, name)
    assert [(d.code, d.start, d.end, d.message) for d in with_helpers] == [
        (d.code, d.start, d.end, d.message) for d in alone
    ]
    last_line = seed.count("\n")
    for before, after in zip(alone, with_helpers):
        reaches_the_end = before.fix is not None and any(edit.end.line > last_line for edit in before.fix.edits)
        assert after.fix == (None if reaches_the_end else before.fix), before


def test_the_places_of_every_name_read_in_one_scan_are_those_of_a_search_per_name():
    code = (
        "from a.b import c as d\nd.e(f, g_1, _h)\nx = y.z + d\ndef café(naïve):\n    return naïve.d, d2, 2d, d\n"
        "\tl = [d,d]\n# d in a comment, d.\nd"
    )
    places = focus_module.name_places(code)
    names = {*places, "e", "z", "d2", "ab", "é"}
    assert {name: places.get(name, []) for name in names} == {
        name: list(focus_module._places_of(code, name)) for name in names
    }


def test_a_module_with_many_names_is_focused_as_with_a_search_per_name(monkeypatch):
    """Past the names searched one by one, the places of all come from one scan: the same functions are dropped."""
    helpers = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n\n" for i in range(8000))
    # more names than are searched for one by one, and a call that reaches two helpers
    kept = "".join(f"name_{i} = {i}\n" for i in range(200)) + "print(helper_3(1), helper_7999(2))\n"
    text = helpers + kept
    assert len(text) > FOCUS_BYTES
    indexed = focus(text)
    monkeypatch.setattr(focus_module, "_SEARCHES_BEFORE_INDEX", 1 << 30)
    searched = focus(text)
    assert indexed is not None and searched is not None
    assert (indexed.text, indexed.dropped) == (searched.text, searched.dropped)
    assert len(indexed.dropped) == 2 and indexed.text.count("def helper_") == 2
