"""Each file is judged by the vLLM release it runs.

The facts are read off the released wheels (``pip download --no-deps vllm==X``, the files named in each
case); the database that ``tools/vllm_api/refresh.py`` built from them must agree, and the rules must
follow a project's pin: names the pinned release has are not reported, the same files unpinned report
each removed name with the release it went in, a name no release had is still reported, and the
configuration's setting overrides what the project pins.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_lint.config import Settings, enabled_codes
from vllm_lint.engine.runner import RunOptions
from vllm_lint.rulebook import all_codes
from vllm_lint.vllm_api import load_api
from vllm_lint.vllm_api.history import flag_fate, keyword_fate, module_fate
from vllm_lint.vllm_api.targets import forget_project_files

from vllm_lint.engine.run import Run

from lintutil import run_cli

# --- the database against the wheels ------------------------------------------------------


def test_every_minor_release_from_0_6_to_0_33_has_an_entry() -> None:
    database = load_api().database
    minors = {tuple(int(p) for p in version.split(".")[:2]) for version in database.versions}
    assert minors == {(0, minor) for minor in range(6, 34)}
    # every release on the index from 0.6.0 to 0.33.0 maps to the entry with its API
    assert {"0.6.0", "0.6.3.post1", "0.8.5.post1", "0.10.1.1", "0.33.0"} <= set(database.releases)
    assert database.versions[-1] == "0.33.0"


@pytest.mark.parametrize(
    ("option", "last", "gone"),
    [
        # vllm/engine/arg_utils.py, AsyncEngineArgs.add_cli_args: `--disable-log-requests` in 0.16.0, not in 0.17.0
        ("--disable-log-requests", "0.16.0", "0.17.0"),
        # vllm/engine/arg_utils.py: `--swap-space` (CacheConfig.swap_space) in 0.17.1, not in 0.18.0
        ("--swap-space", "0.17.1", "0.18.0"),
    ],
)
def test_flags_removed_in_the_release_the_wheels_say(option: str, last: str, gone: str) -> None:
    assert flag_fate(load_api(last), option) is None
    assert flag_fate(load_api("0.6.3"), option) is None
    fate = flag_fate(load_api(), option)
    assert (fate.status, fate.release) == ("removed", gone)
    assert flag_fate(load_api(gone), option).release == gone


def test_sampling_params_best_of() -> None:
    # vllm/sampling_params.py: SamplingParams.best_of in 0.11.2, not in 0.12.0
    assert keyword_fate(load_api("0.11.2"), "sampling_params", "best_of") is None
    fate = keyword_fate(load_api(), "sampling_params", "best_of")
    assert (fate.status, fate.release) == ("removed", "0.12.0")


def test_modules_and_their_names() -> None:
    # vllm/entrypoints/launcher.py is in the 0.28.0 wheel and not in 0.29.0's
    assert module_fate(load_api("0.28.0"), "vllm.entrypoints", "launcher") is None
    assert module_fate(load_api(), "vllm.entrypoints", "launcher").release == "0.29.0"
    # vllm/utils.py defines FlexibleArgumentParser in 0.6.3; 0.33.0 has it in vllm/utils/argparse_utils.py only
    assert module_fate(load_api("0.6.3"), "vllm.utils", "FlexibleArgumentParser") is None
    assert module_fate(load_api(), "vllm.utils", "FlexibleArgumentParser").status == "removed"
    assert module_fate(load_api(), "vllm.utils.argparse_utils", "FlexibleArgumentParser") is None


def test_a_name_no_release_had_is_unknown() -> None:
    assert flag_fate(load_api(), "--max-batch-tokens").status == "unknown"
    assert flag_fate(load_api("0.6.3"), "--max-batch-tokens").status == "unknown"


def test_a_range_has_a_name_if_any_release_in_it_has_it() -> None:
    wide = load_api(">=0.6,<0.20")
    assert flag_fate(wide, "--disable-log-requests") is None  # 0.6.0-0.16.0 have it
    narrow = load_api(">=0.17,<0.20")
    fate = flag_fate(narrow, "--disable-log-requests")
    assert (fate.status, fate.release) == ("removed", "0.17.0")
    assert narrow.version == "0.19.1"  # the newest release in range is what removals are reported against


def test_the_image_entrypoint_of_each_release() -> None:
    # docker/Dockerfile (Dockerfile before 0.9) of each release's source distribution, stage vllm-openai
    assert load_api("0.33.0").image_entrypoints == {("vllm", "serve")}
    assert load_api("0.11.1").image_entrypoints == {("vllm", "serve")}  # docker/Dockerfile of 0.11.1, line 500
    assert load_api("0.11.0").image_entrypoints == {("python3", "-m", "vllm.entrypoints.openai.api_server")}  # line 542
    assert load_api("0.6.3").image_entrypoints == {("python3", "-m", "vllm.entrypoints.openai.api_server")}  # Dockerfile


# --- the rules follow the project's pin -----------------------------------------------------

SERVE_SH = "vllm serve m --disable-log-requests --swap-space 4 --max-model-len 8192 --gpu-memory-utilization 0.9\n"
SERVER_PY = (
    "from vllm import SamplingParams\n"
    "from vllm.utils import FlexibleArgumentParser\n"
    "params = SamplingParams(best_of=2, max_tokens=64)\n"
)


def _lint(root: Path, files: dict[str, str], select: tuple[str, ...] = ("VLL206", "VLL301", "VLL303"), **settings) -> list[tuple[str, int, str, str]]:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    forget_project_files()
    codes = all_codes()
    config = Settings(root=root.resolve(), **settings)
    options = RunOptions(config, enabled_codes(config, codes, select), codes)
    linted = [root / name for name in files if not name.endswith((".txt", ".toml", ".lock"))]
    return sorted(
        (Path(d.path).name, d.start.line, d.code, d.message) for result in Run(options).lint_paths(linted) for d in result.diagnostics
    )


@pytest.mark.parametrize(
    "pin",
    [
        {"requirements.txt": "vllm==0.6.3\n"},
        {"pyproject.toml": '[project]\nname = "app"\ndependencies = ["vllm>=0.6.3,<0.7"]\n'},
        {"uv.lock": 'version = 1\n[[package]]\nname = "vllm"\nversion = "0.8.5.post1"\n'},
    ],
)
def test_names_the_pinned_release_has_are_not_reported(tmp_path: Path, pin: dict[str, str]) -> None:
    assert _lint(tmp_path, {**pin, "serve.sh": SERVE_SH, "server.py": SERVER_PY}) == []


def test_the_same_files_unpinned_report_each_removed_name_with_its_release(tmp_path: Path) -> None:
    found = _lint(tmp_path, {"serve.sh": SERVE_SH, "server.py": SERVER_PY})
    newest = "this file targets 0.33.0, the newest release known"
    assert [(name, line, code) for name, line, code, _ in found] == [
        ("serve.sh", 1, "VLL206"),
        ("serve.sh", 1, "VLL206"),
        ("server.py", 2, "VLL303"),
        ("server.py", 3, "VLL301"),
    ]
    assert [message for *_, message in found] == [
        f"--disable-log-requests was removed in vLLM 0.17.0 ({newest}): vLLM exits with 'unrecognized arguments'; "
        "it only set what already was the default, so deleting it changes nothing",
        f"--swap-space was removed in vLLM 0.18.0 ({newest}): vLLM exits with 'unrecognized arguments'",
        # vllm/utils.py defines the class in 0.11.0; 0.11.1 has vllm/utils/ with it in argparse_utils.py
        f"vllm.utils.FlexibleArgumentParser was removed in vLLM 0.11.1 ({newest}): it fails with "
        "ImportError/AttributeError at run time; it is vllm.utils.argparse_utils.FlexibleArgumentParser now",
        f"SamplingParams keyword best_of was removed in vLLM 0.12.0 ({newest}): it raises TypeError on every "
        "request; use n and rank the outputs yourself",
    ]


def test_a_dockerfile_from_tag_pins_its_launch(tmp_path: Path) -> None:
    old = "FROM vllm/vllm-openai:v0.6.3\nCMD [\"--model\", \"m\", \"--disable-log-requests\", \"--max-model-len\", \"8192\"]\n"
    assert _lint(tmp_path, {"Dockerfile": old}, select=("VLL206", "VLL401")) == []
    new = old.replace("v0.6.3", "v0.33.0")
    found = _lint(tmp_path, {"Dockerfile": new}, select=("VLL206", "VLL401"))
    assert [(code, message.split(" (")[0]) for _, _, code, message in found] == [
        ("VLL206", "--disable-log-requests was removed in vLLM 0.17.0"),
        ("VLL401", "`--model` on `vllm serve` is deprecated: pass the model as the positional argument"),
    ]


def test_each_compose_service_is_judged_by_its_own_image(tmp_path: Path) -> None:
    compose = (
        "services:\n"
        "  old:\n"
        "    image: vllm/vllm-openai:v0.6.3\n"
        "    command: [\"--model\", \"m\", \"--disable-log-requests\"]\n"
        "  new:\n"
        "    image: vllm/vllm-openai:v0.33.0\n"
        "    command: [\"m\", \"--disable-log-requests\"]\n"
    )
    found = _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "compose.yaml": compose})
    assert [(line, code) for _, line, code, _ in found] == [(7, "VLL206")]
    assert "(its image vllm/vllm-openai:v0.33.0 runs 0.33.0)" in found[0][3]


def test_a_name_no_release_had_is_reported_on_a_pinned_project(tmp_path: Path) -> None:
    found = _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "serve.sh": "vllm serve m --max-batch-tokens 8\n"})
    assert [(code, message) for _, _, code, message in found] == [
        (
            "VLL206",
            "unknown engine argument --max-batch-tokens: vLLM does not have it; the engine fails at start-up; "
            "did you mean --max-num-batched-tokens?",
        )
    ]


def test_the_setting_overrides_what_the_project_pins(tmp_path: Path) -> None:
    files = {"requirements.txt": "vllm==0.6.3\n", "serve.sh": SERVE_SH}
    found = _lint(tmp_path, files, target_vllm_version="0.33")
    assert [message for *_, message in found] == [
        "--disable-log-requests was removed in vLLM 0.17.0 (this file targets 0.33): vLLM exits with 'unrecognized "
        "arguments'; it only set what already was the default, so deleting it changes nothing",
        "--swap-space was removed in vLLM 0.18.0 (this file targets 0.33): vLLM exits with 'unrecognized arguments'",
    ]


@pytest.mark.parametrize(
    ("config", "text"),
    [
        ("pyproject.toml", '[project]\nname = "app"\ndependencies = ["vllm==0.6.3"]\n[tool.vllm-lint]\ntarget-vllm-version = "0.33"\n'),
        ("vllm-lint.toml", 'target-vllm-version = "0.33"\n'),
    ],
)
def test_the_configuration_file_setting_overrides_what_the_project_pins(tmp_path: Path, config: str, text: str) -> None:
    files = {"requirements.txt": "vllm==0.6.3\n", config: text, "serve.sh": SERVE_SH}
    _lint(tmp_path, files)
    result = run_cli("check", "--select", "VLL206", "--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [item["message"].split(": ")[0] for item in json.loads(result.stdout)] == [
        "--disable-log-requests was removed in vLLM 0.17.0 (this file targets 0.33)",
        "--swap-space was removed in vLLM 0.18.0 (this file targets 0.33)",
    ]
    shown = run_cli("check", "--show-settings", ".", cwd=tmp_path)
    assert "serve.sh: vLLM 0.33 [0.33.0] (target-vllm-version setting)" in shown.stdout.splitlines()


def test_a_pin_older_than_the_database_reports_no_names(tmp_path: Path) -> None:
    assert _lint(tmp_path, {"requirements.txt": "vllm==0.4.2\n", "serve.sh": SERVE_SH, "server.py": SERVER_PY}) == []


def test_prefix_caching_off_by_default_follows_the_pin(tmp_path: Path) -> None:
    # vllm/engine/arg_utils.py: EngineArgs.enable_prefix_caching defaults to False in 0.6.3; None in 0.33.0
    llm = 'from vllm import LLM\nllm = LLM(model="m", gpu_memory_utilization=0.9, max_model_len=8192)\n'
    found = _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "offline.py": llm}, select=("VLL204",))
    assert [message.split(":")[0] for *_, message in found] == [
        "prefix caching is off by default in vLLM 0.6.3 (the release this file targets)"
    ]
    assert _lint(tmp_path / "unpinned", {"offline.py": llm}, select=("VLL204",)) == []


def test_vllm_lint_rule_and_the_agent_files_show_the_version_examples(tmp_path: Path) -> None:
    shown = run_cli("rule", "VLL206")
    assert shown.returncode == 0, shown.stderr
    assert "## By vLLM release" in shown.stdout
    assert "On vLLM 0.6.3 (not reported): vLLM 0.6.3 still has --disable-log-requests; it went in 0.17.0." in shown.stdout
    assert "On vLLM 0.33 (reported): Removed in 0.17.0" in shown.stdout
    # AGENTS.md keeps one line a rule (Codex reads 32 KiB of it); the files with each rule's detail show the notes.
    written = run_cli("init", "-t", "gemini", str(tmp_path))
    assert written.returncode == 0, written.stderr
    text = (tmp_path / "GEMINI.md").read_text(encoding="utf-8")
    assert "By vLLM release (the project's pinned vLLM decides): on vLLM 0.6.3, vLLM 0.6.3 still has --disable-log-requests" in text


def test_show_settings_says_which_target_applied_and_why(tmp_path: Path) -> None:
    _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "serve.sh": SERVE_SH, "docker/Dockerfile": "FROM vllm/vllm-openai:v0.9.2\n"})
    result = run_cli("check", "--show-settings", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("vLLM releases each file is judged against:")
    assert lines[start + 1 :] == [  # in the order the files are linted
        "serve.sh: vLLM 0.6.3 [0.6.3] (requirements.txt: vllm==0.6.3)",
        "docker/Dockerfile: vLLM 0.9.2 [0.9.2] (Dockerfile: image vllm/vllm-openai:v0.9.2)",
    ]


def test_the_upgrade_check_lists_what_breaks(tmp_path: Path) -> None:
    _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "serve.sh": SERVE_SH})
    pinned = run_cli("check", "--select", "VLL206", "--output-format", "json", ".", cwd=tmp_path)
    assert pinned.returncode == 0 and json.loads(pinned.stdout) == []
    upgrade = run_cli("check", "--select", "VLL206", "--output-format", "json", "--target-vllm-version", "0.33", ".", cwd=tmp_path)
    assert upgrade.returncode == 1
    assert [item["message"].split(" (")[0] for item in json.loads(upgrade.stdout)] == [
        "--disable-log-requests was removed in vLLM 0.17.0",
        "--swap-space was removed in vLLM 0.18.0",
    ]


def test_a_changed_pin_is_not_answered_from_the_result_cache(tmp_path: Path) -> None:
    _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "serve.sh": SERVE_SH})
    first = run_cli("check", "--select", "VLL206", "--output-format", "json", ".", cwd=tmp_path)
    assert json.loads(first.stdout) == []
    (tmp_path / "requirements.txt").write_text("vllm==0.33.0\n", encoding="utf-8")
    second = run_cli("check", "--select", "VLL206", "--output-format", "json", ".", cwd=tmp_path)
    assert len(json.loads(second.stdout)) == 2


def test_a_dockerfile_that_does_not_name_vllm_is_relinted_when_the_pin_changes(tmp_path: Path) -> None:
    # Only the ENTRYPOINT script names vLLM; CMD's --disable-log-requests is judged by requirements.txt's pin.
    files = {
        "requirements.txt": "vllm==0.6.3\n",
        "Dockerfile": 'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY requirements.txt serve.sh /app/\n'
                      'RUN pip install -r /app/requirements.txt\nENTRYPOINT ["/app/serve.sh"]\n'
                      'CMD ["m", "--disable-log-requests", "--max-model-len", "8192"]\n',
        "serve.sh": '#!/bin/bash\nexec vllm serve "$@"\n',
    }
    _lint(tmp_path, files)
    first = run_cli("check", "--select", "VLL206", "--output-format", "json", "Dockerfile", cwd=tmp_path)
    assert json.loads(first.stdout) == []
    (tmp_path / "requirements.txt").write_text("vllm==0.33.0\n", encoding="utf-8")
    second = run_cli("check", "--select", "VLL206", "--output-format", "json", "Dockerfile", cwd=tmp_path)
    assert [item["message"].split(" (")[0] for item in json.loads(second.stdout)] == [
        "--disable-log-requests was removed in vLLM 0.17.0"
    ]


def test_the_mcp_server_reads_a_pin_changed_between_two_requests(tmp_path: Path) -> None:
    from vllm_lint.mcp_server.tools import lint

    _lint(tmp_path, {"requirements.txt": "vllm==0.6.3\n", "serve.sh": SERVE_SH})
    assert [item["code"] for item in lint(tmp_path, path="serve.sh")[0]["findings"] if item["code"] == "VLL206"] == []
    (tmp_path / "requirements.txt").write_text("vllm==0.33.0\n", encoding="utf-8")
    found = lint(tmp_path, path="serve.sh")[0]["findings"]
    assert [(item["code"], item["message"].split(" (")[0]) for item in found if item["code"] == "VLL206"] == [
        ("VLL206", "--disable-log-requests was removed in vLLM 0.17.0"),
        ("VLL206", "--swap-space was removed in vLLM 0.18.0"),
    ]



@pytest.mark.parametrize("target", [None, "0.32.0", "0.6.3", ">=0.6,<0.9", "0.1.0"])
def test_a_module_s_names_for_a_set_of_releases_are_those_its_per_name_masks_give(target: str | None) -> None:
    """``Database.module_names_in`` (what VllmApi.module_names reads) skips the per-name masks; for every module
    and these release sets it must give the names those masks do."""
    api = load_api(target)
    database = api.database
    for module in database.module_masks():
        masks = database.module_name_masks(module)
        assert database.module_names_in(module, api.mask) == {name for name, releases in masks.items() if releases & api.mask}, module
