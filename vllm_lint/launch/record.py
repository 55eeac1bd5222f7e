"""Value types of the launch record (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_lint.diagnostics import Applicability, Severity
from vllm_lint.values import Value


@dataclass(frozen=True, slots=True)
class Setting:
    """One engine setting as written: a keyword argument or a command-line flag."""

    key: str  # canonical EngineArgs field (``gpu_memory_utilization``), or the raw name when unknown
    spelled: str  # as the user wrote it: ``gpu_memory_utilization``, ``--gpu-memory``
    known: bool  # vLLM has this setting
    value: Value | None  # None when not statically known
    anchor: object  # where the whole setting is written (front-end specific)
    value_anchor: object | None = None
    suggestions: tuple[str, ...] = ()  # did-you-mean candidates, spelled for this surface
    bad_choice: tuple[str, ...] | None = None  # the valid choices when the value is not one of them
    # Set on the args object after it is built (``engine_args.x = ...``): an unknown name there raises
    # nothing, it is simply never read.
    attribute: bool = False


@dataclass(frozen=True, slots=True)
class Reach:
    """Where clients can reach the server a launch starts, as far as its file declares it."""

    known: bool = True  # False: decided elsewhere (the containers a Dockerfile's image runs in, a Kubernetes Service)
    local: bool = True  # a process on this machine, or a container on the host's network
    names: tuple[str, ...] = ()  # its names on a container network (compose service, container_name, docker --name)
    # (host port, container port) pairs it publishes (None where a side is not known); None: not known at all
    published: tuple[tuple[int | None, int | None], ...] | None = ()


@dataclass(slots=True)
class Launch:
    """One start of vLLM, read from a file: its entrypoint and settings."""
    surface: str  # "python" or "command"
    # "LLM", "EngineArgs", "AsyncEngineArgs", "serve", "api_server"; or "module": ``python -m vllm.X``
    # for a module vLLM does not have (``module`` names it; only VLL303 looks at such a launch)
    kind: str
    settings: list[Setting]
    anchor: object  # where to report a missing setting
    opaque: bool = False  # **kwargs, from_cli_args, a config file: settings may be set elsewhere
    serves_requests: bool = False
    gpu_count: int | None = None  # GPUs declared for the same container or command
    gpu_count_anchor: object | None = None
    # The GPU type it runs on, as ``vllm_lint.gpus`` names it ("A100-80GB"), where the deployment declares it
    # (a node label or selector, an accelerator name, an instance type); None: not declared next to it.
    gpu_type: str | None = None
    gpu_type_anchor: object | None = None
    # Command-line launches (VLL401, VLL403, VLL404); Python launches keep the defaults.
    # "serve" or "api_server" for a server started from a command line; "image" for the arguments given to
    # vLLM's own image, whose entrypoint (either of the two) is not written there
    entrypoint: str | None = None
    entrypoint_anchor: object | None = None  # where the entrypoint (``python -m ...api_server``) is written
    env: dict[str, Value | None] = field(default_factory=dict)  # environment known for the launch
    container: bool = False  # runs in a container whose runtime settings are declared next to it
    host_ipc: bool = False  # docker --ipc=host, compose ipc: host, k8s hostIPC: true
    shm_bytes: int | None = None  # declared shared memory size (0: none declared)
    module: str | None = None  # kind "module": the dotted module path as written
    image: str | None = None  # the container image it runs in, when declared next to it (docker run, compose, k8s)
    testing: bool = False  # written in a test, CI or debugging file, not a production deployment
    # started by a CI pipeline's step: a server for the job's tests on its runner, gone when the job ends
    ci_job: bool = False
    # vLLM's CPU build installed for it where the launch itself does not say (an earlier step of its CI job)
    cpu_build: bool = False
    reach: Reach = field(default_factory=Reach)
    # The vLLM releases the launch is judged against (a vllm_api.VllmApi): the file's target, or the
    # release of the vllm/vllm-openai image a container runs; None: the newest release.
    api: object | None = None
    pinned_image: str | None = None  # the vllm/vllm-openai image whose tag chose ``api``, if one did
    # Why the launch is opaque: short stable phrases ("**kwargs", "unresolved variable $ARGS"), for
    # ``check --explain-opaque`` and whoever counts what the readers leave unread.
    opaque_reasons: list[str] = field(default_factory=list)

    def left_opaque(self, reason: str) -> None:
        """Mark the launch opaque (settings may be set where the reader cannot see), saying why."""
        self.opaque = True
        if reason not in self.opaque_reasons:
            self.opaque_reasons.append(reason)

    def target_api(self):
        """The ``vllm_api.VllmApi`` the launch is judged against (the newest release when none was set)."""
        if self.api is not None:
            return self.api
        from vllm_lint.vllm_api import load_api

        return load_api()

    def get(self, key: str) -> Setting | None:
        for setting in self.settings:
            if setting.key == key:
                return setting
        return None

    def has(self, key: str) -> bool:
        return self.get(key) is not None


@dataclass(frozen=True, slots=True)
class ImageReference:
    """A container image a deployment file names: Dockerfile ``FROM``, compose or Kubernetes ``image:``,
    ``docker run IMAGE``."""

    reference: str  # with variables expanded: ``vllm/vllm-openai:latest``
    anchor: object  # where it is written (front-end specific)
    exact: bool  # the text at ``anchor`` is ``reference`` character for character, so a fix can replace it


@dataclass(frozen=True, slots=True)
class SetValue:
    """Fix: give a setting another value."""
    setting: Setting
    value: object


@dataclass(frozen=True, slots=True)
class AddSetting:
    """Fix: add a setting."""
    key: str
    value: object


@dataclass(frozen=True, slots=True)
class Rename:
    """Fix: spell a setting another way."""
    setting: Setting
    new_key: str


@dataclass(frozen=True, slots=True)
class RemoveSetting:
    """Fix: remove a setting."""
    setting: Setting


@dataclass(frozen=True, slots=True)
class RewriteEntrypoint:
    """Rewrite a deprecated entrypoint to ``vllm serve MODEL ...rest`` (moving ``--model X``)."""

    model: Setting | None


@dataclass(frozen=True, slots=True)
class PinImage:
    """Replace an image reference with ``reference`` (the same image at a fixed version)."""

    image: ImageReference
    reference: str


FixIntent = SetValue | AddSetting | Rename | RemoveSetting | RewriteEntrypoint | PinImage


@dataclass(frozen=True, slots=True)
class LaunchFinding:
    """What a rule over a launch found, and how to fix it."""
    message: str
    anchor: object
    severity: Severity | None = None  # None: the rule's own severity
    fix: FixIntent | None = None
    fix_title: str | None = None  # None: the rule's own fix title (its YAML's ``fix.title``)
    applicability: Applicability = Applicability.UNSAFE
    # The code its checker is registered for (``@launch_rule``), which the registry fills in.
    code: str = field(default="", kw_only=True)
