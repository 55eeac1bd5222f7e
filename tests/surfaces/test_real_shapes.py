"""Shapes real deployment files write that the readers once missed: nested defaults and ``${VAR:?}`` in a
script ``bash -n`` accepts, the interpreter through a variable, comment lines inside a Dockerfile's
continued RUN, ``COPY <<EOF`` here-documents, and an exec-form ``sh -c`` script continued over lines."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest
from lintutil import lint_text, run_cli

NESTED_DEFAULTS = """\
    #!/bin/bash
    set -euo pipefail
    MODEL="${MODEL_ID:-${MODEL_NAME:-}}"
    : "${MODEL:?set MODEL_ID or MODEL_NAME}"
    KEY="${SSH_KEY_FILE:-${HOME}/.ssh/id_rsa}"
    LABEL="${TAG:-"{latest}"}"
    vllm serve "$MODEL" --max-model-len 4096 --gpu-memory-utilization 0.9 --host 127.0.0.1
    """

VENV_INTERPRETER = """\
    #!/bin/bash
    VENV="${VENV:-$(pwd)/.venv}"
    nohup "$VENV/bin/python" -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct \\
        --max-model-len 8192 --gpu-memory-utilization 0.9 --host 127.0.0.1 > vllm.log 2>&1 &
    """

DOCKERFILE = """\
    FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
    ENV MODEL=Qwen/Qwen2.5-7B-Instruct PORT=8000
    RUN apt-get update && apt-get install -y \\
            python3-pip \\
            # RDMA libraries
            libibverbs-dev \\

            curl
    COPY <<EOF /usr/local/bin/check
    #!/bin/bash
    echo ready
    EOF
    RUN pip install vllm==0.6.3
    CMD ["sh", "-c", "python3 -m vllm.entrypoints.openai.api_server \\
         --model ${MODEL} --port ${PORT} \\
         --max-model-len 4096 --gpu-memory-utilization 0.9"]
    """


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash checks the script is valid")
def test_a_script_bash_accepts_is_read(tmp_path):
    script = textwrap.dedent(NESTED_DEFAULTS)
    (tmp_path / "serve.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "serve.sh")], check=False).returncode == 0
    found = lint_text(tmp_path, "serve.sh", script)
    # read in full: no VLL000, and the launch's own findings (it has no API key; the model is unknown)
    assert [(d.start.line, d.code) for d in found] == []
    explained = run_cli("check", "--no-cache", "--explain-opaque", "serve.sh", cwd=tmp_path)
    assert explained.stdout.splitlines()[0] == "1 launches seen, 1 read in full, 0 opaque"


def test_interpreter_through_a_variable_is_a_launch_and_its_fix_keeps_the_environment(tmp_path):
    script = textwrap.dedent(VENV_INTERPRETER)
    found = lint_text(tmp_path, "serve.sh", script)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(3, 7, "VLL401")]
    (tmp_path / "serve.sh").write_text(script)
    run_cli("check", "--no-cache", "--fix", "--select", "VLL401", "serve.sh", cwd=tmp_path)
    assert (tmp_path / "serve.sh").read_text() == script.replace(
        '"$VENV/bin/python" -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct',
        '"$VENV/bin/vllm" serve Qwen/Qwen2.5-7B-Instruct',
    )


def test_dockerfile_comment_lines_heredocs_and_a_continued_exec_form_script(tmp_path):
    found = lint_text(tmp_path, "Dockerfile", textwrap.dedent(DOCKERFILE))
    # the CMD's script is read with ENV's values: vLLM 0.6.3 (the pip pin) has prefix caching off;
    # the server listens on all interfaces with no API key
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(14, 19, "VLL204"), (14, 19, "VLL403")]


POD_TEMPLATES = {
    "knative.yaml": """\
        apiVersion: serving.knative.dev/v1
        kind: Service
        metadata:
          name: vllm
        spec:
          template:
            spec:
              containers:
                - image: docker.io/vllm/vllm-openai:v0.6.3
                  args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
        """,
    "argo.yaml": """\
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata:
          generateName: serve-
        spec:
          entrypoint: serve
          templates:
            - name: serve
              container:
                image: vllm/vllm-openai:v0.6.3@sha256:0000000000000000000000000000000000000000000000000000000000000000
                args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
        """,
    "kserve.yaml": """\
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata:
          name: qwen
        spec:
          predictor:
            model:
              modelFormat:
                name: huggingface
              image: registry.example.com:5000/mirror/vllm-openai:v0.6.3
              args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
        """,
    # vllm serve written as the command of a v0.6.3 container: that release's api_server is not deprecated,
    # and prefix caching is off by default there (judged by the image's release, not the newest)
    "job.yaml": """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: serve
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: docker.io/vllm/vllm-openai:v0.6.3
                  command: ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--api-key", "k"]
        """,
}


@pytest.mark.parametrize("name", sorted(POD_TEMPLATES))
def test_pod_templates_run_the_release_of_their_image(tmp_path, name):
    found = lint_text(tmp_path, name, textwrap.dedent(POD_TEMPLATES[name]))
    assert [d.code for d in found] == ["VLL204"]
    assert "vLLM 0.6.3 (the release its image runs)" in found[0].message


def test_a_compose_service_built_from_a_pinning_dockerfile_is_judged_by_that_pin(tmp_path):
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "Dockerfile.gpu").write_text("FROM python:3.11-slim\nRUN pip install vllm==0.6.0\n")
    compose = textwrap.dedent("""\
        services:
          llm:
            build:
              context: ./server
              dockerfile: Dockerfile.gpu
            ipc: host
            command: ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--host", "127.0.0.1"]
        """)
    found = lint_text(tmp_path, "compose.yaml", compose)
    assert [(d.start.line, d.code) for d in found] == [(7, "VLL204")]
    assert "vLLM 0.6.0" in found[0].message
    # a Dockerfile that pins nothing leaves the newest release: prefix caching is on by default there
    (tmp_path / "server" / "Dockerfile.gpu").write_text("FROM python:3.11-slim\nRUN pip install vllm\n")
    assert lint_text(tmp_path, "compose.yaml", compose) == []


def test_sh_c_takes_its_arguments_after_the_script_name(tmp_path):
    """``command: [sh, -c, 'exec vllm serve "$@"', --]`` with the flags in ``args:``: they are the script's."""
    manifest = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: vllm
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.10.0
                  command: ["/bin/sh", "-c", "pip install flash-attn && exec vllm serve \\"$@\\"", "--"]
                  args: ["Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096", "--gpu-memory-utilization", "0.97", "--api-key", "k"]
        """)
    found = lint_text(tmp_path, "deploy.yaml", manifest)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(12, 101, "VLL202")]


def test_helm_join_of_a_values_list_in_an_sh_c_string(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(textwrap.dedent("""\
        image: {repository: vllm/vllm-openai, tag: v0.10.0}
        model:
          name: Qwen/Qwen2.5-7B-Instruct
          args: [--max-model-len, "4096", --gpu-memory-utilization, "0.97", --api-key, k]
        """))
    template = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ printf "%s-vllm" .Release.Name }}
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
                  command: ["/bin/sh", "-c"]
                  args: ["vllm serve {{ .Values.model.name }} {{ join " " .Values.model.args }}"]
        """)
    found = lint_text(chart / "templates", "deployment.yaml", template)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(12, 55, "VLL202")]
    assert found[0].message.startswith("gpu_memory_utilization 0.97 (values.yaml model.args) is out of range")


