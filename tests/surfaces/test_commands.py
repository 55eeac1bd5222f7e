"""Command-line surfaces: shell, Dockerfile, docker-compose, Kubernetes, Markdown."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from findings import code_lines, codes
from fixture_files import COMMAND_FIXTURES, REPO, SEEDS, lint_in
from lintutil import lint_file_paths, lint_text, run_cli


def lint_fixture(name: str):
    return lint_in(COMMAND_FIXTURES, name)


# -- the seed documents' command lines, in one Markdown file ----------------------------------------


def test_markdown_from_seed_documents_matches_the_extracted_code():
    assert code_lines(lint_fixture("seed_docs.md")) == [
        ("VLL203", 7), ("VLL401", 7), ("VLL403", 7),  # the entrypoint block (seed 000)
        ("VLL401", 37), ("VLL403", 40), ("VLL402", 46),  # start_vllm.sh (seed 001); no VLL201/VLL203
        ("VLL203", 61), ("VLL403", 61), ("VLL201", 64), ("VLL403", 64), ("VLL303", 70),  # the recipes (seed 001)
        ("VLL202", 92),  # a python block, linted by the Python surface
    ]  # the console block's VLL403 is noqa'd


# -- flag handling like vLLM's parser --------------------------------------------------------------


# Every finding (all on the command's line) of one command line.
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # vLLM's parser takes `_` for `-` and unambiguous prefixes
        ("vllm serve m --gpu_memory_utilization=0.98 --max-model-len 8192", ["VLL202", "VLL403"]),
        ("vllm serve m --gpu-memory 0.99 --max-model-len 8192", ["VLL202", "VLL403"]),
        # human-readable sizes
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 32k", ["VLL403"]),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len=4K", ["VLL403"]),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --no-enable-prefix-caching", ["VLL204", "VLL403"]),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --enable-prefix_caching", ["VLL403"]),
        # removed flags, values outside the choices, a prefix of one flag only
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --swap-space 4", ["VLL206", "VLL403"]),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --dtype float8", ["VLL206", "VLL403"]),
        ("vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-seq 8", ["VLL403"]),
        ("vllm serve --model m --gpu-memory-utilization 0.9 --max-model-len 8192", ["VLL401", "VLL403"]),
        # a config file may set anything
        ("vllm serve m --config cfg.yaml", []),
        # bound to localhost, a key (of several), a host we cannot see, a key in the environment
        ("vllm serve m --host 127.0.0.1", ["VLL201", "VLL203"]),
        ("vllm serve m --host 0.0.0.0 --api-key k1 k2", ["VLL201", "VLL203"]),
        ('vllm serve m --host "$HOST"', ["VLL201", "VLL203"]),
        ("VLLM_API_KEY=secret vllm serve m", ["VLL201", "VLL203"]),
        # remote code: pinned to a commit, to a tag, turned off
        ("vllm serve m --trust-remote-code --revision 0123456789abcdef0123456789abcdef01234567", ["VLL201", "VLL203", "VLL403"]),
        ("vllm serve m --trust-remote-code --revision v1.0", ["VLL201", "VLL203", "VLL402", "VLL403"]),
        ("vllm serve m --no-trust-remote-code", ["VLL201", "VLL203", "VLL403"]),
        # not a server; the CLI module under a runner; a wrapper and GPUs; a shell string
        ("vllm bench serve --model m", []),
        ("uv run python -m vllm.entrypoints.cli.main serve m", ["VLL201", "VLL203", "VLL403"]),
        ("nohup env CUDA_VISIBLE_DEVICES=0,1 vllm serve m -tp 4 > log 2>&1 &", ["VLL201", "VLL203", "VLL205", "VLL403"]),
        ("bash -c 'vllm serve m --gpu-memory-utilization 0.99'", ["VLL202", "VLL203", "VLL403"]),
    ],
)
def test_flags(tmp_path, line, expected):
    assert sorted(code_lines(lint_text(tmp_path, "run.sh", line + "\n"))) == [(code, 1) for code in expected]


def test_variables_resolve_in_order(tmp_path):
    script = 'UTIL=0.99\nvllm serve m --gpu-memory-utilization "$UTIL" --max-model-len 8192\nUTIL=0.5\n'
    diagnostics = lint_text(tmp_path, "run.sh", script)
    assert code_lines(diagnostics) == [("VLL403", 2), ("VLL202", 2)]
    assert "0.99" in diagnostics[1].message


def test_unresolvable_values_are_unknown(tmp_path):
    script = 'vllm serve m --gpu-memory-utilization "$(cat util)" --max-model-len "$LEN"\n'
    assert codes(lint_text(tmp_path, "run.sh", script)) == ["VLL403"]


def test_shebang_claims_extensionless_scripts(tmp_path):
    got = code_lines(lint_text(tmp_path, "entrypoint", "#!/usr/bin/env bash\nvllm serve m\n"))
    assert got == [("VLL201", 2), ("VLL203", 2), ("VLL403", 2)]


def test_missing_flag_reported_at_the_command_first_line(tmp_path):
    script = "echo start\nexec vllm serve m \\\n  --gpu-memory-utilization 0.9\n"
    got = [(d.code, d.start.line, d.start.column) for d in lint_text(tmp_path, "run.sh", script)]
    assert got == [("VLL203", 2, 6), ("VLL403", 2, 6)]


def test_noqa_on_command_first_line(tmp_path):
    script = "vllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9  # noqa: VLL403\n"
    assert lint_text(tmp_path, "run.sh", script) == []


# -- surfaces ------------------------------------------------------------------------------------


def test_docker_run_fixture():
    # no VLL403, VLL203, VLL201: -e VLLM_API_KEY, MAX_LEN, --gpu-memory; vllm/vllm-openai:latest floats (VLL405)
    assert code_lines(lint_fixture("run_docker.sh")) == [("VLL405", 8), ("VLL401", 9), ("VLL205", 10), ("VLL404", 10), ("VLL204", 13)]


def test_dockerfile_fixture():
    got = code_lines(lint_fixture("Dockerfile.vllm"))
    assert got == [("VLL303", 10), ("VLL401", 13), ("VLL403", 13), ("VLL202", 14), ("VLL206", 14)]
    assert lint_fixture("Dockerfile") == []  # ENV-resolved, bound to localhost


def test_compose_fixture():
    # the second service (from line 20) has ipc: host, two device_ids for tp 2, and VLLM_API_KEY; the image's
    # own entrypoint runs the arguments: no --host is reported at the first of them
    got = code_lines(lint_fixture("docker-compose.yml"))
    assert got == [("VLL401", 5), ("VLL403", 5), ("VLL205", 6), ("VLL404", 6), ("VLL202", 7)]


def test_kubernetes_fixture():
    # the StatefulSet (from line 40): hostIPC, api key from a secret, tp 2 on 2 GPUs: only VLL201
    got = code_lines(lint_fixture("vllm-deployment.yaml"))
    assert got == [("VLL403", 21), ("VLL205", 22), ("VLL404", 22), ("VLL202", 23), ("VLL402", 26), ("VLL201", 49)]


@pytest.mark.parametrize(("name", "line"), [("broken.sh", 2), ("broken.yaml", 8), ("Dockerfile.broken", 2)])
def test_parse_errors_are_vll000(name, line):
    assert code_lines(lint_fixture(name)) == [("VLL000", line)]


def test_the_run_goes_on_after_a_parse_error(tmp_path):
    for name in ("broken.sh", "run_docker.sh"):
        shutil.copy(COMMAND_FIXTURES / name, tmp_path / name)
    got = [(Path(d.path).name, d.code) for d in lint_file_paths([tmp_path / "broken.sh", tmp_path / "run_docker.sh"])]
    assert got == [("broken.sh", "VLL000"), *[("run_docker.sh", code) for code in ("VLL405", "VLL401", "VLL205", "VLL404", "VLL204")]]


def test_yaml_alias_bomb_is_bounded(tmp_path):
    lines = ["kind: Pod", 'a: &a ["vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm", "vllm"]']
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 10) + "]")
    lines.append("spec: {containers: [{name: x, image: vllm/vllm-openai, args: *i}]}")
    started = time.monotonic()
    diagnostics = lint_text(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    # aliases are never expanded: only the paths a workload defines are read (args here hold no strings)
    assert time.monotonic() - started < 60  # only fails a reading that expands the aliases (10**9 nodes)
    assert code_lines(diagnostics) == [("VLL201", 10), ("VLL203", 10), ("VLL403", 10), ("VLL405", 11)]


def test_yaml_with_python_tags_is_rejected_safely(tmp_path):
    # only composed (nodes), never constructed: the tag is inert
    text = "kind: Pod\nspec: !!python/object/apply:os.system ['touch pwned; vllm serve m']\n"
    assert lint_text(tmp_path, "pod.yaml", text) == []
    assert not (tmp_path / "pwned").exists()


def test_markdown_noqa_before_fence(tmp_path):
    text = "<!-- noqa: VLL403 -->\n```bash\nvllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9\n```\n"
    assert lint_text(tmp_path, "README.md", text) == []
    assert code_lines(lint_text(tmp_path, "README.md", text.split("\n", 1)[1])) == [("VLL403", 2)]


def test_markdown_yaml_and_dockerfile_blocks(tmp_path):
    text = (
        "```dockerfile\nFROM vllm/vllm-openai:latest\nCMD vllm serve m --max-model-len 8192 --swap-space 4\n```\n\n"
        "```yaml\nkind: Pod\nspec:\n  containers:\n    - name: v\n      image: vllm/vllm-openai\n"
        "      args: [m, --gpu-memory-utilization, '0.99']\n```\n"
    )
    got = code_lines(lint_text(tmp_path, "docs.md", text))
    # the Dockerfile block shows what an image holds, so only what it writes is checked (nothing reported missing)
    # (the images named are not pinned: VLL405 in both blocks)
    assert got == [("VLL405", 2), ("VLL206", 3), ("VLL405", 11), ("VLL203", 12), ("VLL403", 12), ("VLL202", 12)]


def test_other_yaml_files_are_not_parsed(tmp_path):
    text = "name: ci\non: push\njobs: {build: {steps: [{run: 'pip install vllm'}]}}\n"
    assert lint_text(tmp_path, "ci.yml", text) == []


# -- fixes ---------------------------------------------------------------------------------------


def test_api_server_rewrite_keeps_layout(tmp_path):
    path = tmp_path / "start.sh"
    shutil.copy(SEEDS / "001_start_vllm.sh", path)
    result = run_cli("check", "--fix", "--exit-zero", "--isolated", "--select", "VLL401", str(path))
    assert result.returncode == 0, result.stderr
    before = (SEEDS / "001_start_vllm.sh").read_text()
    old = 'exec python3 -m vllm.entrypoints.openai.api_server \\\n  --model "$MODEL_NAME" \\\n'
    assert before.count(old) == 1
    assert path.read_text() == before.replace(old, 'exec vllm serve "$MODEL_NAME" \\\n')


def test_add_flag_keeps_continuation_layout(tmp_path):
    path = tmp_path / "entry.sh"
    shutil.copy(SEEDS / "000_good_entrypoint.sh", path)
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--select", "VLL203,VLL401", str(path))
    assert result.returncode == 0, result.stderr
    before = (SEEDS / "000_good_entrypoint.sh").read_text()
    launch = "python3 -m vllm.entrypoints.openai.api_server \\\n  --model meta-llama/Llama-3.1-70B-Instruct \\\n"
    assert before.count(launch) == 1 and before.endswith("  --port 8000\n")
    expected = before.replace(launch, "vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n")
    assert path.read_text() == expected.removesuffix("\n") + " \\\n  --max-model-len 8192\n"


def test_no_heavy_imports_for_files_without_vllm(tmp_path):
    """The parsers a vLLM launch needs (PyYAML, LibCST) and the template engine stay unimported for files that
    never mention vLLM, one of each surface."""
    files = {"a.sh": "echo hello\n", "k.yaml": "kind: Deployment\n", "compose.yaml": "services: {web: {image: nginx}}\n",
             "Dockerfile": "FROM python:3.12\nCMD python app.py\n", "README.md": "# hello\n\n```bash\nls\n```\n",
             "app.py": "import os\nprint(os.getcwd())\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from vllm_lint.config import Settings\nfrom vllm_lint.engine.discovery import _claim\n"
        "from vllm_lint.engine.runner import RunOptions, lint_file\n"
        "from vllm_lint.surfaces import all_surfaces\n"
        f"codes = sorted(p.stem for p in Path({str(REPO / 'rules')!r}).glob('VLL*.yaml'))\n"
        "options = RunOptions(Settings(), frozenset(codes), codes)\n"
        f"for name in {sorted(files)!r}:\n"
        f"    p = Path({str(tmp_path)!r}) / name\n"
        "    surface = _claim(p, all_surfaces())\n"
        "    assert surface is not None and not lint_file(p, surface, options).diagnostics, name\n"
        "print(sorted(m for m in ('yaml', 'libcst', 'jinja2') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests", capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[]\n"


def test_surfaces_registered():
    from vllm_lint.surfaces import all_surfaces

    assert [s.name for s in all_surfaces()] == [
        "dockerfile", "compose", "kubernetes", "markdown", "shell", "systemd", "makefile", "justfile", "procfile", "supervisord", "notebook", "python",
    ]


# -- real-world-shaped files, one per surface ------------------------------------------------------


def test_shell_script_with_functions_env_wrapper_and_arrays():
    # env VAR=... wrapper (2 GPUs for tp 4), an exported key; "${EXTRA_ARGS[@]}" is the array set just above
    # it, which has neither --gpu-memory-utilization nor --max-model-len
    assert code_lines(lint_fixture("serve.sh")) == [("VLL205", 17), ("VLL202", 18), ("VLL206", 21), ("VLL201", 31), ("VLL203", 31)]


def test_kubernetes_job_pod_and_cronjob():
    # Job: command + args joined; Pod: Memory emptyDir at /dev/shm, envFrom a secret; CronJob: bash -lc script
    assert code_lines(lint_fixture("vllm-jobs.yaml")) == [("VLL401", 14), ("VLL201", 66), ("VLL205", 66), ("VLL206", 67)]


def test_compose_with_extension_fields_entrypoint_and_env_file():
    # `<<: *vllm-common` brings the image; env_file may hold the key; device_ids declare one GPU for tp 2
    assert code_lines(lint_fixture("compose.yaml")) == [("VLL401", 11), ("VLL205", 29), ("VLL202", 29)]


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
    got = codes(lint_text(tmp_path, "run.sh", line + " --max-model-len 8192\n"))
    assert got == ["VLL201", "VLL403", *(["VLL206"] if bad else [])], got


def test_flag_with_an_unknown_inline_value_is_still_set(tmp_path):
    script = 'vllm serve m --gpu-memory-utilization=$(cat util) --max-model-len="$LEN" --host 127.0.0.1\n'
    assert lint_text(tmp_path, "run.sh", script) == []
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
    assert lint_text(tmp_path, "where.py", source) == []


def test_noqa_on_any_line_of_the_command(tmp_path):
    script = (
        "docker run --gpus 2 \\\n  vllm/vllm-openai:latest \\\n  m --tensor-parallel-size 4 \\\n"
        "  --max-model-len 8192  # noqa: VLL205\n"
        "env X=1 \\\n  vllm serve m --max-model-len 8192  # noqa: VLL201\n"
        "vllm serve m  # noqa: VLL201\n"
        "vllm serve m2\n"
    )
    # VLL205 (docker run, lines 1-4), VLL201 (lines 5-6 and 7) are noqa'd; a comment on another command does
    # not reach the last one
    assert code_lines(lint_text(tmp_path, "run.sh", script)) == [
        ("VLL201", 2), ("VLL403", 2), ("VLL405", 2), ("VLL404", 3),
        ("VLL403", 6),
        ("VLL203", 7), ("VLL403", 7),
        ("VLL201", 8), ("VLL203", 8), ("VLL403", 8),
    ]
