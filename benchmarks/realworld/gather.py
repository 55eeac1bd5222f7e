"""Build benchmarks/realworld/manifest.tsv from local git copies of public repositories.

    python benchmarks/realworld/gather.py [--mirrors /work/.mirror] [--out benchmarks/realworld/manifest.tsv]

Reads each repository's newest commit (bare copies as ``fetch`` leaves them, ``owner+name/repo``, or
ordinary ``owner/name`` clones), classifies the files that serve, launch or call vLLM (or a transformers
model behind a server) and the negatives (SGLang, TGI, llama.cpp, Ollama), keeps at most 3 per
repository (the kinds the corpus has fewest of first), and adds as ``context`` rows what the linter
reads beside them: version pins in every folder from the file up to the repository root, the
Dockerfile a compose file builds and its ``.env``, and the rest of a Helm chart.
The manifest's commit for a file is its repository's HEAD, which restore.py reads back.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repos import Repository, find_repositories

MAX_PER_REPO = 3
MAX_BYTES = 400_000
HEADER = ("repository", "commit", "path", "kind", "why")

VLLM = re.compile(rb"vllm", re.IGNORECASE)
VLLM_PY = re.compile(rb"^\s*(?:from|import)\s+vllm\b|vllm\.entrypoints|[\"']vllm[\"'],\s*[\"']serve[\"']|vllm serve", re.MULTILINE)
VLLM_LAUNCH = re.compile(rb"vllm serve|vllm\.entrypoints|vllm/vllm-openai|vllm-openai|python3? -m vllm|pip3? install[^\n]*vllm|from vllm|import vllm|AsyncLLMEngine|LLMEngine")
TRANSFORMERS_MODEL = re.compile(rb"AutoModelFor\w+|pipeline\(\s*[\"']text-generation|TextIteratorStreamer|\.generate\(")
FRAMEWORKS = (
    ("modal", re.compile(rb"^\s*import modal\b|^\s*from modal\b", re.MULTILINE)),
    ("ray-serve", re.compile(rb"from ray import serve|ray\.serve|@serve\.deployment")),
    ("bentoml", re.compile(rb"import bentoml|@bentoml\.")),
    ("litserve", re.compile(rb"import litserve|litserve as ls|from litserve")),
    ("gradio", re.compile(rb"import gradio|gr\.Interface|gr\.Blocks|gr\.ChatInterface")),
    ("grpc", re.compile(rb"import grpc|from grpc|grpc\.aio")),
    ("django", re.compile(rb"from django|import django")),
    ("flask", re.compile(rb"from flask import|import flask|Flask\(__name__\)")),
    ("websockets", re.compile(rb"import websockets|from websockets|WebSocket\b")),
    ("fastapi", re.compile(rb"from fastapi|import fastapi|FastAPI\(")),
    ("starlette", re.compile(rb"from starlette|import starlette")),
    ("aiohttp", re.compile(rb"from aiohttp import web|aiohttp\.web")),
    ("sanic", re.compile(rb"from sanic")),
    ("streamlit", re.compile(rb"import streamlit")),
)
NEGATIVES = (
    ("sglang", re.compile(rb"sglang\.launch_server|lmsysorg/sglang|import sglang|sglang serve|from sglang")),
    ("tgi", re.compile(rb"text-generation-inference|text-generation-launcher|huggingface/text-generation")),
    ("llama.cpp", re.compile(rb"llama-server|llama_cpp|llama\.cpp|ggml-org/llama|ghcr\.io/ggerganov")),
    ("ollama", re.compile(rb"ollama serve|ollama/ollama|import ollama|ollama run|OLLAMA_HOST")),
    ("triton-trtllm", re.compile(rb"tritonserver|tensorrt_llm|trtllm-serve")),
    ("lmdeploy", re.compile(rb"lmdeploy serve|from lmdeploy")),
)
PIN_NAMES = frozenset({
    "uv.lock", "poetry.lock", "Pipfile.lock", "pyproject.toml", "Pipfile", "setup.cfg", "setup.py",
    "environment.yml", "environment.yaml", ".vllm-lint.toml", "vllm-lint.toml",
})
SKY_KEYS = re.compile(rb"^(resources|setup|run|num_nodes|envs|service|file_mounts):", re.MULTILINE)
K8S = re.compile(rb"^\s*apiVersion:\s*\S+.*?^\s*kind:\s*\w+|^\s*kind:\s*\w+.*?^\s*apiVersion:", re.MULTILINE | re.DOTALL)
K8S_KIND = re.compile(rb"^kind:\s*(\w+)", re.MULTILINE)
# The files whose launches sit inside a language of their own (issue 38): each kind by its name or its content
SERVE = re.compile(rb"vllm serve|vllm\.entrypoints|vllm/vllm-openai|python3? -m vllm|bin/vllm ")
HEREDOC = re.compile(rb"<<-?[ \t]*['\"]?[A-Za-z_]\w*")
HEREDOC_TARGET = re.compile(rb"kubectl[^\n]*\b(?:apply|create)\b[^\n]*-f -|\b(?:cat|tee)\b[^\n]*<<[^\n]*\.(?:service|ya?ml|sh)\b|\b(?:cat|tee)\b[^\n]*\.(?:service|ya?ml|sh)\b[^\n]*<<|\bcat\b[^\n]*Dockerfile[^\n]*<<")
TASK_KINDS = ("systemd", "makefile", "ci", "cloud-init", "slurm", "heredoc", "dstack", "procfile", "supervisord")


def task_kind(path: str, data: bytes) -> str | None:
    """The issue-38 kind of a file that launches vLLM, or None."""
    if not SERVE.search(data):
        return None
    posix = PurePosixPath(path)
    name, lower = posix.name, posix.name.lower()
    if lower.endswith((".service", ".service.example", ".service.sample", ".service.in")):
        return "systemd" if b"ExecStart" in data else None
    if name in ("Makefile", "makefile", "GNUmakefile") or lower.endswith((".mk", ".make")):
        return "makefile"
    if name == "Procfile" or name.startswith("Procfile."):
        return "procfile"
    if lower.endswith((".conf", ".ini")):
        return "supervisord" if b"[program:" in data else None
    if lower.endswith((".sbatch", ".slurm")) or (lower.endswith(".sh") and b"#SBATCH" in data):
        return "slurm"
    if lower.endswith((".yml", ".yaml")):
        if "/.github/workflows/" in f"/{path}" or name.startswith(".gitlab-ci") or "/.buildkite/" in f"/{path}":
            return "ci"
        if lower in ("action.yml", "action.yaml") and re.search(rb"^[ \t]+using:[ \t]*[\"']?composite", data, re.MULTILINE):
            return "ci"  # a GitHub composite action: steps that run in the job of the workflow using it
        if lower.endswith(".dstack.yml") or lower.endswith(".dstack.yaml") or re.search(rb"^type:[ \t]*(task|service)\b", data, re.MULTILINE) and b"commands:" in data:
            return "dstack"
    if data.startswith(b"#cloud-config"):
        return "cloud-init"
    if lower.endswith((".md", ".sh", ".bash")) and HEREDOC.search(data) and HEREDOC_TARGET.search(data):
        return "heredoc"
    return None


VENDORED = re.compile(r"(^|/)(tests?|\.buildkite|\.github|benchmarks?|csrc|vllm)/")
IGNORED_DIRS = re.compile(r"(^|/)(node_modules|\.git|vendor|third_party|site-packages|\.venv|venv)/")


@dataclass(frozen=True)
class Pick:
    path: str
    kind: str
    why: str


def file_type(path: str) -> str | None:
    name = PurePosixPath(path).name
    lower = name.lower()
    if lower.endswith(".ipynb"):
        return "notebook"
    if lower.endswith(".py"):
        return "python"
    if lower.endswith((".sh", ".bash")):
        return "shell"
    if lower.endswith((".md", ".markdown")):
        return "markdown"
    if lower.startswith(("dockerfile", "containerfile")) or lower.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if lower.endswith((".yaml", ".yml")):
        if lower.startswith(("docker-compose", "compose")) or "compose" in lower:
            return "compose"
        return "yaml"
    if lower.endswith(".tpl"):
        return "yaml"
    if lower.endswith((".service", ".service.example", ".service.sample", ".service.in", ".mk", ".make", ".conf", ".ini", ".sbatch", ".slurm")) or name in ("Makefile", "makefile", "GNUmakefile", "Procfile") \
            or name.startswith("Procfile.") or name in ("user-data", "user_data"):
        return "task"
    return None


def chart_root(path: str, all_paths: frozenset[str]) -> str | None:
    parts = PurePosixPath(path).parts
    for depth in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:depth])
        if f"{folder}/Chart.yaml" in all_paths and parts[depth] in ("templates",):
            return folder
    return None


def classify(path: str, data: bytes, all_paths: frozenset[str]) -> Pick | None:
    task = task_kind(path, data)
    if task is not None:
        return Pick(path, task, f"{task} file that launches vLLM")
    kind = file_type(path)
    if kind is None:
        return None
    negative = next((name for name, pattern in NEGATIVES if pattern.search(data)), None)
    mentions_vllm = VLLM.search(data) is not None
    if kind == "python":
        framework = next((name for name, pattern in FRAMEWORKS if pattern.search(data)), None)
        if VLLM_PY.search(data) or (mentions_vllm and VLLM_LAUNCH.search(data)):
            what = "AsyncLLMEngine" if b"AsyncLLMEngine" in data else "vllm.LLM" if re.search(rb"\bLLM\(", data) else "vllm launch/import"
            return Pick(path, kind, f"{framework or 'script'} + {what}")
        if mentions_vllm and re.search(rb"OpenAI\(|openai\.|requests\.post|httpx", data):
            return Pick(path, kind, f"{framework or 'script'}: client of a vLLM server")
        if framework and TRANSFORMERS_MODEL.search(data) and b"transformers" in data:
            return Pick(path, kind, f"{framework} + transformers model")
        if negative and not mentions_vllm:
            return Pick(path, "negative", f"{negative} (python)")
        if re.search(rb"[\"']vllm[\"'/:]|vllm_|--vllm|VLLM_", data):
            return Pick(path, kind, f"{framework or 'script'}: weaker (configures or names vLLM)")
        return None
    if kind == "notebook":
        if VLLM_LAUNCH.search(data) or mentions_vllm:
            return Pick(path, kind, "notebook with vLLM")
        if negative and not mentions_vllm:
            return Pick(path, "negative", f"{negative} (notebook)")
        return None
    if kind == "markdown":
        if re.search(rb"```", data) and VLLM_LAUNCH.search(data):
            return Pick(path, kind, "docs with vLLM code blocks")
        if negative and not mentions_vllm and re.search(rb"```", data):
            return Pick(path, "negative", f"{negative} (markdown)")
        return None
    if kind == "yaml" and PurePosixPath(path).name.lower().endswith(".tpl"):
        return None
    if kind == "yaml" and chart_root(path, all_paths) is not None:
        if mentions_vllm and VLLM_LAUNCH.search(data) or (mentions_vllm and b"image:" in data):
            return Pick(path, "helm", "Helm chart template with vLLM")
        if negative and not mentions_vllm:
            return Pick(path, "negative", f"{negative} (helm)")
        return None
    if kind == "yaml":
        if K8S.search(data):
            kinds = sorted({k.decode() for k in K8S_KIND.findall(data)})
            if mentions_vllm and (VLLM_LAUNCH.search(data) or b"vllm" in data.lower()):
                return Pick(path, "kubernetes", "Kubernetes " + "/".join(kinds[:4]) + " with vLLM")
            if negative:
                return Pick(path, "negative", f"{negative} (kubernetes)")
            return None
        if len(set(SKY_KEYS.findall(data))) >= 2 and re.search(rb"^run:", data, re.MULTILINE):
            if mentions_vllm:
                return Pick(path, "skypilot", "SkyPilot task with vLLM")
            if negative:
                return Pick(path, "negative", f"{negative} (skypilot)")
        return None
    if not mentions_vllm:
        if negative and kind in ("shell", "dockerfile", "compose"):
            return Pick(path, "negative", f"{negative} ({kind})")
        return None
    if kind == "compose":
        return Pick(path, kind, "compose service with vLLM")
    if kind == "dockerfile":
        return Pick(path, kind, "Dockerfile with vLLM")
    if kind == "shell" and VLLM_LAUNCH.search(data):
        return Pick(path, kind, "shell launch of vLLM")
    if kind == "shell":
        return Pick(path, kind, "shell script: weaker (names vLLM)")
    return None


def ls_tree(repo: Repository) -> dict[str, int]:
    out = subprocess.run(
        ["git", "--git-dir", str(repo.git_dir), "ls-tree", "-r", "-l", repo.commit],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")
    sizes = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        fields = meta.split()
        if len(fields) == 4 and fields[1] == "blob" and fields[3].isdigit():
            sizes[path] = int(fields[3])
    return sizes


def read_blobs(repo: Repository, paths: list[str]) -> dict[str, bytes]:
    if not paths:
        return {}
    request = "".join(f"{repo.commit}:{p}\n" for p in paths).encode()
    out = subprocess.run(["git", "--git-dir", str(repo.git_dir), "cat-file", "--batch"],
                         input=request, capture_output=True, check=True).stdout
    blobs: dict[str, bytes] = {}
    position = 0
    for path in paths:
        end = out.index(b"\n", position)
        header = out[position:end].split()
        position = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            blobs[path] = out[position:position + size]
            position += size + 1
    return blobs


def context_for(pick: Pick, sizes: dict[str, int], blobs: dict[str, bytes]) -> list[str]:
    """What the linter reads beside a file: pins up the folders, a compose file's build, a chart."""
    all_paths = frozenset(sizes)
    found: list[str] = []
    parts = PurePosixPath(pick.path).parts
    for depth in range(len(parts) - 1, -1, -1):
        folder = "/".join(parts[:depth])
        prefix = f"{folder}/" if folder else ""
        for path in sizes:
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix):]
            name = rest.split("/")[0]
            if "/" in rest and not (name == "requirements" and rest.count("/") == 1):
                continue
            lower = PurePosixPath(rest).name.lower()
            if PurePosixPath(rest).name in PIN_NAMES or (lower.endswith(".txt") and lower.startswith(("requirements", "constraints"))) \
                    or (name == "requirements" and lower.endswith(".txt")):
                found.append(path)
    folder = str(PurePosixPath(pick.path).parent)
    folder = "" if folder == "." else folder
    prefix = f"{folder}/" if folder else ""
    if pick.kind == "compose":
        text = blobs.get(pick.path, b"").decode("utf-8", "replace")
        contexts = {prefix}
        for match in re.finditer(r"^\s*(?:context|build):\s*['\"]?([^'\"\s#]+)", text, re.MULTILINE):
            target = str(PurePosixPath(folder, match.group(1)))
            contexts.add("" if target == "." else str(PurePosixPath(target)).lstrip("./") + "/")
        for path in sizes:
            name = PurePosixPath(path).name
            parent = str(PurePosixPath(path).parent)
            parent_prefix = "" if parent == "." else parent + "/"
            if parent_prefix in contexts and (name.lower().startswith("dockerfile") or name == ".env" or name.endswith(".env")):
                found.append(path)
    root = chart_root(pick.path, all_paths) if pick.kind in ("helm", "negative") else None
    if root is not None:
        for path, size in sizes.items():
            if path.startswith(root + "/") and path.count("/") - root.count("/") <= 3 and size < MAX_BYTES \
                    and path.endswith((".yaml", ".yml", ".tpl", ".txt")) and "/charts/" not in path[len(root):]:
                found.append(path)
    return [p for p in dict.fromkeys(found) if p != pick.path and sizes.get(p, MAX_BYTES) < 4_000_000]


