"""A Dockerfile's ENTRYPOINT script read with its CMD: ``exec vllm serve "$@"`` with the flags in CMD, or
``exec "$@"`` of a CMD that names vLLM, when the script is one the image copies from its build context.

Each project below stands for a kind found in public repositories (the comment says which); it is written
into a temporary folder, with ``.git`` marking the repository's root. Expectations are every finding of
every file, exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lintutil import lint_file_paths, run_cli

# A model-serving repository's image: HF login in the script, flags in CMD (the shape of "deploy your own
# LLM" templates that wrap vLLM's image)
FLAGS_IN_CMD = {
    "Dockerfile": """\
FROM vllm/vllm-openai:v0.8.5
COPY entrypoint.sh /entrypoint.sh
RUN chmod +x /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
CMD ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.99", "--dtype", "halff"]
""",
    "entrypoint.sh": """\
#!/bin/bash
set -e
huggingface-cli login --token "$HF_TOKEN"
exec python3 -m vllm.entrypoints.openai.api_server --host 0.0.0.0 "$@"
""",
}

# An application repository with its Dockerfile under docker/, built from the root
# (`docker build -f docker/Dockerfile .`), a tini-run start script that sets the environment and runs CMD
EXEC_CMD = {
    "docker/Dockerfile": """\
FROM vllm/vllm-openai:v0.9.1
WORKDIR /app
COPY docker/ ./docker/
ENTRYPOINT ["tini", "--", "./docker/start.sh"]
CMD ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--host", "0.0.0.0"]
""",
    "docker/start.sh": """\
#!/usr/bin/env bash
export HF_HUB_ENABLE_HF_TRANSFER=1
if [ -n "$HF_TOKEN" ]; then
  huggingface-cli login --token "$HF_TOKEN"
