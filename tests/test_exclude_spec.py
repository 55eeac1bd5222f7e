"""The matchers for excludes and .gitignore files (a set of plain names, or one regex) answer exactly as
pathspec does."""

from __future__ import annotations

import pathspec
import pytest

from vllm_lint.config import DEFAULT_EXCLUDE
from vllm_lint.engine.discovery import _Spec

PATHS = [
    "a.py", "build/x.py", "build/", "x/build/y", "top", "sub/top", "a/c/d/b", "keep.py", ".venv/lib/x.py",
    "node_modules/", "docs/x.md", "docs/sub/x.md", "q/gen_1.py", "tests/fixtures/", "tests/fixtures/a.py",
    "site-packages/a", "__pycache__/", "x/.git/", "src/__pycache__/m.pyc", "Dockerfile", "deploy/k8s/x.yaml",
    "dist", "a/dist", "a/dist/b.py", "distx/a.py", "a/xdist", "venv/", ".venv", "x.venv/a", "a/_build/b",
    "site-packages", "my-site-packages/a", "Node_Modules/a", "a.b-c_d", "x/a.b-c_d/y",
]


@pytest.mark.parametrize(
    "lines",
    [
        list(DEFAULT_EXCLUDE),  # plain names: matched without pathspec
        ["dist", "a.b-c_d", "# a comment", "", "__pycache__"],  # plain names too
        ["*.py", "build/", "/top", "a/**/b", "!keep.py"],  # a negation: pathspec's own last-match rule
        ["docs/*.md", "**/gen_*.py", "tests/fixtures", "# a comment", ""],
        ["deploy/", "*.yaml", "!deploy/k8s/x.yaml"],
        [],
    ],
)
def test_same_answers_as_pathspec(lines):
    reference = pathspec.GitIgnoreSpec.from_lines(lines)
    fast = _Spec(lines)
    assert [fast.match_file(p) for p in PATHS] == [reference.match_file(p) for p in PATHS]


@pytest.mark.parametrize("lines, anchored", [
    (list(DEFAULT_EXCLUDE), False),
    (["build/", "*.egg-info", "# docs/x"], False),
    (["/top"], True),
    (["docs/*.md"], True),
])
def test_anchored_tells_whether_a_name_alone_can_match_differently(lines, anchored):
    assert _Spec(lines).anchored is anchored


def test_plain_names_need_no_pathspec():
    assert _Spec(list(DEFAULT_EXCLUDE))._names == frozenset(DEFAULT_EXCLUDE)
    for not_plain in (["build/"], ["*.pyc"], ["!keep"], ["a/b"], [" lead"], ["trail "], ["a\\b"], ["."]):
        assert _Spec(not_plain)._names is None, not_plain


def test_discovery_by_names_finds_what_discovery_by_paths_finds(tmp_path, monkeypatch):
    """The walk's two forms (Paths for callers that read files, strings for a run answered from the cache)
    name the same files the same way, whatever form the folder was named in, excludes and symlinks included."""
    from pathlib import Path

    from vllm_lint.config import Settings
    from vllm_lint.engine.discovery import discover, discover_names
    from vllm_lint.surfaces import all_surfaces

    tree = tmp_path / "tree"
    for name in ("a.py", "sub/b.py", "sub/deep/c.sh", "build/skipped.py", "docs/x.md", "sub/Dockerfile", "run"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("#!/usr/bin/env python\n" if name == "run" else "x = 1\n", encoding="utf-8")
    (tree / "linked").symlink_to(tree / "sub", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    settings = Settings(root=tmp_path, exclude=("build",))
    for named in (Path("tree"), Path("./tree/"), tree, Path("tree/sub/.."), Path("tree/sub/b.py")):
        by_paths = [(str(path), surface) for path, surface in discover([named], settings, all_surfaces())]
        assert list(discover_names([named], settings, all_surfaces())) == by_paths, named
        assert by_paths
    monkeypatch.chdir(tree)
    by_paths = [(str(path), surface) for path, surface in discover([Path(".")], settings, all_surfaces())]
    assert list(discover_names([Path(".")], settings, all_surfaces())) == by_paths
    assert {"a.py", "docs/x.md", "linked/b.py", "run"} <= {name for name, _ in by_paths}  # (sub/b.py: met through linked/ first)
