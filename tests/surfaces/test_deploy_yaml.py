"""YAML as deployment repositories write it: Helm charts, envsubst and Jinja2 templates, compose files by
content, LeaderWorkerSet, KServe, KubeRay, SkyPilot; and other engines' launches that must stay silent.

Each fixture in tests/fixtures/deploy stands for a kind of file found in public repositories (its first
comment says which); the expectations are every finding, exactly.
"""

from __future__ import annotations

import shutil

import pytest

from lintutil import REPO, lint_file_paths, lint_text, run_cli

DEPLOY = REPO / "tests" / "fixtures" / "deploy"


def findings(relative: str) -> list[tuple[int, int, str]]:
    return sorted((d.start.line, d.start.column, d.code) for d in lint_file_paths([DEPLOY / relative]))


EXPECTED = {
    # values.yaml: gpuMemoryUtilization 0.97, 2 GPUs for --tensor-parallel-size 4; the {{ if .Values.lora }}
    # branch is checked (awqq) but counts for nothing else; VLLM_API_KEY is under {{ if .Values.apiKey }};
    # `vllm serve` runs in the v0.6.3 image, judged by that release (prefix caching off by default)
    "chart-llm/templates/deployment.yaml": [(14, 21, "VLL204"), (19, 15, "VLL202"), (21, 15, "VLL205"), (21, 15, "VLL404"), (26, 30, "VLL206")],
    # `{{ range .Values.extraArgs }}` over values.yaml's `extraArgs: []` writes nothing, as Helm renders the
    # chart's defaults: the launch is read in full (`--model=` is what the v0.6.3 image's api_server
    # entrypoint needs: no VLL401)
    "chart-llm/templates/worker.yaml": [(13, 15, "VLL201"), (13, 15, "VLL203"), (13, 15, "VLL204"), (13, 15, "VLL403")],
    # Helm's functions (test_helm_renderings.py has the launches read): each branch of the {{ if }} is a
    # launch (neither sets the utilisation nor an API key); the toYaml command with the ranged args sets
    # 0.99 from values.yaml and no max_model_len
    "chart-functions/templates/deployment.yaml": [(12, 21, "VLL201"), (12, 21, "VLL403"), (19, 19, "VLL201"), (19, 19, "VLL403"), (33, 13, "VLL203"), (37, 15, "VLL202")],
    # vLLM's own chart: the command is {{ toYaml . }} of values.yaml's image.command
    "chart-vllm-command/templates/deployment.yaml": [(15, 13, "VLL201"), (15, 13, "VLL203")],
    "deployment.yaml.tpl": [(12, 125, "VLL202")],  # ${VLLM_TAG}: any release, so which entrypoint it has is not known
    # the {% for %} service is written once per model, each with what the loop body writes (0.99, no --host
    # nor API key); the gateway is read with {{ dtype }} unknown; its image is vLLM 0.6.3, where prefix
    # caching is off unless switched on (VLL204)
    "compose.yaml.j2": [(6, 14, "VLL403"), (6, 98, "VLL202"), (10, 14, "VLL204"), (10, 14, "VLL403"), (10, 100, "VLL202")],
    "llava-vllm.yml": [(4, 14, "VLL204"), (4, 72, "VLL202")],  # vllm/vllm-openai:v0.6.3: prefix caching off by default
    # 8 + 8 GPUs for tp 8 x pp 2: no VLL205; the leader runs in the v0.6.3 image (prefix caching off by default)
    "lws.yaml": [(14, 148, "VLL204"), (14, 211, "VLL404")],
    # the huggingface-runtime predictor runs KServe's server, not read; the vLLM container runs the v0.6.3
    # image, whose api_server is not deprecated yet (no VLL401) and has prefix caching off by default
    "isvc.yaml": [(10, 19, "VLL204")],
    # Ray Serve LLM passes engine_kwargs to vLLM and sets nothing a rule reads (max_model_lenn is not
    # max_model_len: VLL203)
    "rayservice.yaml": [(15, 13, "VLL203"), (16, 37, "VLL202"), (17, 13, "VLL206"), (18, 20, "VLL206")],
    # A100:4 for --tensor-parallel-size 8; setup installs vLLM 0.6.3, where prefix caching is off by default
    "sky-serve.yaml": [(11, 3, "VLL204"), (12, 5, "VLL205")],
    "sglang-deployment.yaml": [],
    "llamacpp-compose.yml": [],
}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_deployment_files(relative):
    assert findings(relative) == EXPECTED[relative]


