"""``extend`` (another configuration file beneath this one) and ``extend-per-file-ignores``, as in ruff."""

from __future__ import annotations

import json
import textwrap

import pytest

from lintutil import run_cli
from vllm_lint.config import ConfigError, load_settings
from vllm_lint.rulebook import all_codes


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


BAD = 'from vllm import LLM\nllm = LLM(model="m", gpu_memory_utilization=0.99)\n'


def test_a_file_extends_another_and_sets_keys_over_it(tmp_path):
    write(
        tmp_path / "base.toml",
        textwrap.dedent("""\
        ignore = ["VLL203"]
        extend-select = ["VLL1"]
        extend-exclude = ["generated"]
        per-file-ignores = {"legacy/*.py" = ["VLL202"]}
        fix-max-model-len = 4096
        """),
    )
    config = write(
        tmp_path / "project" / "pyproject.toml",
        textwrap.dedent("""\
        [tool.vllm-lint]
        extend = "../base.toml"
        fix-max-model-len = 2048
        extend-select = ["VLL2"]
        extend-exclude = ["build"]
        extend-per-file-ignores = {"scripts/*.py" = ["VLL201"]}
        """),
    )
    settings = load_settings(config, all_codes())
    assert settings.source == config
    assert settings.root == config.parent.resolve()
    assert settings.ignore == ("VLL203",)
    assert settings.fix_max_model_len == 2048
    assert settings.extend_select == ("VLL1", "VLL2")
    assert settings.extend_exclude == ("generated", "build")
    assert settings.per_file_ignores == (("legacy/*.py", ("VLL202",)), ("scripts/*.py", ("VLL201",)))


def test_extend_per_file_ignores_adds_to_per_file_ignores_in_a_run(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        textwrap.dedent("""\
        [tool.vllm-lint]
        per-file-ignores = {"legacy/*.py" = ["VLL202"]}
        extend-per-file-ignores = {"legacy/*.py" = ["VLL203"], "tools/*.py" = ["VLL2"]}
        """),
    )
    for name in ("app.py", "legacy/old.py", "tools/run.py"):
        write(tmp_path / name, BAD)
    result = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    found = sorted((item["filename"], item["code"]) for item in json.loads(result.stdout))
    assert found == [("app.py", "VLL202"), ("app.py", "VLL203")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('extend = "missing.toml"\n', "`extend`: {root}/missing.toml not found"),
        ("extend = 3\n", "`extend` must be the path of another configuration file"),
        ('extend = "vllm-lint.toml"\n', "`extend` makes a loop through {root}/vllm-lint.toml"),
        ('extend = "other.toml"\n', "`extend` makes a loop through {root}/vllm-lint.toml"),
        (
            'extend-per-file-ignores = {"a/*.py" = ["VLL9"]}\n',
            "`extend-per-file-ignores.a/*.py`: unknown rule code or prefix 'VLL9'",
        ),
    ],
)
def test_a_broken_extend_is_an_error(tmp_path, text, message):
    config = write(tmp_path / "vllm-lint.toml", text)
    write(tmp_path / "other.toml", 'extend = "vllm-lint.toml"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(config, all_codes())
    assert message.format(root=tmp_path.resolve()) in str(error.value)
