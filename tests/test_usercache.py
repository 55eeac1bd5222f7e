"""The user's marshal stores: dataclass code (codecache.py) and parsed rule files (rulebook.py). Classes
defined through the code store behave exactly as without it; rules read through the store are the rules
the YAML says, and a changed file is read again; a missing, corrupt or unwritable store only costs the
work it saves."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_files import SEEDS
from seed_table import TABLE
from vllm_lint import codecache, rulebook, usercache

ROOT = Path(__file__).resolve().parent.parent
SEED_WITH_FINDINGS = "004_server.py"

# Defined by exec so that each test defines the class afresh, as an import would.
CLASS_SOURCE = """
import dataclasses

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: "list[int]" = dataclasses.field(default_factory=list)
"""


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("VLLM_LINT_NO_USER_CACHE", raising=False)
    monkeypatch.setattr(usercache, "_stores", {})
    return tmp_path


def _define(cache_name: str | None) -> type:
    namespace: dict = {}
    # dont_inherit: define the class as a module without __future__ imports would, not as this one.
    code = compile(CLASS_SOURCE, "<points>", "exec", dont_inherit=True)
    if cache_name is None:
        exec(code, namespace)
    else:
        with codecache.compiled_dataclasses(cache_name):
            exec(code, namespace)
    return namespace["Point"]


def _cache_files(home: Path, prefix: str = "dataclass-code-") -> list[Path]:
    return sorted((home / "vllm-lint" / "marshal").glob(f"{prefix}*.marshal"))


def _store_name(path: Path) -> str:
    return path.name.split(".")[0].removeprefix("dataclass-code-")


def _fresh_process() -> None:
    """What a new process sees: no store read yet, and no rule file either."""
    usercache._stores.clear()
    rulebook._load_rule_file.cache_clear()
    rulebook.load_rules.cache_clear()


def _identity(path: Path) -> tuple[int, int]:
    """Changes when a store is written again (a new file renamed over the old one)."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def _behaviour(point_class: type) -> tuple:
    a, b = point_class(1, [2]), point_class(1, [2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 3  # type: ignore[misc]
    return (
        repr(a),
        a == b,
        a < point_class(2),
        point_class(5).y,
        point_class.__init__.__annotations__,
        [f.name for f in dataclasses.fields(point_class)],
    )


def test_classes_defined_through_the_cache_behave_as_without_it(cache_home: Path) -> None:
    plain = _behaviour(_define(None))
    first = _behaviour(_define("unit"))  # compiles and writes the cache file
    (path,) = _cache_files(cache_home)
    written = _identity(path)
    _fresh_process()
    second = _behaviour(_define("unit"))  # every method comes from the file: nothing new to write
    assert _identity(path) == written
    assert len(usercache.store("dataclass-code-unit")._used) >= 4  # __init__, __repr__, __eq__, order...
    # The annotations are the fields' types: the `from __future__ import annotations` of the module that
    # compiles must not leak into the compiled code (it would make them the strings "_type_x"...).
    assert plain == first == second
    assert plain[4] == {"x": int, "y": "list[int]", "return": None}


def test_dataclasses_is_left_as_it_was(cache_home: Path) -> None:
    with codecache.compiled_dataclasses("outer"):
        outer = dataclasses.exec  # type: ignore[attr-defined]
        with codecache.compiled_dataclasses("inner"):
            assert dataclasses.exec is not outer  # type: ignore[attr-defined]
            _define(None)
        assert dataclasses.exec == outer  # type: ignore[attr-defined]
    assert "exec" not in vars(dataclasses)
    with pytest.raises(RuntimeError), codecache.compiled_dataclasses("failing"):
        raise RuntimeError("an import failed")
    assert "exec" not in vars(dataclasses)
    # Each cache keeps what was defined under it.
    assert [_store_name(p) for p in _cache_files(cache_home)] == ["inner"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the workers fork only where os.fork exists")
def test_a_forked_worker_keeps_what_it_compiles_in_its_parents_store(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker (engine/workers.py) is forked inside the store its parent entered and ends with os._exit,
    never leaving it: the classes it defines are still kept for the next run."""
    with codecache.compiled_dataclasses("forked"):
        pid = os.fork()
        if pid == 0:  # the child: define the class, then end as a worker does
            code = 1
            try:
                exec(compile(CLASS_SOURCE, "<points>", "exec", dont_inherit=True), {})
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        [store] = _cache_files(cache_home)
        written = _identity(store)
    # The parent compiled nothing: leaving the context leaves the child's store as it wrote it.
    assert _identity(store) == written
    _fresh_process()
    compiled: list[tuple] = []
    # codecache calls compile() for each method's source it does not have.
    monkeypatch.setattr(codecache, "compile", lambda *args, **kwargs: compiled.append(args) or compile(*args, **kwargs), raising=False)
    _define("forked")
    assert compiled == []  # every method's code came from the store the child wrote


def test_a_corrupt_cache_file_is_replaced(cache_home: Path) -> None:
    _define("unit")
    (path,) = _cache_files(cache_home)
    path.write_bytes(b"\x00not marshal data")
    _fresh_process()
    assert _behaviour(_define("unit")) == _behaviour(_define(None))
    rewritten = _identity(path)
    _fresh_process()
    _define("unit")
    assert _identity(path) == rewritten


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_an_unwritable_cache_folder_costs_only_compiling(cache_home: Path) -> None:
    cache_home.chmod(0o500)
    try:
        assert _behaviour(_define("unit")) == _behaviour(_define(None))
    finally:
        cache_home.chmod(0o700)
    assert _cache_files(cache_home) == []


def test_a_cache_folder_that_is_a_file_costs_only_compiling(cache_home: Path) -> None:
    (cache_home / "vllm-lint").write_text("not a folder")
    assert _behaviour(_define("unit")) == _behaviour(_define(None))
    assert list(cache_home.glob("vllm-lint*")) == [cache_home / "vllm-lint"]
    assert not list(cache_home.glob(".*.tmp"))


def test_the_cache_can_be_turned_off(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_LINT_NO_USER_CACHE", "1")
    _define("unit")
    assert _cache_files(cache_home) == []


def test_check_runs_the_same_with_a_cold_and_a_warm_code_cache(tmp_path: Path) -> None:
    # Run in the seeds' folder (a seed named through tests/ is a test file) with this checkout's vllm_lint.
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("VLLM_LINT_NO_USER_CACHE", None)
    command = [sys.executable, "-m", "vllm_lint", "check", "--no-cache", "--output-format", "json", SEED_WITH_FINDINGS]
    cold = subprocess.run(command, capture_output=True, text=True, env=env, cwd=SEEDS)
    names = sorted(_store_name(p) for p in _cache_files(tmp_path))
    # The command's, the Python rules', the server rewrite's (a server rule fired: VLL103), the surface's.
    assert names == ["check", "rules-python", "server-rewrite", "surface-python"]
    assert _cache_files(tmp_path, "rule-files")  # the rules of the findings: their severities
    warm = subprocess.run(command, capture_output=True, text=True, env=env, cwd=SEEDS)
    assert cold.returncode == warm.returncode == 1
    assert cold.stdout == warm.stdout
    assert [item["code"] for item in json.loads(warm.stdout)] == [code for code, *_ in TABLE[SEED_WITH_FINDINGS]]
    assert warm.stderr == cold.stderr == ""


def _copy_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codes: tuple[str, ...]) -> Path:
    from vllm_lint.resources import rules_dir

    folder = tmp_path / "rules"
    folder.mkdir()
    for code in codes:
        (folder / f"{code}.yaml").write_bytes((rules_dir() / f"{code}.yaml").read_bytes())
    monkeypatch.setattr(rulebook, "rules_dir", lambda: folder)
    _fresh_process()
    return folder


def test_rules_read_through_the_store_are_the_yaml_files_rules(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    folder = _copy_rules(cache_home, monkeypatch, ("VLL101", "VLL301"))
    from_yaml = rulebook.rule_for("VLL301")
    assert _cache_files(cache_home, "rule-files")
    _fresh_process()
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed the YAML again"))
    assert rulebook.rule_for("VLL301") == from_yaml
    assert rulebook.severity_of("VLL301", rulebook.Severity.INFO) == from_yaml.severity
    assert from_yaml.severity.value in (folder / "VLL301.yaml").read_text()


def test_a_finding_s_rule_head_is_read_without_the_rule_s_own_store(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Severity, fix title and directive come from one small store of every rule's head; the rule's own store
    (its docs and examples, up to 200 kB) is read only where the whole rule is asked for."""
    from vllm_lint.resources import rules_dir

    codes = tuple(path.stem for path in sorted(rules_dir().glob("VLL*.yaml")))
    _copy_rules(cache_home, monkeypatch, codes)
    rules = {code: rulebook.rule_for(code) for code in codes}
    _fresh_process()
    heads = {code: rulebook.rule_head(code) for code in codes}  # derived once from each whole rule
    assert heads == {code: rulebook.RuleHead(rule.severity, rule.fix_title, rule.directive) for code, rule in rules.items()}
    _fresh_process()
    monkeypatch.setattr(rulebook, "_load_rule_file", lambda path: pytest.fail(f"read the whole rule {path.name}"))
    assert {code: rulebook.rule_head(code) for code in codes} == heads
    assert rulebook.severity_of("VLL103", rulebook.Severity.INFO) == rules["VLL103"].severity
    assert not any(name.startswith("rule-files") for name in usercache._stores)
    assert rulebook.rule_head("VLL999") is None


def test_an_edited_rule_file_gives_its_new_head(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_rules(cache_home, monkeypatch, ("VLL301",))
    before = rulebook.rule_head("VLL301")
    text = (folder / "VLL301.yaml").read_text()
    other = "info" if before.severity.value != "info" else "warning"
    (folder / "VLL301.yaml").write_text(text.replace(f"severity: {before.severity.value}", f"severity: {other}"))
    os.utime(folder / "VLL301.yaml", ns=(1, 1))
    _fresh_process()
    assert rulebook.rule_head("VLL301").severity.value == other


def test_an_edited_rule_file_is_read_again(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_rules(cache_home, monkeypatch, ("VLL301",))
    before = rulebook.rule_for("VLL301")
    text = (folder / "VLL301.yaml").read_text()
    assert f"severity: {before.severity.value}" in text
    other = "info" if before.severity.value != "info" else "warning"
    (folder / "VLL301.yaml").write_text(text.replace(f"severity: {before.severity.value}", f"severity: {other}"))
    os.utime(folder / "VLL301.yaml", ns=(1, 1))  # a different mtime even within the clock's resolution
    _fresh_process()
    assert rulebook.rule_for("VLL301").severity.value == other


def test_the_vllm_api_database_read_through_the_store_answers_as_the_json_file(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from vllm_lint.vllm_api import VllmApi, database
    from vllm_lint.vllm_api.versionsets import from_ranges

    path = database.vllm_api_dir() / database.FILE_NAME
    raw = json.loads(path.read_text(encoding="utf-8"))
    newest = 1 << (len(raw["versions"]) - 1)
    first = VllmApi(database.Database(database._read(path)), newest)  # parses the JSON, writes the store
    assert _cache_files(cache_home, "vllm-api-")
    _fresh_process()
    monkeypatch.setattr(json, "load", lambda *a, **k: pytest.fail("parsed the JSON again"))
    second = VllmApi(database.Database(database._read(path)), newest)
    in_newest = sorted(module for module, entry in raw["modules"].items() if from_ranges(entry["in"]) & newest)
    for api in (first, second):
        assert api.modules == frozenset(in_newest)
        for module in ("vllm", "vllm.engine.async_llm_engine", in_newest[-1]):
            entry = raw["modules"][module]
            names, is_open = api.module_names(module)
            expected = {n for ranges, group in entry["names"].items() if from_ranges(ranges) & newest for n in group.split()}
            assert names == frozenset(expected) | frozenset(raw["implicit_module_names"])
            assert is_open == bool(from_ranges(entry.get("open", "")) & newest)
        assert api.module_names("vllm.no_such_module") is None
        sampling = raw["keywords"]["sampling_params"]
        assert api.sampling_params == {n for ranges, group in sampling.items() if from_ranges(ranges) & newest for n in group.split()}
        in_serve = [flag["dest"] for flag in raw["flags"] if from_ranges(flag.get("serve", "")) & newest]
        assert sorted(flag.dest for flag in api.serve_flags) == sorted(in_serve)


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from vllm_lint.resources import user_cache_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", ".cache")  # would put the cache inside the project being linted
    assert user_cache_dir() == tmp_path / ".cache" / "vllm-lint"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "vllm-lint"


def test_a_store_others_can_write_is_not_loaded(cache_home: Path) -> None:
    _define("unit")
    (path,) = _cache_files(cache_home)
    path.chmod(0o666)
    shared = _identity(path)
    _fresh_process()
    _define("unit")  # compiles again: the store is not loaded, and is replaced by one of the user's own
    assert _identity(path) != shared and path.stat().st_mode & 0o022 == 0
    own = _identity(path)
    _fresh_process()
    _define("unit")
    assert _identity(path) == own


def test_a_stored_value_that_is_not_code_is_compiled_instead(cache_home: Path) -> None:
    _define("unit")
    code = usercache.store("dataclass-code-unit")
    for source in list(code._values):
        code._values[source] = "not code"
    assert _behaviour(_define("unit")) == _behaviour(_define(None))


def test_keep_only_holds_one_value(cache_home: Path) -> None:
    single = usercache.store("single")
    single.put("a", 1)
    single.keep_only("b", 2)
    single.save()
    _fresh_process()
    assert usercache.store("single").get("a") is None and usercache.store("single").get("b") == 2


def test_stores_are_written_for_the_user_alone_whatever_the_umask(cache_home: Path) -> None:
    before = os.umask(0o002)  # group-writable files by default, as on some distributions
    try:
        _define("unit")
    finally:
        os.umask(before)
    (path,) = _cache_files(cache_home)
    assert path.stat().st_mode & 0o077 == 0
    written = _identity(path)
    _fresh_process()
    _define("unit")
    assert _identity(path) == written  # loaded, not rejected


def test_a_store_mostly_of_entries_no_run_asks_for_is_pruned(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What older builds left (the dataclass code of classes since changed) is read by every run and never used.
    monkeypatch.setattr(usercache, "_PRUNED_BYTES", 1000)
    old = usercache.store("pruning")
    for number in range(100):
        old.put(f"an older build's source {number}", "x" * 50)
    old.put("kept", "still asked for")
    old.save()
    big = usercache._store_path("pruning").stat().st_size
    monkeypatch.setattr(usercache, "_stores", {})
    run = usercache.store("pruning")
    assert run.get("kept") == "still asked for"
    run.save()  # nothing changed, but the store is mostly unused: rewritten with what this run asked for
    assert usercache._store_path("pruning").stat().st_size < big / 10
    monkeypatch.setattr(usercache, "_stores", {})
    assert usercache.store("pruning").get("kept") == "still asked for"
    assert usercache.store("pruning").get("an older build's source 3") is None

    monkeypatch.setattr(usercache, "_stores", {})
    idle = usercache.store("pruning")
    for number in range(8):
        idle.put(f"entry {number}", "y" * 200)
    idle.save()
    monkeypatch.setattr(usercache, "_stores", {})
    unused = usercache.store("pruning")
    unused.save()  # a process that asked for nothing cannot tell what is stale: left as it is
    monkeypatch.setattr(usercache, "_stores", {})
    assert usercache.store("pruning").get("entry 7") == "y" * 200