BRANCHED_CHART_VALUES = """\
    servingEngineSpec:
      repository: vllm/vllm-openai
      tag: v0.10.0
      model: Qwen/Qwen2.5-7B-Instruct
      maxModelLen: 4096
    """

# each branch of the {{ if }} holds the program; a {{ range }} around the whole Deployment writes it once per
# element of the list, the words inside written out once each
BRANCHED_CHART_TEMPLATE = """\
    {{- range $i, $spec := list 1 }}
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: vllm-{{ $i }}
    spec:
      template:
        spec:
          containers:
            - name: vllm
              image: "{{ $.Values.servingEngineSpec.repository }}:{{ $.Values.servingEngineSpec.tag }}"
              command:
              {{- if eq $.Values.servingEngineSpec.repository "lmcache/vllm-openai" }}
              - "/opt/venv/bin/vllm"
              {{- else }}
              - "vllm"
              {{- end }}
              - "serve"
              - {{ $.Values.servingEngineSpec.model | quote }}
              - "--max-model-len"
              - {{ $.Values.servingEngineSpec.maxModelLen | quote }}
              - "--gpu-memory-utilization"
              - "0.97"
              - "--api-key"
              - "k"
    {{- end }}
    """


def test_each_branch_holding_the_program_is_a_launch(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(textwrap.dedent(BRANCHED_CHART_VALUES))
    (chart / "templates" / "deployment.yaml").write_text(textwrap.dedent(BRANCHED_CHART_TEMPLATE))
    found = lint_text(chart / "templates", "deployment.yaml", textwrap.dedent(BRANCHED_CHART_TEMPLATE))
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(23, 13, "VLL202")]  # said once
    explained = run_cli("check", "--no-cache", "--explain-opaque", "--output-format", "json", "chart", cwd=tmp_path)
    rows = [(r["line"], r["surface"], r["launch"], r["opaque"]) for r in __import__("json").loads(explained.stdout)]
    assert rows == [(14, "helm", "vllm serve", False), (16, "helm", "vllm serve", False)]