def test_values_origin_is_in_the_message():
    [finding] = [d for d in lint_file_paths([DEPLOY / "chart-llm/templates/deployment.yaml"]) if d.code == "VLL202"]
    assert finding.message.startswith("gpu_memory_utilization 0.97 (values.yaml model.gpuMemoryUtilization) is out of range")


def test_values_yaml_decides_and_is_not_cached_stale(tmp_path):
    chart = tmp_path / "chart"
    shutil.copytree(DEPLOY / "chart-llm", chart)
    template = chart / "templates" / "deployment.yaml"
    before = run_cli("check", "--output-format", "concise", str(template), cwd=tmp_path)
    assert "VLL202" in before.stdout
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("gpuMemoryUtilization: 0.97", "gpuMemoryUtilization: 0.85"))
    after = run_cli("check", "--output-format", "concise", str(template), cwd=tmp_path)
    assert "VLL202" not in after.stdout and "VLL205" in after.stdout


def test_without_values_every_value_is_unknown(tmp_path):
    chart = tmp_path / "chart"
    shutil.copytree(DEPLOY / "chart-llm", chart)
    (chart / "values.yaml").unlink()
    got = sorted((d.start.line, d.code) for d in lint_file_paths([chart / "templates" / "deployment.yaml"]))
    assert got == [(21, "VLL404"), (26, "VLL206")]  # tp 4 against an unknown GPU count and 0.97 unknown: silent


_CONDITIONAL = """\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.3
          args:
            - --model=m
            - --host=127.0.0.1
            {{- if .Values.long }}
            - --max-model-len=32768
            {{- else }}
            - --max-model-len=4096
            {{- end }}
            {{- if .Values.util }}
            - --gpu-memory-utilization=0.99
            {{- end }}
"""


def test_flags_in_if_branches_are_conditional(tmp_path):
    # max-model-len is written in both branches and gpu_memory_utilization in one: neither "missing" rule
    # may fire, and the 0.99 is checked
    got = sorted((d.start.line, d.code) for d in lint_text(tmp_path, "deploy.yaml", _CONDITIONAL))
    assert got == [(10, "VLL204"), (18, "VLL202")]  # VLL204: prefix caching is off by default in the v0.6.3 image


@pytest.mark.parametrize(
    "body, message, line",
    [
        ("      {{- if .Values.x }}\n          args: [--a]\n", "Helm template that cannot be read: an {{ if }} block that is "
         "never closed (no {{ end }})", 8),
        ("      containers: {{ toYaml .Values.c | nindent 8 }}\n        - name: x\n",
         "Helm template that is not YAML once its template actions are set aside (mapping values are not allowed in "
         "this context): an action that writes YAML structure mid-line is not read", 9),
    ],
)
def test_unreadable_templates_are_vll000(tmp_path, body, message, line):
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: vllm\nspec:\n  template:\n    spec:\n" + body
    [finding] = lint_text(tmp_path / "templates", "d.yaml", text)
    assert (finding.code, finding.message, finding.start.line) == ("VLL000", message, line)


def test_plain_manifest_with_envsubst_variables_stays_silent(tmp_path):
    text = (
        # v0.9.2: still the api_server image, and prefix caching on by default (V1)
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: vllm\n    image: vllm/vllm-openai:v0.9.2\n"
        '    args: ["m", "--quantization", "${QUANT}", "--max-model-len", "4096", "--gpu-memory-utilization", '
        '"0.9", "--api-key", "${KEY}"]\n'
    )
    assert lint_text(tmp_path, "pod.yaml", text) == []


@pytest.mark.parametrize("selector", ["gpu-a100", "[a, b]", "{{ .Values.nodeSelector }}"])
def test_a_node_selector_that_is_no_mapping_names_no_gpu_and_breaks_nothing(tmp_path, selector):
    """Found on a fresh repository: a ``nodeSelector`` written as text (or a list) stopped the pod's reading with an
    internal error; it names no GPU, and the launch is read as any other."""
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: llm\nspec:\n  template:\n    spec:\n"
        f"      nodeSelector: {selector}\n"
        "      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.8.5\n"
        "          args: [\"--model\", \"facebook/opt-125m\", \"--gpu-memory-utilization\", \"0.99\"]\n"
    )
    codes = sorted(d.code for d in lint_text(tmp_path, "deploy.yaml", text))
    assert "VLL000" not in codes and "VLL202" in codes, codes
