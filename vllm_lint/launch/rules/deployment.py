"""How the server is started and exposed, over the launch record of every surface."""

from __future__ import annotations

import re
from collections.abc import Iterator

from vllm_lint.diagnostics import Applicability
from vllm_lint.launch.parallelism import parallel_anchor, parallel_sizes
from vllm_lint.launch.record import ImageReference, Launch, LaunchFinding, PinImage, RewriteEntrypoint
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import launch_rule
from vllm_lint.values import as_bool


@launch_rule("VLL401")
def deprecated_entrypoint(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.entrypoint not in ("serve", "api_server"):
        return  # "image": an old image's own api_server entrypoint, whose arguments must use --model
    model = launch.get("model")
    flag_model = model if model is not None and model.spelled.startswith("-") else None
    if launch.entrypoint == "api_server":
        api = launch.target_api()
        if not api.database.api_server_deprecated & api.mask:
            return  # not deprecated yet in the releases this file targets (it warns from 0.29.0 on)
        message = (
            "`python -m vllm.entrypoints.openai.api_server` is deprecated in favour of `vllm serve MODEL`: "
            "a later vLLM release removes it and this server stops starting"
        )
        anchor = launch.entrypoint_anchor or launch.anchor
    elif flag_model is not None:
        message = (
            "`--model` on `vllm serve` is deprecated: pass the model as the positional argument "
            "(`vllm serve MODEL`) before a later release drops the flag"
        )
        anchor = flag_model.anchor
    else:
        return
    yield LaunchFinding(
        message=message,
        anchor=anchor,
        fix=RewriteEntrypoint(flag_model),
        applicability=Applicability.SAFE,
    )


_COMMIT_HASH = re.compile(r"^[0-9a-fA-F]{7,64}$")


def _pinned(setting) -> bool:
    if setting is None or setting.value is None:
        return setting is not None  # written but not statically known: give the benefit of the doubt
    return bool(_COMMIT_HASH.match(str(setting.value.value).strip()))


@launch_rule("VLL402")
def unpinned_remote_code(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("trust_remote_code")
    if setting is None or as_bool(setting.value) is not True:
        return
    revision, code_revision = launch.get("revision"), launch.get("code_revision")
    if _pinned(revision) and (code_revision is None or _pinned(code_revision)):
        return
    what = "revision" if not _pinned(revision) else "code_revision"
    yield LaunchFinding(
        message=(
            f"trust_remote_code without a pinned {what} (a commit hash): the model repository's Python runs "
            "on this server at whatever its head is at the next restart"
        ),
        anchor=setting.anchor,
    )


_LOCAL_HOSTS = ("127.", "localhost", "::1", "[::1]")


@launch_rule("VLL403")
def unauthenticated_public_server(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if launch.entrypoint not in ("serve", "api_server", "image") or launch.opaque or launch.ci_job:
        return  # a CI job's server serves its tests on the runner and stops with the job
    if launch.has("api_key") or "VLLM_API_KEY" in launch.env or launch.has("uds"):
        return
    host = launch.get("host")
    if host is not None:
        if host.value is None:
            return
        text = str(host.value.value).strip()
        if text.startswith(_LOCAL_HOSTS) or text.startswith("unix:"):
            return
        where, anchor = f"--host {text}", host.anchor
    else:
        where, anchor = "no --host (vLLM binds all interfaces)", launch.anchor
    yield LaunchFinding(
        message=(
            f"vLLM server reachable on all interfaces ({where}) with no --api-key and no VLLM_API_KEY: "
            "anyone who can reach the port can run generations on your GPUs"
        ),
        anchor=anchor,
    )


_ONE_GIB = 1 << 30


@launch_rule("VLL404")
def multi_gpu_container_without_ipc(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if not launch.container or launch.host_ipc or (launch.shm_bytes or 0) >= _ONE_GIB:
        return
    sizes = parallel_sizes(launch)
    if sizes is None or sizes[0] * sizes[1] <= 1:
        return
    yield LaunchFinding(
        message=(
            f"container runs vLLM on {sizes[0] * sizes[1]} GPUs (tensor x pipeline parallel) without host IPC "
            "or a shared memory of at least 1g: NCCL hangs or crashes at start-up (add --ipc=host / ipc: host / "
            "hostIPC: true, or --shm-size / an emptyDir Memory volume at /dev/shm)"
        ),
        anchor=parallel_anchor(launch),
    )


# ``[registry/]vllm/vllm-<variant>[:tag][@digest]``: vLLM's own images on Docker Hub and its mirrors.
_VLLM_IMAGE = re.compile(r"^(?:[^@]*/)?vllm/vllm-[a-z0-9][a-z0-9._-]*$")
_PINNABLE = "vllm/vllm-openai"  # the image whose release tags are known to be ``v<version>``


def _mirror(reference: str, mirrors: tuple[str, ...]) -> bool:
    if not mirrors:
        return False
    from vllm_lint.vllm_api.targets import mirrored_repository

    return mirrored_repository(reference, mirrors) is not None


def _floating_tag(tag: str | None) -> bool:
    return tag is None or tag == "latest" or tag.startswith("latest-") or tag == "nightly"


@launch_rule("VLL405", launches="image")
def unpinned_vllm_image(image: ImageReference, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    if "@" in image.reference:
        return  # a digest pins it, whatever the tag says
    repository, tag = image.reference, None
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = repository.rsplit(":", 1)
    mirror = _mirror(image.reference, settings.vllm_images)
    if not (_VLLM_IMAGE.match(repository) or mirror) or not _floating_tag(tag):
        return
    fix = None
    # a mirror's tags are its own to name: pinned by hand
    if not mirror and repository.rsplit("/", 2)[-2:] == _PINNABLE.split("/") and tag in (None, "latest") and image.exact:
        from vllm_lint.vllm_api import load_api

        fix = PinImage(image, f"{repository}:v{load_api().version}")  # the newest release this linter knows
    shown = f"{repository}:{tag}" if tag else f"{repository} (no tag)"
    yield LaunchFinding(
        message=(
            f"{shown} is not pinned to a release: the next pull or a restart on another node brings a different "
            "vLLM under the running deployment, and flags it renamed or removed stop the server from starting; "
            "pin a version tag or a digest"
        ),
        anchor=image.anchor,
        fix=fix,
        fix_title=f"Pin the image to {fix.reference}" if fix else None,
    )