GRAMMAR_ONLY = """\
    #!/bin/bash
    GREETING=$'it\\'s ready'
    NOW=`echo \\`date\\``
    MODEL="${MODEL:-Qwen/Qwen2.5-7B-Instruct}"
    ARGS=(--max-model-len 4096)
    if [[ -n "${TP:-}" ]]; then
      ARGS+=(--tensor-parallel-size "$TP")
    fi
    vllm serve "$MODEL" "${ARGS[@]}" --gpu-memory-utilization 0.97 --host 127.0.0.1 && echo "$GREETING $NOW"
    """

ARRAY_IN_A_FUNCTION = """\
    #!/bin/bash
    build_cmd() {
      local m="$1" h="$2"
      declare -a cmd
      cmd=(vllm serve "$m")
      cmd+=(--host "$h" --max-model-len 4096 --gpu-memory-utilization 0.97)
      VLLM_COMMAND=("${cmd[@]}")
    }
    build_cmd Qwen/Qwen2.5-7B-Instruct 127.0.0.1
    "${VLLM_COMMAND[@]}"
    """


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash checks the script is valid")
@pytest.mark.parametrize("script, line, column", [(GRAMMAR_ONLY, 9, 59), (ARRAY_IN_A_FUNCTION, 6, 67)])
def test_scripts_bash_accepts_are_read_whatever_the_tokenizer_makes_of_them(tmp_path, script, line, column):
    """``$'...\\''`` and nested backquotes stop the hand tokenizer; bash's grammar reads the script instead."""
    text = textwrap.dedent(script)
    (tmp_path / "serve.sh").write_text(text)
    assert subprocess.run(["bash", "-n", str(tmp_path / "serve.sh")], check=False).returncode == 0
    found = lint_text(tmp_path, "serve.sh", text)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(line, column, "VLL202")]


def test_the_grammar_judges_what_bash_accepts():
    from vllm_lint.cmdline.shell_grammar import bash_accepts

    assert bash_accepts(textwrap.dedent(GRAMMAR_ONLY)) is True
    assert bash_accepts('vllm serve "m --max-model-len 4096\n') is False


@pytest.mark.parametrize("pin", ["  image_id: docker:docker.io/vllm/vllm-openai:v0.6.3\n", "setup: pip install vllm==0.6.3\n"])
def test_a_skypilot_task_runs_the_vllm_its_setup_installs_or_its_image_holds(tmp_path, pin):
    task = "resources:\n  accelerators: L4:1\n" + (pin if pin.startswith(" ") else "") + "envs:\n  MODEL: Qwen/Qwen2.5-7B-Instruct\n"
    task += pin if not pin.startswith(" ") else ""
    task += "run: vllm serve $MODEL --max-model-len 4096 --gpu-memory-utilization 0.9 --host 127.0.0.1\n"
    found = lint_text(tmp_path, "task.yaml", task)
    assert [d.code for d in found] == ["VLL204"] and "vLLM 0.6.3" in found[0].message


