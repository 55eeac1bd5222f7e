"""Command-line surfaces: shell, Dockerfile, docker-compose, Kubernetes, Markdown."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_lint.cli.check import lint_paths
from vllm_lint.config import Settings, enabled_codes
from vllm_lint.rulebook import all_codes
from vllm_lint.engine.runner import RunOptions

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds" / "code"
FIXTURES = REPO / "tests" / "fixtures" / "commands"


def lint_file_paths(paths: list[Path], select: tuple[str, ...] = ()):
    all_ = all_codes()
    config = Settings(root=paths[0].parent.resolve())
    options = RunOptions(config, enabled_codes(config, all_, select), all_)
    return [d for result in lint_paths(paths, options) for d in result.diagnostics]


def lint_text(directory: Path, filename: str, text: str):
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return lint_file_paths([path])


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vllm_lint", *args], capture_output=True, text=True, timeout=300, check=False)


def found(diagnostics) -> set[tuple[str, int]]:
    return {(d.code, d.start.line) for d in diagnostics}


def codes(diagnostics) -> set[str]:
    return {d.code for d in diagnostics}


def lint_fixture(name: str):
    return lint_file_paths([FIXTURES / name])


# -- the seed table (RULES.md) -------------------------------------------------------------------


def test_seed_good_entrypoint():
    diagnostics = lint_file_paths([SEEDS / "000_good_entrypoint.sh"])
    assert {"VLL401", "VLL203", "VLL403"} <= codes(diagnostics)
    assert "VLL206" not in codes(diagnostics)  # --enable-prefix_caching is accepted by vLLM
    assert "VLL202" not in codes(diagnostics)


def test_seed_start_vllm():
    diagnostics = lint_file_paths([SEEDS / "001_start_vllm.sh"])
    assert {"VLL401", "VLL402", "VLL403"} <= codes(diagnostics)
    assert not codes(diagnostics) & {"VLL201", "VLL203"}  # both given via ${VAR:-default}


def test_seed_recipes():
    diagnostics = found(lint_file_paths([SEEDS / "001_recipes.sh"]))
    assert {("VLL203", 2), ("VLL201", 5), ("VLL403", 2), ("VLL403", 5), ("VLL303", 11)} <= diagnostics
    assert ("VLL201", 2) not in diagnostics and ("VLL203", 5) not in diagnostics


def test_seed_bad_entrypoint_is_not_vllm():
    assert lint_file_paths([SEEDS / "000_bad_entrypoint.sh"]) == []


def test_markdown_from_seed_documents_matches_the_extracted_code():
    diagnostics = lint_fixture("seed_docs.md")
    by_code = {}
    for d in diagnostics:
        by_code.setdefault(d.code, []).append(d.start.line)
    # entrypoint block (seed 000), start_vllm.sh (seed 001), recipes (seed 001)
    assert by_code["VLL401"] == [7, 37]
    assert sorted(by_code["VLL403"]) == [7, 40, 61, 64]  # the console block's VLL403 is noqa'd
    assert by_code["VLL402"] == [46]
    assert sorted(by_code["VLL203"]) == [7, 61]
    assert by_code["VLL201"] == [64]
    assert by_code["VLL303"] == [70]
    assert by_code["VLL202"] == [92]  # a python block, linted by the Python surface
    assert "VLL206" not in by_code


# -- flag handling like vLLM's parser --------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected", "absent"),
    [
        ("vllm serve m --gpu_memory_utilization=0.98 --max-model-len 8192", {"VLL202"}, {"VLL201", "VLL206"}),
        ("vllm serve m --gpu-memory 0.99 --max-model-len 8192", {"VLL202"}, {"VLL201", "VLL206"}),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 32k", set(), {"VLL203", "VLL206"}),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len=4K", set(), {"VLL203", "VLL206"}),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --no-enable-prefix-caching", {"VLL204"}, set()),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --enable-prefix_caching", set(), {"VLL204", "VLL206"}),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --swap-space 4", {"VLL206"}, set()),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --dtype float8", {"VLL206"}, set()),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-seq 8", set(), {"VLL206"}),
        ("vllm serve --model m --gpu-memory-utilization 0.9 --max-model-len 8192", {"VLL401"}, set()),
        ("vllm serve m --config cfg.yaml", set(), {"VLL201", "VLL203"}),
        ("vllm serve m --host 127.0.0.1", set(), {"VLL403"}),
        ("vllm serve m --host 0.0.0.0 --api-key k1 k2", set(), {"VLL403"}),
        ("vllm serve m --host \"$HOST\"", set(), {"VLL403"}),
        ("VLLM_API_KEY=secret vllm serve m", set(), {"VLL403"}),
        ("vllm serve m --trust-remote-code --revision 0123456789abcdef0123456789abcdef01234567", set(), {"VLL402"}),
        ("vllm serve m --trust-remote-code --revision v1.0", {"VLL402"}, set()),
        ("vllm serve m --no-trust-remote-code", set(), {"VLL402"}),
        ("vllm bench serve --model m", set(), {"VLL201", "VLL203", "VLL403"}),
        ("uv run python -m vllm.entrypoints.cli.main serve m", {"VLL201", "VLL203"}, set()),
        ("nohup env CUDA_VISIBLE_DEVICES=0,1 vllm serve m -tp 4 > log 2>&1 &", {"VLL205"}, set()),
        ("bash -c 'vllm serve m --gpu-memory-utilization 0.99'", {"VLL202"}, set()),
    ],
)
def test_flags(tmp_path, line, expected, absent):
    got = codes(lint_text(tmp_path, "run.sh", line + "\n"))
    assert expected <= got, got
    assert not got & absent, got


def test_variables_resolve_in_order(tmp_path):
    script = 'UTIL=0.99\nvllm serve m --gpu-memory-utilization "$UTIL" --max-model-len 8192\nUTIL=0.5\n'
    diagnostics = lint_text(tmp_path, "run.sh", script)
    assert found(diagnostics) >= {("VLL202", 2)}
    [d] = [d for d in diagnostics if d.code == "VLL202"]
    assert "0.99" in d.message


def test_unresolvable_values_are_unknown(tmp_path):
    script = 'vllm serve m --gpu-memory-utilization "$(cat util)" --max-model-len "$LEN"\n'
    got = codes(lint_text(tmp_path, "run.sh", script))
    assert not got & {"VLL201", "VLL202", "VLL203"}


def test_shebang_claims_extensionless_scripts(tmp_path):
    got = codes(lint_text(tmp_path, "entrypoint", "#!/usr/bin/env bash\nvllm serve m\n"))
    assert {"VLL201", "VLL203"} <= got


def test_missing_flag_reported_at_the_command_first_line(tmp_path):
    script = "echo start\nexec vllm serve m \\\n  --gpu-memory-utilization 0.9\n"
    [d] = [d for d in lint_text(tmp_path, "run.sh", script) if d.code == "VLL203"]
    assert (d.start.line, d.start.column) == (2, 6)


def test_noqa_on_command_first_line(tmp_path):
    script = "vllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9  # noqa: VLL403\n"
    assert "VLL403" not in codes(lint_text(tmp_path, "run.sh", script))


# -- surfaces ------------------------------------------------------------------------------------


def test_docker_run_fixture():
    got = found(lint_fixture("run_docker.sh"))
    assert {("VLL401", 9), ("VLL205", 10), ("VLL204", 13)} <= got
    assert not {c for c, _ in got} & {"VLL403", "VLL203", "VLL201"}  # -e VLLM_API_KEY, MAX_LEN, --gpu-memory


def test_dockerfile_fixture():
    got = found(lint_fixture("Dockerfile.vllm"))
    assert {("VLL303", 10), ("VLL401", 13), ("VLL403", 13), ("VLL202", 14), ("VLL206", 14)} <= got
    assert "VLL203" not in {c for c, _ in got}
    assert lint_fixture("Dockerfile") == []  # ENV-resolved, bound to localhost


def test_compose_fixture():
    got = found(lint_fixture("docker-compose.yml"))
    assert {("VLL401", 5), ("VLL205", 6), ("VLL404", 6), ("VLL202", 7), ("VLL403", 4)} <= got
    # the second service has ipc: host, two device_ids for tp 2, and VLLM_API_KEY
    assert all(line < 20 for _, line in got)


def test_kubernetes_fixture():
    got = found(lint_fixture("vllm-deployment.yaml"))
    assert {("VLL403", 21), ("VLL205", 22), ("VLL404", 22), ("VLL202", 23), ("VLL402", 26), ("VLL201", 49)} <= got
    # the StatefulSet: hostIPC, api key from a secret, tp 2 on 2 GPUs
    assert not {c for c, line in got if line > 40} - {"VLL201"}


@pytest.mark.parametrize(("name", "line"), [("broken.sh", 2), ("broken.yaml", 8), ("Dockerfile.broken", 2)])
def test_parse_errors_are_vll000(name, line):
    [d] = lint_fixture(name)
    assert (d.code, d.start.line) == ("VLL000", line)


def test_the_run_goes_on_after_a_parse_error(tmp_path):
    for name in ("broken.sh", "run_docker.sh"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    got = codes(lint_file_paths([tmp_path / "broken.sh", tmp_path / "run_docker.sh"]))
    assert {"VLL000", "VLL205"} <= got


def test_yaml_alias_bomb_is_bounded(tmp_path):
    lines = ["kind: Pod", 'a: &a ["vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm"]']
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 10) + "]")
    lines.append("spec: {containers: [{name: x, image: vllm/vllm-openai, args: *i}]}")
    import time

    started = time.monotonic()
    diagnostics = lint_text(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    # aliases are never expanded: only the paths a workload defines are read (args here hold no strings)
    assert time.monotonic() - started < 10
    assert "VLL000" not in codes(diagnostics)


def test_yaml_with_python_tags_is_rejected_safely(tmp_path):
    # only composed (nodes), never constructed: the tag is inert
    text = "kind: Pod\nspec: !!python/object/apply:os.system ['touch pwned; vllm serve m']\n"
    assert lint_text(tmp_path, "pod.yaml", text) == []
    assert not (tmp_path / "pwned").exists()


def test_markdown_noqa_before_fence(tmp_path):
    text = "<!-- noqa: VLL403 -->\n```bash\nvllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9\n```\n"
    assert lint_text(tmp_path, "README.md", text) == []
    assert codes(lint_text(tmp_path, "README.md", text.split("\n", 1)[1])) == {"VLL403"}


def test_markdown_yaml_and_dockerfile_blocks(tmp_path):
    text = (
        "```dockerfile\nFROM vllm/vllm-openai:latest\nCMD vllm serve m --max-model-len 8192 --swap-space 4\n```\n\n"
        "```yaml\nkind: Pod\nspec:\n  containers:\n    - name: v\n      image: vllm/vllm-openai\n"
        "      args: [m, --gpu-memory-utilization, '0.99']\n```\n"
    )
    got = found(lint_text(tmp_path, "docs.md", text))
    assert {("VLL206", 3), ("VLL202", 12)} <= got


def test_other_yaml_files_are_not_parsed(tmp_path):
    text = "name: ci\non: push\njobs: {build: {steps: [{run: 'pip install vllm'}]}}\n"
    assert lint_text(tmp_path, "ci.yml", text) == []


# -- fixes ---------------------------------------------------------------------------------------


def test_api_server_rewrite_keeps_layout(tmp_path):
    path = tmp_path / "start.sh"
    shutil.copy(SEEDS / "001_start_vllm.sh", path)
    result = run_cli("check", "--fix", "--exit-zero", "--isolated", "--select", "VLL401", str(path))
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert 'exec vllm serve "$MODEL_NAME" \\\n  --served-model-name "$SERVED_MODEL_NAME" \\\n' in text
    assert "api_server" not in text and "--model " not in text


def test_add_flag_keeps_continuation_layout(tmp_path):
    path = tmp_path / "entry.sh"
    shutil.copy(SEEDS / "000_good_entrypoint.sh", path)
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--select", "VLL203,VLL401", str(path))
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert text.endswith("  --port 8000 \\\n  --max-model-len 8192\n")
    assert "vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n  --tensor-parallel-size 4" in text


def test_no_heavy_imports_for_files_without_vllm(tmp_path):
    (tmp_path / "a.sh").write_text("echo hello\n")
    (tmp_path / "k.yaml").write_text("kind: Deployment\n")
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from vllm_lint.config import Settings\nfrom vllm_lint.engine.discovery import _claim\n"
        "from vllm_lint.engine.runner import RunOptions, lint_file\n"
        "from vllm_lint.surfaces import all_surfaces\n"
        f"codes = sorted(p.stem for p in Path({str(REPO / 'rules')!r}).glob('VLL*.yaml'))\n"
        "options = RunOptions(Settings(), frozenset(codes), codes)\n"
        f"for p in (Path({str(tmp_path / 'a.sh')!r}), Path({str(tmp_path / 'k.yaml')!r})):\n"
        "    assert not lint_file(p, _claim(p, all_surfaces()), options).diagnostics\n"
        "print('yaml' in sys.modules, 'bashlex' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests", capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["False", "False"]


def test_surfaces_registered():
    from vllm_lint.surfaces import all_surfaces

    names = [s.name for s in all_surfaces()]
    assert {"shell", "dockerfile", "compose", "kubernetes", "markdown", "python"} <= set(names)
    assert Path


# -- real-world-shaped files, one per surface ------------------------------------------------------


def test_shell_script_with_functions_env_wrapper_and_arrays():
    # env VAR=... wrapper (2 GPUs for tp 4), an exported key; "${EXTRA_ARGS[@]}" is the array set just above
    # it, which has neither --gpu-memory-utilization nor --max-model-len
    assert found(lint_fixture("serve.sh")) == {("VLL205", 17), ("VLL202", 18), ("VLL206", 21), ("VLL201", 31), ("VLL203", 31)}


def test_kubernetes_job_pod_and_cronjob():
    # Job: command + args joined; Pod: Memory emptyDir at /dev/shm, envFrom a secret; CronJob: bash -lc script
    assert found(lint_fixture("vllm-jobs.yaml")) == {("VLL401", 14), ("VLL201", 66), ("VLL205", 66), ("VLL206", 67)}


def test_compose_with_extension_fields_entrypoint_and_env_file():
    # `<<: *vllm-common` brings the image; env_file may hold the key; device_ids declare one GPU for tp 2
    assert found(lint_fixture("compose.yaml")) == {("VLL401", 11), ("VLL205", 29), ("VLL202", 29)}


def test_dockerfile_final_stage_shell_form_entrypoint():
    # only the final stage runs; its shell-form ENTRYPOINT ignores CMD; `ENV NAME value` (legacy form) resolves
    [d] = lint_fixture("Dockerfile.serve")
    assert (d.code, d.start.line) == ("VLL202", 17)
    assert "ENV GPU_UTIL" in d.message


# -- values vLLM accepts (choices, and known values vLLM enforces later) ----------------------------


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("vllm serve m --quantization int4", True),
        ("vllm serve m -q fp8", False),
        ("vllm serve m --quantization=compressed-tensors", False),
        ("vllm serve m --quantization \"$QUANT\"", False),
        # a metavar list is what the help shows, not what vLLM checks (deepseek_v41 is a real mode)
        ("vllm serve m --tokenizer-mode deepseek_v41", False),
        ("vllm serve m --collect-detailed-traces model worker", False),
        ("vllm serve m --collect-detailed-traces model gpu", True),
        ("vllm serve m --kv-cache-dtype fp9", True),
    ],
)
def test_values_outside_what_vllm_accepts(tmp_path, line, bad):
    got = [d for d in lint_text(tmp_path, "run.sh", line + " --max-model-len 8192\n") if d.code == "VLL206"]
    assert bool(got) == bad, got


def test_flag_with_an_unknown_inline_value_is_still_set(tmp_path):
    script = 'vllm serve m --gpu-memory-utilization=$(cat util) --max-model-len="$LEN" --host 127.0.0.1\n'
    assert not codes(lint_text(tmp_path, "run.sh", script)) & {"VLL201", "VLL202", "VLL203"}
    pod = (
        "kind: Pod\nspec:\n  containers:\n    - name: v\n      image: vllm/vllm-openai:v0.32.0\n"
        "      args: [m, --gpu-memory-utilization=$(UTIL), --max-model-len=8192, --host=127.0.0.1]\n"
    )
    assert lint_text(tmp_path, "pod.yaml", pod) == []


def test_snapshot_reader_knows_enforced_values_and_implicit_module_names():
    from vllm_lint.cmdline.serve_args import flag_table
    from vllm_lint.vllm_api import load_api

    api = load_api()
    table = flag_table(api)
    quantization, tokenizer_mode = table.by_dest["quantization"], table.by_dest["tokenizer_mode"]
    assert quantization.known_values_enforced and "fp8" in quantization.known_values
    assert tokenizer_mode.known_values and not tokenizer_mode.known_values_enforced
    names, _ = api.module_names("vllm.entrypoints.openai.api_server")
    assert {"__file__", "__path__", "__spec__"} <= names


def test_module_dunders_are_not_missing_names(tmp_path):
    source = "import vllm.entrypoints.openai.api_server as server\nprint(server.__file__, server.__spec__)\n"
    assert "VLL303" not in codes(lint_text(tmp_path, "where.py", source))


def test_noqa_on_any_line_of_the_command(tmp_path):
    script = (
        "docker run --gpus 2 \\\n  vllm/vllm-openai:latest \\\n  m --tensor-parallel-size 4 \\\n"
        "  --max-model-len 8192  # noqa: VLL205\n"
        "env X=1 \\\n  vllm serve m --max-model-len 8192  # noqa: VLL201\n"
        "vllm serve m  # noqa: VLL201\n"
        "vllm serve m2\n"
    )
    got = found(lint_text(tmp_path, "run.sh", script))
    assert ("VLL404", 3) in got and ("VLL205", 3) not in got
    assert ("VLL201", 6) not in got and ("VLL201", 7) not in got
    assert ("VLL201", 8) in got  # a comment on another command does not reach it