fi
exec "$@"
""",
}


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir()
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _findings(root: Path) -> list[tuple[str, int, int, str]]:
    paths = sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    return sorted((p.relative_to(root).as_posix(), d.start.line, d.start.column, d.code) for p in paths for d in lint_file_paths([p]))


def test_flags_in_cmd_complete_the_scripts_launch(tmp_path):
    root = _project(tmp_path, FLAGS_IN_CMD)
    assert _findings(root) == [
        # what the script lacks with CMD's words: at the script's name in ENTRYPOINT
        ("Dockerfile", 4, 13, "VLL203"),
        ("Dockerfile", 4, 13, "VLL403"),  # --host 0.0.0.0 in the script, no key in either
        ("Dockerfile", 5, 73, "VLL202"),  # CMD's own words, where they are written
        ("Dockerfile", 5, 92, "VLL206"),
        ("entrypoint.sh", 4, 6, "VLL401"),  # the script's own: reported there, not again in the Dockerfile
    ]
    [missing] = [d for d in lint_file_paths([root / "Dockerfile"]) if d.code == "VLL203"]
    assert missing.message.endswith("(in entrypoint.sh, run with the CMD's arguments)")


def test_exec_of_cmd_runs_under_the_scripts_environment(tmp_path):
    root = _project(tmp_path, EXEC_CMD)
    assert _findings(root) == [("docker/Dockerfile", 5, 121, "VLL403")]


@pytest.mark.parametrize("pin, script_findings", [
    ("0.8.5", []),  # the api_server module is vLLM's own way to serve then
    # vllm 0.32.0, vllm/entrypoints/openai/api_server.py: "The `python -m vllm.entrypoints.openai.api_server`
    # command is deprecated"
    ("0.32.0", [("serve.sh", 2, 6, "VLL401")]),
])
def test_a_dockerfile_that_does_not_name_vllm_is_read_for_its_script(tmp_path, pin, script_findings):
    # a CUDA base image with vLLM installed from requirements.txt: only the script names vLLM
    files = {
        "Dockerfile": 'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY requirements.txt serve.sh /app/\n'
                      'RUN pip install -r /app/requirements.txt\nENTRYPOINT ["/app/serve.sh"]\n'
                      'CMD ["--model", "m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"]\n',
        "serve.sh": '#!/bin/bash\nexec python3 -m vllm.entrypoints.openai.api_server --host 127.0.0.1 "$@"\n',
        "requirements.txt": f"vllm=={pin}\n",
    }
    assert _findings(_project(tmp_path, files)) == [("Dockerfile", 5, 50, "VLL202"), *script_findings]


def test_a_key_the_script_exports_holds_for_cmd(tmp_path):
    files = dict(EXEC_CMD)
    files["docker/start.sh"] = files["docker/start.sh"].replace("exec", 'export VLLM_API_KEY="$(cat /run/secrets/key)"\nexec')
    assert _findings(_project(tmp_path, files)) == []


@pytest.mark.parametrize(
    "change",
    [
        # the script changes its arguments (a subcommand switch): "$@" is not CMD's words there
        lambda f: f.update({"entrypoint.sh": '#!/bin/sh\ncase "$1" in\n  serve) shift; exec vllm serve m --host 0.0.0.0 "$@" ;;\nesac\nexec "$@"\n'}),
        # the image does not copy the script: it is not known which one runs
        lambda f: f.update({"Dockerfile": f["Dockerfile"].replace("COPY entrypoint.sh /entrypoint.sh\n", "")}),
        # a Python entrypoint is not read as a shell script
        lambda f: f.update({"entrypoint.sh": "#!/usr/bin/env python3\nimport os\nos.execvp('vllm', ['vllm', 'serve'])\n"}),
        # the arguments are docker run's when there is no CMD, and /bin/sh -c's when CMD is shell form
        lambda f: f.update({"Dockerfile": f["Dockerfile"].split("CMD")[0]}),
        lambda f: f.update({"Dockerfile": f["Dockerfile"].split("CMD")[0] + "CMD --model m --dtype halff\n"}),
        # an SGLang server behind the same kind of script
        lambda f: f.update({"entrypoint.sh": '#!/bin/bash\nexec python3 -m sglang.launch_server --host 0.0.0.0 "$@"\n',
                            "Dockerfile": f["Dockerfile"].replace("vllm/vllm-openai:v0.8.5", "lmsysorg/sglang:v0.4.6")
                            .replace('"0.99", "--dtype", "halff"', '"0.8"').replace("--gpu-memory-utilization", "--mem-fraction-static")}),
    ],
    ids=["shift", "not-copied", "python-entrypoint", "no-cmd", "shell-form-cmd", "sglang"],
)
def test_scripts_whose_arguments_are_not_known_stay_opaque(tmp_path, change):
    files = dict(FLAGS_IN_CMD)
    change(files)
    assert [f for f in _findings(_project(tmp_path, files)) if f[0] == "Dockerfile"] == []


def test_two_build_contexts_that_disagree_are_not_guessed(tmp_path):
    # deploy/Dockerfile copies entrypoint.sh; both deploy/ and the root have one, with different launches
    files = {f"deploy/{name}": text for name, text in FLAGS_IN_CMD.items()}
    files["entrypoint.sh"] = "#!/bin/sh\nexec vllm serve \"$@\"\n"
    root = _project(tmp_path, files)
    # which script runs is not known, so neither is what CMD's words are to it
    assert [f for f in _findings(root) if f[0] == "deploy/Dockerfile"] == []


def test_the_dockerfile_is_relinted_when_its_script_changes(tmp_path):
    root = _project(tmp_path, FLAGS_IN_CMD)
    first = run_cli("check", "--output-format", "concise", "Dockerfile", cwd=root)
    assert "VLL203" in first.stdout
    script = root / "entrypoint.sh"
    script.write_text(script.read_text().replace("--host 0.0.0.0", "--host 0.0.0.0 --max-model-len 8192 --api-key k"))
    second = run_cli("check", "--output-format", "concise", "Dockerfile", cwd=root)
    assert "VLL203" not in second.stdout and "VLL403" not in second.stdout