def test_helm_range_over_a_values_list_writes_each_element(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text('extraArgs:\n  - --max-model-len\n  - "8192"\n  - --gpu-memory-utilization=0.99\nmore: []\n')
    template = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.10.0
                  args:
                    - Qwen/Qwen2.5-7B-Instruct
                    - --host=127.0.0.1
                    {{- range $arg := .Values.extraArgs }}
                    - {{ $arg | quote }}
                    {{- end }}
        """)
    found = lint_text(chart / "templates", "deployment.yaml", template)
    # max-model-len is set (by the range), the utilisation is out of range: said at the template's line,
    # with the values.yaml entry it came from
    assert [(d.start.line, d.code) for d in found] == [(13, "VLL202")]
    assert "(values.yaml extraArgs.2)" in found[0].message
    # an empty list writes nothing, as Helm renders the chart's defaults: the launch is read in full, and
    # what its defaults leave out is said missing
    empty = template.replace(".Values.extraArgs", ".Values.more")
    assert [d.code for d in lint_text(chart / "templates", "deployment.yaml", empty)] == ["VLL201", "VLL203"]
    # a list values.yaml does not have is an install's own: the launch is opaque, nothing said missing
    absent = template.replace(".Values.extraArgs", ".Values.notInValues")
    assert lint_text(chart / "templates", "deployment.yaml", absent) == []


def test_helm_include_of_named_templates_and_tpl(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("engine:\n  utilization: 0.99\ncontainerPort: 8000\nquant: awqq\nquantTpl: '{{ .Values.quant }}'\n")
    (chart / "templates" / "_helpers.tpl").write_text(textwrap.dedent("""\
        {{- define "c.port" -}}
        {{- default 8080 .Values.containerPort }}
        {{- end }}
        {{- define "c.util" -}}
        {{ .utilization }}
        {{- end }}
        {{- define "c.labels" -}}
        {{- if .Values.x }}a: b{{ end }}
        {{- end }}
        """))
    template = textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          labels:
            {{- include "c.labels" . | nindent 4 }}
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.10.0
                  args:
                    - m
                    - --port={{ include "c.port" . }}
                    - --gpu-memory-utilization={{ include "c.util" .Values.engine }}
                    - --max-model-len=4096
                    - --host=127.0.0.1
                    - --quantization={{ tpl .Values.quantTpl . }}
        """)
    found = lint_text(chart / "templates", "deployment.yaml", template)
    assert [(d.start.line, d.code) for d in found] == [(15, "VLL202"), (18, "VLL206")]
    assert "0.99 (values.yaml engine.utilization)" in found[0].message


RAY_CHART_TEMPLATE = """\
    apiVersion: ray.io/v1
    kind: RayService
    metadata:
      name: {{ .Release.Name }}-llm
    spec:
      serveConfigV2: |
        applications:
        - import_path: ray.serve.llm:build_openai_app
          args:
            llm_configs:
            - model_loading_config:
                model_id: "{{ .Values.modelId }}"
              engine_kwargs:
              {{- if .Values.engineKwargs }}
                {{ .Values.engineKwargs | toYaml | nindent 12 }}
              {{- end }}
                pipeline_parallel_size: {{ .Values.gpus }}
                enable_auto_tool_choice: true
    """


@pytest.mark.parametrize(("values", "expected"), [
    # engineKwargs: {} writes no key (Helm skips the branch): nothing sets the utilisation nor the length
    ("engineKwargs: {}\n", [(17, "VLL201"), (17, "VLL203")]),
    # its keys are engine arguments, said at the action's line with the values entry they came from
    ("engineKwargs: {max_model_len: 4096, gpu_memory_utilization: 0.99}\n", [(15, "VLL202")]),
])
def test_ray_serve_llm_engine_kwargs_in_a_helm_chart_are_read_in_full(tmp_path, values, expected):
    """Ray Serve LLM hands engine_kwargs to vLLM as they are (plus the model from model_loading_config):
    the launch is read in full; enable_auto_tool_choice is a FrontendArgs field Ray accepts (no VLL206)."""
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("modelId: Qwen/Qwen2.5-7B-Instruct\ngpus: 1\n" + values)
    found = lint_text(chart / "templates", "rayservice.yaml", textwrap.dedent(RAY_CHART_TEMPLATE))
    assert [(d.start.line, d.code) for d in found] == expected
    explained = run_cli("check", "--no-cache", "--explain-opaque", "templates/rayservice.yaml", cwd=chart)
    assert "1 launches seen, 1 read in full, 0 opaque" in explained.stdout, explained.stdout
    if expected[0][1] == "VLL202":
        assert "0.99 (values.yaml via {{ .Values.engineKwargs | toYaml | nindent 12 }})" in found[0].message


