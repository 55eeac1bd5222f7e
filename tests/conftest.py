"""Fixtures shared by the top-level tests; helpers live in lintutil.py, input files in fixture_files.py,
snapshot files in snapshot.py."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fixture_files import REPO
from serverutil import REQUIRE_ENV
from snapshot import UPDATE_OPTION, Snapshots


RULE_OPTION = "--rule"
# What `--rule VLLnnn` runs: the rule's own cases (its examples, fixes, pre-filter recall, listed surfaces) and the
# checks over the whole catalogue (registry, generated files, rule pages), not the other rules' cases.
RULE_TEST_FILES = frozenset({
    "test_rule_examples.py", "test_rule_example_files.py", "test_registry.py", "test_prefilter_recall.py",
    "test_generated_docs.py", "test_rule_command.py",
})
_CODE = re.compile(r"VLL\d{3}", re.IGNORECASE)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(UPDATE_OPTION, action="store_true",
                     help="write this run's output into the snapshot files under tests/snapshots/ (and remove "
                          "those no case makes) instead of failing where they differ")
    parser.addoption(RULE_OPTION, metavar="VLLnnn",
                     help="run one rule's tests and the catalogue checks (what CONTRIBUTING.md asks of a new rule)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption(RULE_OPTION) and collection_path.suffix == ".py":
        return collection_path.name not in RULE_TEST_FILES or collection_path.parent != Path(__file__).parent
    return None


# What the linter imports only when a file needs it. The engine lints each such file in a forked child
# (engine/workers.py), which inherits what this process has loaded and loses what it loads itself: without these,
# every test that lints a file paid the import of LibCST, tree-sitter and the rule modules again in a child (0.4 s of
# a test's 0.5 s; most of the fast lane). The packages of the servers and the agent files are left to their tests.
_LAZY_ELSEWHERE = ("vllm_lint.lsp", "vllm_lint.mcp_server", "vllm_lint.reference", "vllm_lint.agent_", "vllm_lint.__main__")
_LAZY_THIRD_PARTY = ("libcst.native", "tree_sitter_bash", "importlib.resources")


@pytest.fixture(scope="session", autouse=True)
def _linting_modules_loaded() -> None:
    import importlib
    import pkgutil

    import vllm_lint

    for module in pkgutil.walk_packages(vllm_lint.__path__, "vllm_lint."):
        if not module.name.startswith(_LAZY_ELSEWHERE):
            importlib.import_module(module.name)
    for name in _LAZY_THIRD_PARTY:
        importlib.import_module(name)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test on the session's tiny model starts a vLLM engine: it is marked ``engine`` (as
    tests/robustness/test_server_faults.py is by hand), so that .ci/run runs those apart from the rest (`-m "not engine"`),
    mostly one after the other (tests/README.md).
    With ``--rule VLLnnn``, only that rule's cases and the catalogue checks are kept."""
    for item in items:
        if "tiny_model_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)
    code = config.getoption(RULE_OPTION)
    if not code:
        return
    if not _CODE.fullmatch(code):
        raise pytest.UsageError(f"{RULE_OPTION} {code}: a rule code is VLL and three digits")
    kept, deselected = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        named = {found.upper() for found in _CODE.findall(callspec.id)} if callspec is not None else set()
        (kept if not named or code.upper() in named else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """The session's tiny model (size S: vllm_lint/reference/tiny_model.py), built once for every test and server
    fixture that starts vLLM on it (the reference server's live tests, its fault tests, validate's)."""
    from serverutil import require_modules

    require_modules("torch", "transformers", "tokenizers", what="the tiny model")
    from vllm_lint.reference.tiny_model import build

    return build(tmp_path_factory.mktemp("tiny-model-S"), size="S")


# The modules of the server and frameworks extras (pyproject.toml), by the extra that installs them. A test that
# needs one skips with the install to do when it is absent (CONTRIBUTING's setup installs the test extra only),
# unless VLLM_LINT_REQUIRE_SERVER_TESTS is set, as in CI, where that is a failure.
OPTIONAL_MODULES = {
    **dict.fromkeys(["fastapi", "uvicorn", "httpx", "openai", "psutil", "matplotlib", "flask", "django", "grpc",
                     "google.protobuf", "websockets"], "server"),
    **dict.fromkeys(["gradio", "gradio_client", "bentoml", "litserve", "ray"], "frameworks"),
}


def _skip_for_a_missing_extra(error: ModuleNotFoundError) -> None:
    name = error.name or ""
    module = next((m for m in OPTIONAL_MODULES if name == m or name.startswith(m + ".")), None)
    if module is None or os.environ.get(REQUIRE_ENV):
        return
    pytest.skip(f"needs {module}, from the {OPTIONAL_MODULES[module]} extra: pip install -e '.[server,frameworks]'")


def _skipping_for_missing_extras(item: pytest.Item):
    try:
        return (yield)
    except ModuleNotFoundError as error:
        _skip_for_a_missing_extra(error)
        raise


# In a fixture (setup) or in the test itself (call).
pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_skipping_for_missing_extras)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_skipping_for_missing_extras)


@pytest.fixture(autouse=True, scope="session")
def _own_user_cache(tmp_path_factory):
    """vllm-lint keeps compiled dataclass code and parsed rules in the user's cache folder (usercache.py):
    the suite, and every vllm-lint it starts, uses a folder of its own, so it neither reads a developer's
    stores nor leaves files in them."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session")
def offline_pip(tmp_path_factory) -> dict[str, str]:
    """The environment variables that make pip install offline, from a wheelhouse repacked once for the session
    (``offline_pip.py``): the tests that install vllm-lint as a user does (the release, pre-commit, the Action) only
    read it."""
    from offline_pip import offline_pip_env

    return offline_pip_env(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture
def snapshots(request: pytest.FixtureRequest) -> Snapshots:
    return Snapshots(update=request.config.getoption(UPDATE_OPTION), source=request.path.relative_to(REPO).as_posix())
