"""Find vLLM launches in command lines (lists of positioned words) and build launch records.

Wrappers are looked through (``exec``, ``env VAR=...``, ``VAR=... cmd``, ``nohup``,
``sudo``, ``uv run``, ``bash -c '...'``, ``docker run ... IMAGE ARGS``); the heads
recognised are ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``
and ``python -m vllm.entrypoints.cli.main serve``. ``python -m vllm.X`` with a
module missing from the API snapshot becomes a "module" launch (VLL303).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from vllm_lint.cmdline.serve_args import Span, flag_table, parse_serve_args
from vllm_lint.cmdline.shell import (
    Command,
    Environment,
    ShellSyntaxError,
    Word,
    is_assignment,
    tokenize,
)
from vllm_lint.launch.record import Launch
from vllm_lint.values import Value

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CLI_MODULE = "vllm.entrypoints.cli.main"
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WRAPPERS = frozenset({"exec", "nohup", "sudo", "time", "command", "nice", "stdbuf", "setsid", "tini", "dumb-init", "gosu"})
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "conda", "micromamba"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash"})
# docker/podman run options that take a separate value (docker's own CLI, not vLLM's)
_DOCKER_VALUE_OPTIONS = frozenset(
    ["-e", "--env", "--env-file", "-p", "--publish", "-v", "--volume", "--name", "--ipc", "--shm-size", "--runtime", "--gpus", "-w", "--workdir", "--network", "--net", "--entrypoint", "-u", "--user", "--mount", "--device", "--restart", "-m", "--memory", "-l", "--label", "--ulimit", "--cpus", "--cpuset-cpus", "--platform", "--pull", "-h", "--hostname", "--add-host", "--log-driver", "--log-opt", "--security-opt", "--cap-add", "--cap-drop", "--tmpfs", "--health-cmd", "--stop-signal", "--group-add", "--pid", "--uts", "--expose", "--dns", "--memory-swap", "--device-cgroup-rule", "--cgroupns", "--label-file", "--mac-address", "--ip", "--network-alias"]
)
_OPENAI_IMAGE = re.compile(r"(^|/)vllm-openai(:|@|$)|(^|/)vllm/vllm(-[a-z]+)?(:|@|$)")


@dataclass(slots=True)
class Container:
    """What a container runtime declares next to the command (docker run, compose, k8s)."""

    gpu_count: int | None = None
    gpu_anchor: Span | None = None
    host_ipc: bool = False
    shm_bytes: int | None = None
    env: dict[str, Value | None] = field(default_factory=dict)


@dataclass(slots=True)
class Found:
    launch: Launch
    head: Span | None  # the entrypoint words to replace for VLL401 (None: not rewritable)
    fixable: bool  # written as shell text, so edits can keep its layout
    words: list[Word] = field(default_factory=list)
    command_start: int = 0


def parse_size(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", str(text), re.IGNORECASE)
    if match is None:
        return None
    factor = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    return int(float(match.group(1)) * factor)


def gpus_from_devices(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip().strip("\"'")
    if text.startswith("device="):
        return len([d for d in text[len("device=") :].split(",") if d.strip()])
    if text.isdigit():
        return int(text)
    return None


def _basename(word: Word) -> str:
    return (word.value or "").rsplit("/", 1)[-1]


class Extractor:
    """``api``: the releases the file targets. ``images_pin``: whether a ``vllm/vllm-openai`` image's
    tag picks the releases of the launch it runs (not when the target-vllm-version setting applies)."""

    def __init__(self, api, source: str, images_pin: bool = True) -> None:
        self.api = api
        self.source = source
        self.images_pin = images_pin
        self.found: list[Found] = []
        self._image: tuple[object, str | None] | None = None  # (api, image) of the container being read

    # -- shell scripts -------------------------------------------------------------------------
    def script(self, text: str, env: Environment, base: int = 0, container: Container | None = None, fixable: bool = True) -> None:
        self.run_commands(tokenize(text, base), env, container, fixable)

    def run_commands(self, commands: list[Command], env: Environment, container: Container | None, fixable: bool) -> None:
        """Simple commands in script order: assignments and ``export`` feed ``env``, the rest may launch vLLM."""
        for command in commands:
            words = command.words
            if all(is_assignment(w) for w in words):
                for w in words:
                    env.assign(w)
                continue
            head = words[0].raw
            if head in ("export", "readonly", "declare", "local", "typeset"):
                for w in words[1:]:
                    if not env.assign(w) and not w.raw.startswith("-"):
                        env.vars.setdefault(w.raw, None)
                continue
            self.command(words, env, container, fixable)

    def command(self, words: list[Word], env: Environment, container: Container | None, fixable: bool) -> None:
        local = env
        i = 0
        while i < len(words):
            word = words[i]
            if is_assignment(word):
                if local is env:
                    local = env.copy()
                local.assign(word)
                i += 1
                continue
            local.expand(word)
            name = _basename(word)
            if name in _WRAPPERS:
                i += 1
                while i < len(words) and (words[i].raw.startswith("-")):
                    i += 1
                continue
            if name == "env":
                i += 1
                while i < len(words) and words[i].raw.startswith("-"):
                    i += 1
                continue
            if name in _RUNNERS and i + 1 < len(words) and words[i + 1].raw == "run":
                i += 2
                while i < len(words) and words[i].raw.startswith("-"):
                    i += 2 if words[i].raw in ("-n", "--name", "-p", "--prefix", "--with") else 1
                continue
            if name in _SHELLS:
                self._shell_c(words[i + 1 :], local, container, fixable)
                return
            if name in ("docker", "podman", "nerdctl") and i + 1 < len(words):
                sub = local.expand(words[i + 1]).value
                if sub in ("run", "create"):
                    self._docker_run(words[i + 2 :], local, fixable, words[0].start)
                    return
                if sub == "container" and i + 2 < len(words) and local.expand(words[i + 2]).value in ("run", "create"):
                    self._docker_run(words[i + 3 :], local, fixable, words[0].start)
                    return
                return
            break
        rest = words[i:]
        for w in rest:
            local.expand(w)
        self.launch(rest, local, container, fixable, command_start=words[0].start if words else 0)

    def _shell_c(self, words: list[Word], env: Environment, container: Container | None, fixable: bool) -> None:
        for index, word in enumerate(words):
            text = env.expand(word).value or word.raw
            if text.startswith("-") and "c" in text.lstrip("-") and index + 1 < len(words):
                script = env.expand(words[index + 1])
                self.inline_script(script, env.copy(), container)
                return
            if not text.startswith("-"):
                return

    def inline_script(self, word: Word, env: Environment, container: Container | None) -> None:
        """A script held in one word (``sh -c '...'``): map its offsets when quoting is simple."""
        raw = word.raw
        if word.offsets is not None and word.value is not None:
            try:
                for command in tokenize(word.value, 0):
                    for w in command.words:
                        w.start, w.end = word.offsets[w.start], word.offsets[w.end - 1] + 1
                    self.run_commands([command], env, container, True)
            except ShellSyntaxError:
                pass
            return
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" and "\\" not in raw:
            body, base, fixable = raw[1:-1], word.start + 1, True
        elif word.literal and "\\" not in raw and not word.quoted:
            body, base, fixable = raw, word.start, True
        else:
            body = "".join(p[1] for p in word.parts if p[0] == "lit") if word.literal else None
            if body is None:
                return
            base, fixable = word.start, False
        try:
            if fixable:
                self.script(body, env, base, container, True)
            else:
                self.script_unmapped(body, env, Span(word.start, word.end), container)
        except ShellSyntaxError:
            return

    def script_unmapped(self, text: str, env: Environment, span: Span, container: Container | None) -> None:
        """Lint text whose offsets cannot be mapped back: every word points at ``span``."""
        for command in tokenize(text, 0):
            for w in command.words:
                w.start, w.end = span.start, span.end
            words = command.words
            if all(is_assignment(w) for w in words):
                for w in words:
                    env.assign(w)
                continue
            self.command(words, env, container, fixable=False)

    def _docker_run(self, words: list[Word], env: Environment, fixable: bool, command_start: int) -> None:
        container = Container()
        entrypoint: str | None = None
        i = 0
        while i < len(words):
            word = env.expand(words[i])
            text = word.value if word.value is not None else word.raw
            if not text.startswith("-"):
                break
            name, eq, inline = text.partition("=")
            if name in _DOCKER_VALUE_OPTIONS:
                if eq:
                    value, value_span = inline, Span(word.start, word.end)
                    i += 1
                elif i + 1 < len(words):
                    nxt = env.expand(words[i + 1])
                    value, value_span = nxt.value, Span(nxt.start, nxt.end)
                    i += 2
                else:
                    i += 1
                    continue
                if name in ("-e", "--env"):
                    shown = value if value is not None else (inline if eq else words[i - 1].raw)
                    key, has_value, val = shown.strip("\"'").partition("=")
                    container.env[key] = Value(val, f"docker run {name}") if has_value and value is not None else None
                elif name == "--gpus":
                    container.gpu_count = gpus_from_devices(value)
                    container.gpu_anchor = value_span
                elif name == "--ipc":
                    container.host_ipc = value == "host"
                elif name == "--shm-size":
                    container.shm_bytes = parse_size(value)
                elif name == "--entrypoint":
                    entrypoint = value
                continue
            i += 1
        if i >= len(words):
            return
        image = words[i]
        args = words[i + 1 :]
        for w in args:
            env.expand(w)
        merged = env.copy()
        merged.vars.update(container.env)
        cuda = container.env.get("CUDA_VISIBLE_DEVICES")
        if container.gpu_count is None and cuda is not None:
            container.gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
        image_name = image.value or ""
        if entrypoint is None and _OPENAI_IMAGE.search(image_name) and (not args or _basename(args[0]) not in ("vllm", "python", "python3", "bash", "sh")):
            self.image_serve(image_name, args, merged, container, fixable, Span(image.start, image.end), command_start)
            return
        if entrypoint is not None:
            args = [Word(entrypoint, image.start, image.end, [("lit", entrypoint)], value=entrypoint), *args]
        if args:
            with self.in_image(image_name):
                self.command(args, merged, container, fixable)

    # -- launch heads --------------------------------------------------------------------------
    def launch(self, words: list[Word], env: Environment, container: Container | None, fixable: bool, command_start: int | None = None) -> None:
        """``words`` after any wrapper; ``command_start``: where the whole command (wrappers included) starts."""
        if not words:
            return
        first = words[0]
        start = first.start if command_start is None else command_start
        name = _basename(first)
        if name == "vllm" and len(words) > 1 and words[1].value == "serve":
            head = Span(first.start, words[1].end)
            self._serve(words[2:], env, container, fixable, head=head, kind="serve", anchor=head, command_start=start)
            return
        if _PYTHON.match(name):
            i = 1
            while i < len(words):
                text = words[i].value or ""
                if text == "-m" and i + 1 < len(words):
                    module_word = words[i + 1]
                    module = module_word.value or ""
                    self._module(words, i, module_word, module, env, container, fixable, first, start)
                    return
                if text.startswith("-m") and len(text) > 2:
                    return
                if text in ("-X", "-W"):
                    i += 2
                    continue
                if not text.startswith("-"):
                    return
                i += 1

    def _module(self, words, index, module_word, module, env, container, fixable, first, start) -> None:
        rest = words[index + 2 :]
        if module == API_SERVER_MODULE:
            head = Span(first.start, module_word.end)
            self._serve(rest, env, container, fixable, head=head, kind="api_server", anchor=head, command_start=start)
            return
        if module == CLI_MODULE and rest and rest[0].value == "serve":
            head = Span(first.start, rest[0].end)
            self._serve(rest[1:], env, container, fixable, head=head, kind="serve", anchor=head, command_start=start)
            return
        api, image = self._image if self._image is not None else (self.api, None)
        if (module == "vllm" or module.startswith("vllm.")) and module not in api.modules:
            span = Span(module_word.start, module_word.end)
            launch = Launch(surface="command", kind="module", settings=[], anchor=span, module=module, api=api, image=image)
            self.found.append(Found(launch, None, False, [], start))

    # -- containers of the vllm/vllm-openai image -------------------------------------------------
    def image_api(self, image: str) -> tuple[object, str | None]:
        """The releases a container of ``image`` runs, and the image when its tag chose them."""
        if not self.images_pin or not _OPENAI_IMAGE.search(image):
            return self.api, None
        from vllm_lint.vllm_api import load_api
        from vllm_lint.vllm_api.targets import image_target

        target = image_target(image, "image")
        if target is None:
            return self.api, None
        return load_api(target.specifier), image

    @contextmanager
    def in_image(self, image: str) -> Iterator[None]:
        """Launches read inside run in a container of ``image`` (its own entrypoint or command)."""
        outer = self._image
        self._image = self.image_api(image)
        try:
            yield
        finally:
            self._image = outer

    def image_serve(self, image: str, args, env, container, fixable, anchor, command_start, pin: bool = True) -> None:
        """Arguments given to the ``vllm/vllm-openai`` image's own entrypoint: ``vllm serve`` since
        the release its Dockerfile says so, ``python3 -m vllm.entrypoints.openai.api_server`` before
        (``--model`` required there). ``pin``: whether the image's tag picks the releases (a
        Dockerfile's own pin, ``pip install vllm==X`` included, is the file's target already)."""
        api, pinned = self.image_api(image) if pin else (self.api, None)
        entrypoint = getattr(api, "image_entrypoint", None) or ()
        kind = "api_server" if API_SERVER_MODULE in entrypoint else "serve"
        outer = self._image
        self._image = (api, pinned)
        try:
            self._serve(args, env, container, fixable, head=None, kind=kind, anchor=anchor, command_start=command_start, implicit=True)
        finally:
            self._image = outer

    def _serve(self, args, env, container, fixable, head, kind, anchor, command_start, implicit: bool = False) -> None:
        api, image = self._image if self._image is not None else (self.api, None)
        table = flag_table(api, "api_server" if kind == "api_server" else "serve")
        parsed = parse_serve_args(args, table, positional_model=(kind == "serve"))
        container_env = container.env if container else {}
        launch_env = {k: v for k, v in env.vars.items()}
        launch_env.update(container_env)
        gpu_count = container.gpu_count if container else None
        gpu_anchor = container.gpu_anchor if container else None
        cuda = launch_env.get("CUDA_VISIBLE_DEVICES")
        if gpu_count is None and cuda is not None and "CUDA_VISIBLE_DEVICES" in launch_env:
            gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
        launch = Launch(
            surface="command",
            kind=kind,
            settings=parsed.settings,
            anchor=anchor,
            opaque=parsed.opaque,
            serves_requests=True,
            gpu_count=gpu_count,
            gpu_count_anchor=gpu_anchor,
            entrypoint=kind,
            entrypoint_anchor=head or anchor,
            env=launch_env,
            container=container is not None,
            host_ipc=bool(container and container.host_ipc),
            shm_bytes=container.shm_bytes if container else None,
            api=api,
            image=image,
            entrypoint_implicit=implicit,
        )
        self.found.append(Found(launch, head, fixable, list(args), command_start))