def test_ray_serve_llm_engine_kwargs_written_by_an_unknown_action_leave_the_launch_opaque(tmp_path):
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("modelId: m\ngpus: 1\n")
    (chart / "templates" / "rayservice.yaml").write_text(textwrap.dedent(RAY_CHART_TEMPLATE).replace(".Values.engineKwargs", ".Release.Kwargs"))
    explained = run_cli("check", "--no-cache", "--explain-opaque", "templates/rayservice.yaml", cwd=chart)
    assert "engine_kwargs written by {{ .Release.Kwargs | toYaml | nindent 12 }}, whose value is not known" in explained.stdout, explained.stdout


def test_words_after_a_redirect_are_the_commands_as_bash_reads_them(tmp_path):
    """tree-sitter-bash gives every word after `> file` to the redirect; bash, only the first."""
    text = "vllm serve m > vllm.log --max-model-len 4096 --gpu-memory-utilization 0.99 --host 127.0.0.1 2>&1 &\n"
    found = lint_text(tmp_path, "serve.sh", text)
    assert [(d.start.line, d.start.column, d.code) for d in found] == [(1, 71, "VLL202")]  # at 0.99


KSERVE_RUNTIME = """\
    apiVersion: serving.kserve.io/v1alpha1
    kind: ServingRuntime
    metadata:
      name: vllm-runtime
    spec:
      supportedModelFormats:
        - name: vLLM
      containers:
        - name: kserve-container
          image: vllm/vllm-openai:v0.32.0
          command: ["vllm", "serve"]
          args: ["/mnt/models", "--port=8080", "--served-model-name={{.Name}}", "--api-key=k"]
          resources:
            limits:
              memory: 64Gi
    ---
    apiVersion: serving.kserve.io/v1beta1
    kind: InferenceService
    metadata:
      name: qwen
    spec:
      predictor:
        model:
          modelFormat:
            name: vLLM
          runtime: vllm-runtime
          storageUri: hf://Qwen/Qwen2.5-7B-Instruct
          args: ["--max-model-len=8192", "--gpu-memory-utilization=0.97", "--tensor-parallel-size=2"]
          resources:
            limits:
              nvidia.com/gpu: "1"
    """


def test_an_inference_service_runs_its_serving_runtime_with_its_model_args_appended(tmp_path):
    """KServe appends the InferenceService's model args to the runtime's and merges its resources over them:
    the runtime alone is not judged (its missing settings are the model's), the merged launch is, where each
    setting is written."""
    found = lint_text(tmp_path, "kserve.yaml", textwrap.dedent(KSERVE_RUNTIME))
    assert [(d.start.line, d.code) for d in found] == [(28, "VLL202"), (28, "VLL205"), (28, "VLL404")]


def test_a_serving_runtime_no_inference_service_of_its_file_uses_is_judged_alone(tmp_path):
    alone = textwrap.dedent(KSERVE_RUNTIME).split("---\n")[0]
    found = lint_text(tmp_path, "runtime.yaml", alone)
    assert [(d.start.line, d.code) for d in found] == [(11, "VLL201"), (11, "VLL203")]


UNRENDERED_WITH = """\
    apiVersion: apps/v1
    kind: Deployment
    spec:
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.32.0
              args: ["m", "--max-model-len", "8192", "--gpu-memory-utilization", "0.99", "--api-key", "k"]
              {{- with .Values.extraEnv }}
              env:
    {{ toYaml . | indent 12 }}
              {{- end }}
              {{- with .Values.securityContext }}
            securityContext:
              {{- toYaml . | nindent 10 }}
              {{- end }}
    """


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # the defaults leave both empty: Helm writes neither block, the template is YAML and its launch is read
        ("extraEnv: []\nsecurityContext: {}\n", [(9, "VLL202")]),
        # a security context set by default is written, mis-indented: the chart does not render
        ("extraEnv: []\nsecurityContext: {runAsUser: 1000}\n", [(15, "VLL000")]),
    ],
)
def test_a_with_block_over_an_empty_default_is_not_rendered(tmp_path, values, expected):
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text(values)
    found = lint_text(tmp_path / "templates", "deployment.yaml", textwrap.dedent(UNRENDERED_WITH))
    assert [(d.start.line, d.code) for d in found] == expected
