"""Fixtures shared by the top-level tests; helpers live in lintutil.py, input files in fixture_files.py,
snapshot files in snapshot.py."""

from __future__ import annotations

import os

import pytest

from fixture_files import REPO
from snapshot import UPDATE_OPTION, Snapshots


# The pytest-xdist group of the tests that start a vLLM engine (see pytest_collection_modifyitems).
ENGINE_GROUP = "vllm-engine"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist's ``--dist loadgroup`` (.ci/run), the tests that start a vLLM engine (those on the
    session's tiny model; tests/robustness/test_server_faults.py joins the group by its own mark) run in one
    worker, one after the other: two engines started at once would fight for the machine's cores, and the tiny
    model and the shared reference server are made once, in that worker. The other tests share out over every
    worker."""
    for item in items:
        if "tiny_model_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(ENGINE_GROUP))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(UPDATE_OPTION, action="store_true",
                     help="write this run's output into the snapshot files under tests/snapshots/ (and remove "
                          "those no case makes) instead of failing where they differ")


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


@pytest.fixture
def snapshots(request: pytest.FixtureRequest) -> Snapshots:
    return Snapshots(update=request.config.getoption(UPDATE_OPTION), source=request.path.relative_to(REPO).as_posix())
