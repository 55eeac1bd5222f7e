"""Model facts: where a launch's model is found (a local folder, the Hugging Face cache, the shipped table, the
Hub when asked), what is read from its config.json, and the GPU names deployments write."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest

from vllm_lint.gpus.names import gpu_from_instance_type, gpu_from_name
from vllm_lint.models.derive import max_model_len_limit
from vllm_lint.models.facts import read_facts
from vllm_lint.models.lookup import ModelSearch, find_model
from vllm_lint.models.table import table_facts

TABLE = Path(__file__).parent / "data" / "model_table" / "model_configs.jsonl"
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "max_position_embeddings": 4096,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "hidden_size": 4096,
}


def test_table_rows_match_ids_whatever_their_case():
    facts = table_facts("OpenAI-Community/GPT2", TABLE)
    assert (facts.name, facts.num_layers, facts.num_attention_heads, facts.hidden_size, facts.weight_bytes) == (
        "OpenAI-Community/GPT2",
        12,
        12,
        768,
        548105171,
    )
    assert facts.max_length_keys() == {"n_positions": 1024}
    assert table_facts("openai-community/gpt2-xl", TABLE) is None


def test_a_multimodal_model_is_judged_by_its_language_model():
    facts = table_facts("llava-hf/llava-1.5-7b-hf", TABLE)
    assert facts.multimodal and facts.text_model_type == "llama" and facts.num_layers == 32
    assert max_model_len_limit(facts, ("0.32.0",), False).value == 4096


def _cache(tmp_path: Path, model: str, revisions: dict[str, dict], main: str | None) -> Path:
    repo = tmp_path / "hub" / ("models--" + model.replace("/", "--"))
    for revision, config in revisions.items():
        folder = repo / "snapshots" / revision
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(config))
    if main:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(main)
    return tmp_path / "hub"


def test_the_hugging_face_cache_gives_the_revision_main_names(tmp_path, monkeypatch):
    root = _cache(tmp_path, "Org/Long", {"aaa": {**LLAMA, "max_position_embeddings": 2048}, "bbb": LLAMA}, "bbb")
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    facts = find_model("org/long", ModelSearch(table=TABLE))
    assert facts.max_length_keys() == {"max_position_embeddings": 4096}
    assert facts.source == f"the Hugging Face cache ({root}/models--Org--Long/snapshots/bbb/config.json)"


def test_several_cached_revisions_without_a_ref_are_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    _cache(tmp_path, "org/two", {"aaa": LLAMA, "bbb": LLAMA}, None)
    assert find_model("org/two", ModelSearch(table=TABLE)) is None
    _cache(tmp_path, "org/one", {"aaa": LLAMA}, None)
    assert find_model("org/one", ModelSearch(table=TABLE)).num_layers == 32


def test_a_local_folder_is_read_relative_to_the_folders_given(tmp_path):
    (tmp_path / "models" / "m").mkdir(parents=True)
    (tmp_path / "models" / "m" / "config.json").write_text(json.dumps(LLAMA))
    assert find_model("./models/m", ModelSearch((tmp_path / "elsewhere", tmp_path))).num_layers == 32
    assert find_model("/nowhere/models/m", ModelSearch((tmp_path,))) is None


class _Hub(http.server.BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self):  # noqa: N802 - the name http.server calls
        _Hub.asked.append(self.path)
        if self.path == "/org/remote/resolve/main/config.json":
            body = json.dumps(LLAMA).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub(monkeypatch, tmp_path):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    _Hub.asked.clear()
    find_model.cache_clear()
    yield _Hub.asked
    server.shutdown()
    find_model.cache_clear()


def test_the_hub_is_asked_only_when_allowed_and_once(hub, tmp_path):
    assert find_model("org/remote", ModelSearch(table=TABLE)) is None
    assert hub == []
    facts = find_model("org/remote", ModelSearch(hub=True, table=TABLE))
    assert facts.num_layers == 32 and hub == ["/org/remote/resolve/main/config.json"]
    find_model.cache_clear()
    assert find_model("org/remote", ModelSearch(hub=True, table=TABLE)).num_layers == 32
    assert hub == ["/org/remote/resolve/main/config.json"]  # from the user cache the second time
    assert find_model("org/missing", ModelSearch(hub=True, table=TABLE)) is None


@pytest.mark.parametrize(
    ("config", "version", "disable_sliding_window", "expected"),
    [
        (LLAMA, "0.32.0", False, (4096, "max_position_embeddings=4096")),
        (
            {**LLAMA, "rope_scaling": {"type": "linear", "factor": 4.0}},
            "0.32.0",
            False,
            (16384, "max_position_embeddings=4096 x rope_scaling factor 4"),
        ),
        (
            {**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}},
            "0.32.0",
            False,
            (4096, "max_position_embeddings=4096"),
        ),
        # An older release may have scaled YaRN by its factor: the largest reading is taken.
        (
            {**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}},
            "0.6.3",
            False,
            (16384, "max_position_embeddings=4096 x rope_scaling factor 4 (yarn)"),
        ),
        ({**LLAMA, "sliding_window": 1024}, "0.32.0", True, (1024, "sliding_window=1024 (disable_sliding_window)")),
        ({**LLAMA, "model_max_length": 8192}, "0.32.0", False, (8192, "model_max_length=8192")),
        ({"architectures": ["X"], "model_type": "x"}, "0.32.0", False, None),
        ({**LLAMA, "rope_scaling": {"factor": 2.0}}, "0.32.0", False, None),
    ],
)
def test_max_model_len_limit(config, version, disable_sliding_window, expected):
    limit = max_model_len_limit(read_facts("m", "test", config), (version,), disable_sliding_window)
    assert ((limit.value, limit.key) if limit else None) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
        ("nvidia-tesla-t4", "T4"),
        ("nvidia-h100-80gb", "H100"),
        ("A100-80G", "A100-80GB"),
        ("A100", "A100"),
        ("Tesla-V100-SXM2-16GB", "V100-16GB"),
        ("NVIDIA-GeForce-RTX-4090", "RTX4090"),
        ("nvidia-l4", "L4"),
        ("L40S", "L40S"),
        ("NVIDIA-H100-NVL", "H100-NVL"),
        ("AMD-Instinct-MI300X", "MI300X"),
        ("nvidia-h100-mega-80gb", "H100"),
        ("A10G", "A10G"),
        ("cpu", None),
    ],
)
def test_gpu_names(name, expected):
    found = gpu_from_name(name)
    assert (found.name if found else None) == expected


def test_instance_types():
    assert [
        gpu_from_instance_type(t) and gpu_from_instance_type(t).name
        for t in ("g5.2xlarge", "p4de.24xlarge", "m5.large")
    ] == ["A10G", "A100-80GB", None]


def test_the_gpu_setting_and_its_per_file_overrides(tmp_path):
    from vllm_lint.config import ConfigError, load_settings
    from vllm_lint.engine.runner import gpu_for

    config = tmp_path / "vllm-lint.toml"
    config.write_text('gpu = "nvidia-a100-80gb"\n[per-file-gpu]\n"edge/*" = "L4"\n')
    settings = load_settings(config, [])
    assert (settings.gpu, gpu_for(tmp_path / "edge" / "run.sh", settings), gpu_for(tmp_path / "run.sh", settings)) == (
        "A100-80GB",
        "L4",
        "A100-80GB",
    )
    config.write_text('gpu = "TPU-v5"\n')
    with pytest.raises(ConfigError, match="'TPU-v5' is not a GPU type vllm-lint knows"):
        load_settings(config, [])


def _check_json(folder: Path, rule: str, gpu: str):
    """``vllm-lint check`` of ``serve.sh`` in ``folder``, one rule, on one GPU type, as JSON."""
    from lintutil import run_cli

    return run_cli(
        "check",
        "-n",
        "--isolated",
        "--preview",
        "--select",
        rule,
        "--gpu",
        gpu,
        "--output-format",
        "json",
        "serve.sh",
        cwd=folder,
    )


def test_the_gpu_flag_names_the_gpu_of_launches_that_do_not_say(tmp_path):
    from lintutil import run_cli

    (tmp_path / "serve.sh").write_text("vllm serve my-org/model --dtype bfloat16 --max-model-len 4096\n")
    found = _check_json(tmp_path, "VLL212", "nvidia-tesla-t4")
    assert [(f["location"]["row"], f["location"]["column"], f["message"]) for f in json.loads(found.stdout)] == [
        (
            1,
            33,
            "dtype bfloat16 on T4 (compute capability 7.5): vLLM refuses to start "
            '("Bfloat16 is only supported on GPUs with compute capability of at least 8.0"); use --dtype half',
        )
    ]
    on_l4 = run_cli(
        "check", "-n", "--isolated", "--preview", "--select", "VLL212", "--gpu", "L4", "serve.sh", cwd=tmp_path
    )
    assert on_l4.returncode == 0, on_l4.stdout
    wrong = run_cli("check", "-n", "--isolated", "--gpu", "TPU", "serve.sh", cwd=tmp_path)
    assert wrong.returncode == 2 and "--gpu: 'TPU' is not a GPU type vllm-lint knows" in wrong.stderr


def test_an_id_the_hub_moved_is_read_as_its_new_one(tmp_path):
    from lintutil import run_cli

    assert table_facts("gpt2").config == table_facts("openai-community/gpt2").config
    (tmp_path / "serve.sh").write_text("vllm serve gpt2 --gpu-memory-utilization 0.9\n")
    fixed = run_cli(
        "check", "-n", "--isolated", "--diff", "--unsafe-fixes", "--select", "VLL203", "serve.sh", cwd=tmp_path
    )
    assert "+vllm serve gpt2 --gpu-memory-utilization 0.9 --max-model-len 1024" in fixed.stdout.splitlines()


def test_the_length_a_launch_takes_by_default_is_the_shortest_reading_of_older_releases():
    # 0.6.3 may read Llama 3's rope factor into its length (the longest reading, which VLL209 holds a written
    # length to); VLL211 sizes the KV cache of the length vLLM takes by default, which must fail in every reading.
    llama = table_facts("meta-llama/Llama-3.3-70B-Instruct")
    assert max_model_len_limit(llama, ("0.6.3",), False).value == 1048576
    assert max_model_len_limit(llama, ("0.6.3",), False, shortest=True).value == 131072
    assert max_model_len_limit(llama, ("0.6.3", "0.32.0"), False, shortest=True).value == 131072


def test_vll211_counts_the_profiling_pass_only_in_the_releases_read(tmp_path):
    # Llama-3.1-8B-Instruct's row keeps no torch_dtype: its weights are sized at the 2 bytes vLLM serves them in.
    # 65,536 batched tokens: its MLP's gate/up and activation outputs alone take 5.2 GiB in 0.32's profiling pass.
    image, model = (
        "docker run --gpus all vllm/vllm-openai",
        "--model meta-llama/Llama-3.1-8B-Instruct --max-model-len 16384",
    )
    (tmp_path / "serve.sh").write_text(
        f"{image}:v0.32.0 {model} --max-num-batched-tokens 65536\n"
        f"{image}:v0.32.0 {model} --max-num-batched-tokens 32768\n"
        f"{image}:v0.32.0 {model} --max-num-batched-tokens 65536 --enable-dbo\n"
        f"{image}:v0.6.3 {model} --max-num-batched-tokens 65536\n"
    )
    found = _check_json(tmp_path, "VLL211", "RTX3090")
    assert [(f["location"]["row"], f["message"]) for f in json.loads(found.stdout)] == [
        (
            1,
            "meta-llama/Llama-3.1-8B-Instruct leaves too little KV cache: weights 15.0 GiB + the start-up profiling "
            "pass's activations at least 5.2 GiB + one 16384-token sequence's KV cache 2.0 GiB per GPU on 1 x RTX3090 "
            "at 0.92 = 22.1 GiB each; vLLM refuses to start (\"To serve at least one request with the models's max seq "
            'len ... KV cache is needed"); lower max_model_len, or use more or larger GPUs',
        )
    ]


def test_vll211_does_not_size_a_checkpoint_whose_name_says_it_is_quantized(tmp_path):
    # NVIDIA's FP8 export keeps its quantization in hf_quant_config.json, which vLLM reads: the row's config.json
    # alone (bfloat16, no quantization_config) would size it as the 16-bit model.
    (tmp_path / "serve.sh").write_text(
        "vllm serve nvidia/Llama-3.1-70B-Instruct-FP8 --max-model-len 8192\n"
        "vllm serve meta-llama/Llama-3.3-70B-Instruct --max-model-len 8192\n"
    )
    found = _check_json(tmp_path, "VLL211", "L40S")
    assert [(f["location"]["row"], f["message"].split(":")[0]) for f in json.loads(found.stdout)] == [
        (2, "meta-llama/Llama-3.3-70B-Instruct does not fit")
    ]


def test_vll211_judges_a_gpu_named_without_its_size_on_its_largest(tmp_path):
    # "A100" leaves 40 or 80 GB open: 70B on one does not fit 80 GB either; split in two it fits 80 GB, not 40 GB.
    (tmp_path / "serve.sh").write_text(
        "vllm serve meta-llama/Llama-3.3-70B-Instruct --max-model-len 8192 --gpu-memory-utilization 0.90\n"
        "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 2 --max-model-len 8192 --gpu-memory-utilization 0.90\n"
    )
    found = [(f["location"]["row"], f["message"]) for f in json.loads(_check_json(tmp_path, "VLL211", "A100").stdout)]
    assert found == [
        (
            1,
            "meta-llama/Llama-3.3-70B-Instruct does not fit: its weights take 131.4 GiB per GPU (131.4 GiB over 1) on "
            "1 x A100 (40 or 80 GB; 80 GB assumed) at 0.9 = 72.0 GiB each; vLLM runs out of memory loading them; use "
            "more GPUs (tensor parallel), a quantized checkpoint, or a larger GPU",
        )
    ]
    on_40 = json.loads(_check_json(tmp_path, "VLL211", "A100-40GB").stdout)
    assert [f["location"]["row"] for f in on_40] == [1, 2]


def test_vll211_sizes_an_fbgemm_fp8_checkpoint_at_one_byte_a_weight(tmp_path):
    # The row keeps no weight_bytes: 405,849,243,648 counted parameters (Llama 3.1 405B) at one byte, a lower bound.
    from vllm_lint.models.derive import weight_bytes_served

    fp8 = table_facts("meta-llama/Meta-Llama-3.1-405B-Instruct-FP8")
    assert fp8.quantization_method == "fbgemm_fp8" and fp8.weight_bytes is None
    assert weight_bytes_served(fp8, None) == weight_bytes_served(fp8, "float32") == 405_849_243_648
    awq = read_facts("org/model-awq", "test", {**LLAMA, "vocab_size": 32000, "intermediate_size": 11008,
                                       "quantization_config": {"quant_method": "awq"}})
    assert weight_bytes_served(awq, None) is None
    (tmp_path / "serve.sh").write_text(
        "vllm serve meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 --tensor-parallel-size 8\n"
        "vllm serve meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 --tensor-parallel-size 4\n"
    )
    found = [(f["location"]["row"], f["message"]) for f in json.loads(_check_json(tmp_path, "VLL211", "H100").stdout)]
    assert [row for row, _ in found] == [2]
    assert "its weights take 94.5 GiB per GPU (378.0 GiB over 4) on 4 x H100" in found[0][1]
    assert "use more GPUs (tensor parallel), or a larger GPU" in found[0][1]
