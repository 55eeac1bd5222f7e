"""The result cache: findings come back from it, and a change of any input is noticed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lintutil import run_cli

BAD = "from vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.98)\n"


def codes(result) -> list[tuple[str, str, int]]:
    return sorted((i["filename"].rsplit("/", 1)[-1], i["code"], i["location"]["row"]) for i in json.loads(result.stdout))


def cache_files(directory):
    return sorted(directory.glob("v*.json"))


def check(project, *args):
    return run_cli("check", "--output-format", "json", *args, str(project), cwd=project)


def test_findings_are_cached_and_served_from_the_cache(tmp_path):
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "clean.py").write_text("print('hi')\n", encoding="utf-8")
    first = check(tmp_path)
    assert first.returncode == 1
    [cache] = cache_files(tmp_path / ".vllm_lint_cache")
    assert (tmp_path / ".vllm_lint_cache" / "CACHEDIR.TAG").is_file()
    assert (tmp_path / ".vllm_lint_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    document = json.loads(cache.read_text())
    stored = document["files"]
    assert {key.rsplit("/", 1)[-1] for key in stored} == {"bad.py", "clean.py"}
    # Each distinct result is kept once; an entry names it by its index.
    assert len(document["results"]) == 2 and {entry[4] for entry in stored.values()} == {0, 1}
    # Prove the second run reads the cache: an entry edited by hand is what it reports.
    entry = stored[os.path.abspath(tmp_path / "bad.py")]
    document["results"][entry[4]]["diagnostics"][0]["message"] = "served from the cache"
    os.utime(tmp_path / "bad.py", (0, 0))  # an old mtime: the stat shortcut may be trusted...
    entry[1] = os.stat(tmp_path / "bad.py").st_mtime_ns  # ...once the entry records it
    cache.write_text(json.dumps(document))
    second = check(tmp_path)
    assert codes(second) == codes(first)
    assert "served from the cache" in {i["message"] for i in json.loads(second.stdout)}


def test_a_changed_file_is_linted_again_even_with_the_same_size_and_mtime(tmp_path):
    target = tmp_path / "app.py"
    target.write_text(BAD, encoding="utf-8")
    assert codes(check(tmp_path)) == [("app.py", "VLL202", 2), ("app.py", "VLL203", 2)]
    stat = target.stat()
    # Same length, same mtime: only the content hash can tell (the "racily clean" case).
    target.write_text(BAD.replace("0.98", "0.50"), encoding="utf-8")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert codes(check(tmp_path)) == [("app.py", "VLL203", 2)]


def test_settings_and_no_cache_and_cache_dir(tmp_path):
    (tmp_path / "app.py").write_text(BAD, encoding="utf-8")
    check(tmp_path)
    check(tmp_path, "--select", "VLL202")
    assert len(cache_files(tmp_path / ".vllm_lint_cache")) == 2  # one per effective settings
    assert codes(check(tmp_path, "--select", "VLL203")) == [("app.py", "VLL203", 2)]
    elsewhere = tmp_path / "elsewhere"
    check(tmp_path, "--cache-dir", str(elsewhere))
    assert len(cache_files(elsewhere)) == 1
    other = tmp_path.parent / f"{tmp_path.name}-nocache"
    other.mkdir()
    (other / "app.py").write_text(BAD, encoding="utf-8")
    assert check(other, "--no-cache").returncode == 1
    assert not (other / ".vllm_lint_cache").exists()


def test_a_corrupt_or_hostile_cache_is_ignored(tmp_path):
    (tmp_path / "app.py").write_text(BAD, encoding="utf-8")
    expected = codes(check(tmp_path))
    [cache] = cache_files(tmp_path / ".vllm_lint_cache")
    for content in (b"\x00\xff not json", b'{"files": {"x": [1, 2]}}', b'{"files": []}', b"[]"):
        cache.write_bytes(content)
        result = check(tmp_path)
        assert codes(result) == expected
        assert "Traceback" not in result.stderr


def test_a_read_only_cache_directory_does_not_stop_the_run(tmp_path):
    (tmp_path / "app.py").write_text(BAD, encoding="utf-8")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    result = check(tmp_path, "--cache-dir", str(blocker / "cache"))
    assert result.returncode == 1
    assert codes(result) == [("app.py", "VLL202", 2), ("app.py", "VLL203", 2)]


def test_the_build_fingerprint_covers_every_package(tmp_path, monkeypatch):
    """A change to any module of the linter (a rule, the pre-filter, a surface) must invalidate cached results."""
    from vllm_lint.engine import cache

    seen = []
    real = cache._source_files
    monkeypatch.setattr(cache, "_source_files", lambda folder: seen.append(folder) or real(folder))
    cache._build_fingerprint()
    import vllm_lint

    assert str(Path(vllm_lint.__file__).resolve().parent) in seen


def test_an_installed_wheel_is_fingerprinted_by_its_record(tmp_path):
    """A wheel's install is told apart by the RECORD its installer wrote (every file with its hash); a tree
    without one (a checkout, an editable install) by its files, so that editing a rule there counts too."""
    from vllm_lint import __version__
    from vllm_lint.engine import cache

    package = tmp_path / "site-packages" / "vllm_lint"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    rule = package / "rule.yaml"
    rule.write_text("code: VLL101\n", encoding="utf-8")
    checkout = cache._build_fingerprint(str(package))
    rule.write_text("code: VLL102\n", encoding="utf-8")  # a developer edits a rule: same size, a new mtime
    os.utime(rule, ns=(0, 10**9))
    edited = cache._build_fingerprint(str(package))
    assert edited != checkout

    record = tmp_path / "site-packages" / f"vllm_lint-{__version__}.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("vllm_lint/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n", encoding="utf-8")
    installed = cache._build_fingerprint(str(package))
    assert installed != edited
    rule.write_text("code: VLL103\n", encoding="utf-8")
    assert cache._build_fingerprint(str(package)) == installed  # the files are not looked at: RECORD says it all
    record.write_text(record.read_text() + "vllm_lint/rule.yaml,sha256=abc,13\n", encoding="utf-8")  # another install
    assert cache._build_fingerprint(str(package)) not in (installed, edited)
    record.write_text("other_package/__init__.py,sha256=x,0\n", encoding="utf-8")  # not this package's RECORD
    foreign = cache._build_fingerprint(str(package))
    record.unlink()
    assert foreign == cache._build_fingerprint(str(package))  # the files decide, as in a checkout


def test_a_warm_run_gives_what_a_cold_one_gives(tmp_path):
    """Files answered from the cache across folders with their own pins give what linting them gives, and a
    changed pin is noticed though no linted file changed."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("vllm==0.6.3\n", encoding="utf-8")
    # vllm.utils defined FlexibleArgumentParser in 0.6.3; newer releases moved it (VLL303 there)
    for folder in ("a", "a/b", "c"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "serve.py").write_text("from vllm.utils import FlexibleArgumentParser\n" + BAD, encoding="utf-8")
    (tmp_path / "c" / "requirements.txt").write_text("vllm\n", encoding="utf-8")  # unpinned: the newest release

    def moved(output) -> set[str]:
        return {os.path.relpath(item["filename"], tmp_path) for item in json.loads(output.stdout) if item["code"] == "VLL303"}

    cold = check(tmp_path, "--no-cache")
    assert moved(cold) == {os.path.join("c", "serve.py")}
    first, warm = check(tmp_path), check(tmp_path)
    assert json.loads(cold.stdout) == json.loads(first.stdout) == json.loads(warm.stdout)
    (tmp_path / "c" / "requirements.txt").write_text("vllm==0.6.3\n", encoding="utf-8")
    again = check(tmp_path)
    assert moved(again) == set()
    assert json.loads(again.stdout) == json.loads(check(tmp_path, "--no-cache").stdout)


def test_files_with_the_same_result_share_one_stored_result(tmp_path):
    """Most files of a tree have the same result (no finding, one target): it is stored once, and a run that
    relints one file keeps every other file's entry as it was."""
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("import vllm\nprint(vllm)\n", encoding="utf-8")
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    first = check(tmp_path)
    [cache] = cache_files(tmp_path / ".vllm_lint_cache")
    document = json.loads(cache.read_text())
    assert len(document["files"]) == 4 and len(document["results"]) == 2
    (tmp_path / "bad.py").write_text(BAD.replace("0.98", "0.5"), encoding="utf-8")  # one finding less
    second = check(tmp_path)
    assert codes(second) == [("bad.py", "VLL203", 2)] != codes(first)
    document = json.loads(cache.read_text())
    assert len(document["files"]) == 4 and len(document["results"]) == 2
    assert json.loads(check(tmp_path).stdout) == json.loads(second.stdout) == json.loads(check(tmp_path, "--no-cache").stdout)