def scan(repo: Repository) -> tuple[list[Pick], dict[str, int], dict[str, bytes]]:
    sizes = ls_tree(repo)
    candidates = [p for p, size in sizes.items()
                  if size <= MAX_BYTES and file_type(p) is not None and not IGNORED_DIRS.search(p)]
    blobs = read_blobs(repo, candidates)
    all_paths = frozenset(sizes)
    picks = [pick for path in candidates if (pick := classify(path, blobs.get(path, b""), all_paths)) is not None]
    return picks, sizes, blobs


KIND_ORDER = (*TASK_KINDS, "helm", "skypilot", "notebook", "kubernetes", "compose", "negative", "dockerfile", "shell", "markdown", "python")


def choose(picks: list[Pick], counts: collections.Counter[str]) -> list[Pick]:
    """Up to MAX_PER_REPO files, one per kind first, the kinds the corpus has fewest of first."""
    by_kind: dict[str, list[Pick]] = collections.defaultdict(list)
    for pick in picks:
        by_kind[pick.kind].append(pick)
    for candidates in by_kind.values():  # servers before scripts, shallower paths before deep ones
        candidates.sort(key=lambda p: ("weaker" in p.why, "script" in p.why, "client" in p.why,
                                          bool(VENDORED.search(p.path)), p.path.count("/"), p.path))
    chosen: list[Pick] = []
    while len(chosen) < MAX_PER_REPO and any(by_kind.values()):
        kind = min((k for k, v in by_kind.items() if v), key=lambda k: (counts[k], KIND_ORDER.index(k) if k in KIND_ORDER else 99))
        chosen.append(by_kind[kind].pop(0))
        counts[kind] += 1
    return chosen


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "manifest.tsv")
    parser.add_argument("--add", action="store_true",
                        help="keep the manifest's rows and append only repositories it does not have yet")
    parser.add_argument("--only", default="", help="take only files of these kinds (comma-separated), e.g. the issue-38 kinds: "
                        + ",".join(TASK_KINDS))
    args = parser.parse_args(argv)
    rows: list[tuple[str, ...]] = []
    counts: collections.Counter[str] = collections.Counter()
    repos = sorted(find_repositories(args.mirrors), key=lambda r: r.name.lower())
    if args.add and args.out.is_file():
        with args.out.open(encoding="utf-8") as handle:
            rows = [tuple(line.rstrip("\n").split("\t")) for line in handle][1:]
        counts.update(row[3] for row in rows if row[3] != "context")
        have = {row[0] for row in rows}
        repos = [repo for repo in repos if repo.name not in have]
    empty = []
    for repo in repos:
        try:
            picks, sizes, blobs = scan(repo)
        except (subprocess.CalledProcessError, ValueError) as exc:
            print(f"{repo.name}: skipped ({exc})", file=sys.stderr)
            continue
        if args.only:
            picks = [pick for pick in picks if pick.kind in args.only.split(",")]
        chosen = choose(picks, counts)
        if not chosen:
            empty.append(repo.name)
            continue
        context: list[str] = []
        for pick in chosen:
            rows.append((repo.name, repo.commit, pick.path, pick.kind, pick.why))
            context += context_for(pick, sizes, blobs)
        for path in dict.fromkeys(context):
            if path not in {p.path for p in chosen}:
                rows.append((repo.name, repo.commit, path, "context", "pins/build/chart beside a corpus file"))
    with args.out.open("w", encoding="utf-8", newline="\n") as out:
        out.write("\t".join(HEADER) + "\n")
        for row in rows:
            out.write("\t".join(field.replace("\t", " ") for field in row) + "\n")
    files = [r for r in rows if r[3] != "context"]
    print(f"{len({r[0] for r in files})} repositories, {len(files)} files, {len(rows) - len(files)} context rows; "
          f"{len(empty)} repositories had nothing to take", file=sys.stderr)
    for kind, count in sorted(collections.Counter(r[3] for r in files).items()):
        print(f"  {kind}: {count}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
