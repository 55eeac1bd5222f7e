"""Find vLLM launches in command lines (lists of positioned words) and build launch records.

Wrappers are looked through (``exec``, ``env VAR=...``, ``VAR=... cmd``, ``nohup``,
``sudo``, ``uv run``, ``bash -c '...'``, ``docker run ... IMAGE ARGS``); the heads
recognised are ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``
and ``python -m vllm.entrypoints.cli.main serve``. ``python -m vllm.X`` with a
module missing from the API snapshot becomes a "module" launch (VLL303).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vllm_lint.cmdline.launchers import peel
from vllm_lint.cmdline.launchers import program_name as _basename
from vllm_lint.cmdline.serve_args import FlagTable, Span, flag_table, parse_serve_args
from vllm_lint.cmdline.shell import (
    Command,
    Environment,
    ShellSyntaxError,
    Word,
    is_assignment,
    tokenize,
)
from vllm_lint.launch.record import ImageReference, Launch, Reach
from vllm_lint.values import Value
from vllm_lint.lazy_re import lazy_compile

if TYPE_CHECKING:
    from pathlib import Path

    from vllm_lint.vllm_api import VllmApi

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CLI_MODULE = "vllm.entrypoints.cli.main"
_PYTHON = lazy_compile(r"^python(\d+(\.\d+)?)?$")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ash"})
# docker/podman run options that take a separate value (docker's own CLI, not vLLM's)
_DOCKER_VALUE_OPTIONS = frozenset(
    ["-e", "--env", "--env-file", "-p", "--publish", "-v", "--volume", "--name", "--ipc", "--shm-size", "--runtime", "--gpus", "-w", "--workdir", "--network", "--net", "--entrypoint", "-u", "--user", "--mount", "--device", "--restart", "-m", "--memory", "-l", "--label", "--ulimit", "--cpus", "--cpuset-cpus", "--platform", "--pull", "-h", "--hostname", "--add-host", "--log-driver", "--log-opt", "--security-opt", "--cap-add", "--cap-drop", "--tmpfs", "--health-cmd", "--stop-signal", "--group-add", "--pid", "--uts", "--expose", "--dns", "--memory-swap", "--device-cgroup-rule", "--cgroupns", "--label-file", "--mac-address", "--ip", "--network-alias"]
)
# What ``python -m`` takes: a dotted name of identifiers (``vllm.`` or ``vllm..x`` is none).
_MODULE_NAME = lazy_compile(r"\w+(?:\.\w+)*")


def unknown_vllm_module(module: str, modules: frozenset[str] | set[str]) -> bool:
    """Whether ``-m MODULE`` is a launch of its own kind: a vLLM module (a well-formed name) the API snapshot lacks."""
    return (module == "vllm" or module.startswith("vllm.")) and module not in modules and _MODULE_NAME.fullmatch(module) is not None


_OPENAI_IMAGE = lazy_compile(r"(^|/)vllm-openai(:|@|$)|(^|/)vllm/vllm(-[a-z]+)?(:|@|$)")


@dataclass(slots=True)
class Container:
    """What a container runtime declares next to the command (docker run, compose, k8s)."""

    gpu_count: int | None = None
    gpu_anchor: Span | None = None
    gpu_type: str | None = None  # as vllm_lint.gpus names it, where a node label, selector or accelerator says
    gpu_type_anchor: Span | None = None
    host_ipc: bool = False
    shm_bytes: int | None = None
    env: dict[str, Value | None] = field(default_factory=dict)
    # A container runtime (docker, compose, Kubernetes), whose IPC and shared memory limits apply; False
    # for a machine that only declares its GPUs (a SkyPilot task).
    runtime: bool = True
    image: str | None = None
    # how clients reach it (Reach): names on the container network, published ports, the host's network
    names: tuple[str, ...] = ()
    published: tuple[tuple[int | None, int | None], ...] | None = ()
    host_network: bool = False
    # True where the file says how clients reach it (docker run, compose); elsewhere a runtime outside the
    # file decides (a Kubernetes Service, a cloud task)
    reach_known: bool = False

    def publish(self, mapping: str | None) -> None:
        """A ``-p``/``ports:`` entry: ``[ip:]host:container[/proto]`` or ``container``."""
        pair = port_mapping(mapping)
        if pair is None or self.published is None:
            self.published = None
            return
        self.published = (*self.published, pair)

    @property
    def reach(self) -> Reach:
        if not self.reach_known:
            return Reach(known=False)
        return Reach(local=self.host_network, names=self.names, published=self.published)


@dataclass(slots=True)
class Found:
    """A launch found in a command line, with what its fixes edit."""
    launch: Launch
    head: Span | None  # the entrypoint words to replace for VLL401 (None: not rewritable)
    fixable: bool  # written as shell text, so edits can keep its layout
    words: list[Word] = field(default_factory=list)
    command_start: int = 0
    # Per setting of the launch, the conditions under which it is written (None: all always are), and
    # the conditions of the launch's own first word (a launch inside an ``{{ if }}`` block).
    conditions: list[frozenset] | None = None
    head_condition: frozenset = frozenset()
    joined: "Joined | None" = None  # read across two files: a wrapper script run with this file's words
    reader: str = ""  # the kind of text it was read in: "shell", "dockerfile", "helm", "skypilot", ...


@dataclass(slots=True)
class Joined:
    """A launch in a script that another file runs with its own words as the script's arguments (a
    Dockerfile's ENTRYPOINT script run with its CMD). Offsets from ``foreign`` on are the script's: a
    finding there is reported at ``anchor`` (where this file names the script), and only when the script
    read alone, which its own lint does, says nothing of that code; ``alone`` is that reading's launch."""

    foreign: int
    anchor: Span
    alone: Found | None
    note: str  # added to the messages of what is reported at ``anchor``

    def placed(self, found: Found, findings: list, check) -> list:
        """``findings`` of ``found`` as this file reports them; ``check``: a launch's findings."""
        from dataclasses import replace

        reported = {finding.code for finding in check(self.alone)} if self.alone is not None else set()
        kept = []
        for finding in findings:
            span = finding.anchor if isinstance(finding.anchor, Span) else found.launch.anchor
            if not isinstance(span, Span) or span.start < self.foreign:
                kept.append(finding)
            elif finding.code not in reported:
                kept.append(replace(finding, anchor=self.anchor, fix=None, message=f"{finding.message} ({self.note})"))
        if not isinstance(found.launch.anchor, Span) or found.launch.anchor.start >= self.foreign:
            found.launch.anchor = self.anchor
        return kept


@dataclass(slots=True)
class Embedded:
    """A text of another kind inside the one read (a here-document's manifest, a unit that cloud-init
    writes out), linted as ``kind`` after it: whole lines, from offset ``start`` to ``end``; or ``view``,
    the surface's own view of the file for it (a unit's commands), read with ``env`` as ``reader``.
    ``expands``: a shell fills in its ``$VAR`` before anyone reads it (an unquoted here-document)."""

    kind: str
    start: int = 0
    end: int = 0
    expands: bool = False
    strip_tabs: bool = False  # its lines' leading tabs are the shell's (``<<-``), not the text's
    view: object | None = None
    env: Environment | None = None
    reader: str | None = None


_MANIFEST = lazy_compile(r"^(?:apiVersion|kind):", re.MULTILINE)
_COMPOSE = lazy_compile(r"^services:", re.MULTILINE)
_UNIT = lazy_compile(r"^\[(?:Unit|Service)\]", re.MULTILINE)
_DOCKERFILE = lazy_compile(r"^(?:#.*\n|\s*\n|ARG .*\n)*FROM\s", re.IGNORECASE)
_KUBECTL_FEEDS = frozenset({"apply", "create", "replace"})


def heredoc_kind(names: list[str], fed: list[str], target: str | None, body: str) -> str | None:
    """What a here-document is, from the command that takes it (``names``: its words' programs), the
    command a pipe feeds it to (``fed``), the file it is written to and its text: "script" (read as
    shell), "kubernetes" (YAML, compose or Kubernetes by content), "dockerfile", "compose", "systemd", or
    None (not read: Python, or text nothing runs)."""
    for words in (names, fed):
        if words and words[0] in ("kubectl", "oc") and _KUBECTL_FEEDS & set(words):
            return "kubernetes"
    if any(name.startswith("python") for name in names):
        return None
    if any(name in _SHELLS or name == "ssh" for name in (*names, *fed[:1])):
        return "script"
    if not any(name in ("cat", "tee") for name in names):
        return None
    if target is not None:
        name = target.strip("\"'").rsplit("/", 1)[-1]
        if name in ("Dockerfile", "Containerfile") or name.startswith("Dockerfile.") or name.endswith(".dockerfile"):
            return "dockerfile"
        if re.match(r"^(docker-)?compose([.-].*)?\.ya?ml$", name):
            return "compose"
        if name.endswith((".yaml", ".yml")):
            return "kubernetes"
        if name.endswith(".service"):
            return "systemd"
        if name.endswith(".py") or name.endswith(".json"):
            return None
    if _MANIFEST.search(body):
        return "kubernetes"
    if _COMPOSE.search(body):
        return "compose"
    if _UNIT.search(body):
        return "systemd"
    if _DOCKERFILE.match(body):
        return "dockerfile"
    return "script"


def _tee_target(words: list[Word]) -> str | None:
    """The file ``tee FILE`` (``sudo tee``) writes."""
    for index, word in enumerate(words):
        if _basename(word) == "tee":
            rest = [w.raw for w in words[index + 1 :] if not w.raw.startswith("-")]
            return rest[0] if rest else None
    return None


def parse_size(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", str(text), re.IGNORECASE)
    if match is None:
        return None
    factor = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    return int(float(match.group(1)) * factor)


def port_mapping(text: str | None) -> tuple[int | None, int | None] | None:
    """(host port, container port) of a published-port entry; None when it is not a single port pair."""
    if text is None:
        return None
    parts = str(text).strip().strip("\"'").split("/", 1)[0].split(":")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts[-2:] if p) or not parts[-1].isdigit():
        return None
    container = int(parts[-1])
    host = parts[-2] if len(parts) >= 2 else ""
    return (int(host) if host.isdigit() else None), container


def gpus_from_devices(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip().strip("\"'")
    if text.startswith("device="):
        return len([d for d in text[len("device=") :].split(",") if d.strip()])
    if text.isdigit():
        return int(text)
    return None


def make_opaque(word: Word, spans: tuple[tuple[int, int], ...], text: str, base: int) -> None:
    """Make ``word`` unknown where it touches one of ``spans``, keeping a plain literal before it
    (``--max-model-len={n}`` still names its flag)."""
    touched = [start for start, end in spans if start < word.end and word.start < end]
    if not touched:
        return
    prefix = text[word.start - base : max(min(touched), word.start) - base]
    plain = prefix and not any(c in prefix for c in "'\"\\$`")
    word.parts = [("lit", prefix), ("unknown",)] if plain else [("unknown",)]


# a script that changes its arguments or runs them in a function (where "$@" is the function's)
_CHANGES_ARGUMENTS = lazy_compile(r"\bshift\b|\bset\s+--|\bgetopts\b|^\s*(?:function\s+\w|\w[\w-]*\s*\(\s*\))", re.MULTILINE)
_ARRAY_REFERENCE = lazy_compile(r'^"?\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"?$')
_VARIABLE_REFERENCE = lazy_compile(r'^"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?$')


def _read_into(words: list[Word], env: Environment) -> None:
    """``read -ra NAME`` (or ``read NAME...``): variables whose values come in at run time."""
    names = [w.raw for w in words if w.raw.isidentifier()]
    as_array = any(w.raw.startswith("-") and "a" in w.raw[1:] for w in words)
    for name in names:
        env.vars[name] = None
        env.unknown_why[name] = "filled by read at run time"
        if as_array:
            env.arrays[name] = None


def _arrays_expanded(words: list[Word], env: Environment) -> list[Word]:
    """``"${args[@]}"`` as the elements of ``args=(...)``, each where it was written."""
    if not env.arrays:
        return words
    result = []
    for word in words:
        match = _ARRAY_REFERENCE.match(word.raw)
        elements = env.arrays.get(match.group(1)) if match else None
        if elements is None:
            if match is not None and word.why is None and match.group(1) in env.unknown_why:
                word.why = f"unresolved array ${match.group(1)}[@] ({env.unknown_why[match.group(1)]})"
            result.append(word)
            continue
        for element in elements:
            copy = Word(element.raw, element.start, element.end, list(element.parts), element.quoted, single=True)
            copy.condition, copy.why = element.condition | word.condition, element.why
            copy.nonempty = element.nonempty | word.nonempty
            result.append(copy)
    return result


_ALL_ARGUMENTS = frozenset({'"$@"', "$@", '"${@}"', "${@}"})


def _arguments_expanded(words: list[Word], env: Environment) -> list[Word]:
    """``"$@"`` as the script's arguments, when they are known (the very words, where they were written)."""
    if env.positional is None or not any(word.raw in _ALL_ARGUMENTS for word in words):
        return words
    return [item for word in words for item in (env.positional if word.raw in _ALL_ARGUMENTS else [word])]


def _captured_heredoc(word: Word):
    """The here-document of ``NAME=$(cat <<EOF ... EOF)``, or None."""
    name, _, value = word.raw.partition("=")
    if not (value.startswith("$(") and value.endswith(")")):
        return None
    base = word.start + len(name) + 1 + 2
    try:
        commands = tokenize(value[2:-1], base)
    except ShellSyntaxError:
        return None
    if len(commands) == 1 and commands[0].words and commands[0].words[0].raw == "cat" and len(commands[0].heredocs) == 1:
        return commands[0].heredocs[0]
    return None


def _guarded(words: list[Word], env: Environment) -> list[Word]:
    """Words of ``${NAME:+...}`` as ``env`` decides them: always there when NAME holds a non-empty value,
    gone when it holds an empty one, conditional when NAME's value is not known."""
    kept = []
    for word in words:
        known = env.vars.get(word.guard) if word.guard is not None else None
        if known is not None:
            if str(known.value) == "":
                continue
            word.condition = frozenset(c for c in word.condition if c != ("${NAME:+...}", word.guard))
        kept.append(word)
    return kept


MAX_BRANCH_RENDERINGS = 8


def _branch_renderings(words: list[Word]) -> list[list[Word]] | None:
    """The command once per choice of branch where its program sits in two branches of one template ``if``
    (``{{ if }}- /opt/venv/bin/vllm{{ else }}- vllm{{ end }}``): each branch is a launch of its own, with
    the other branches' words left out; None when the first word is in no such block. (Flags in the
    branches of an ``if`` are conditions of the one launch: ``cmdline.conditions``.)"""
    branches: dict[object, set[int]] = {}
    for word in words:
        for key in word.condition:
            if isinstance(key, tuple) and len(key) == 2 and key[0] == "template" and isinstance(key[1], tuple):
                branches.setdefault(key[1][0], set()).add(key[1][1])
    heads = {key[1][0] for key in (words[0].condition if words else ()) if isinstance(key, tuple) and len(key) == 2 and key[0] == "template" and isinstance(key[1], tuple)}
    exclusive = {block: sorted(taken) for block, taken in branches.items() if len(taken) > 1 and block in heads}
    if not exclusive:
        return None
    choices: list[dict[object, int]] = [{}]
    for block, taken in sorted(exclusive.items(), key=repr):
        choices = [{**choice, block: branch} for choice in choices for branch in taken][:MAX_BRANCH_RENDERINGS]
    renderings = []
    for choice in choices:
        renderings.append([
            word for word in words
            if not any(
                isinstance(key, tuple) and len(key) == 2 and key[0] == "template" and isinstance(key[1], tuple)
                and key[1][0] in choice and key[1][1] != choice[key[1][0]]
                for key in word.condition
            )
        ])
    return renderings


class Extractor:
    """``api``: the releases the file targets. ``images_pin``: whether a ``vllm/vllm-openai`` image's
    tag picks the releases of the launch it runs (not when the target-vllm-version setting applies).
    ``mirrors``: repositories that hold vllm/vllm-openai's images (the ``vllm-images`` setting)."""

    def __init__(self, api: VllmApi, source: str, opaque: tuple[tuple[int, int], ...] = (), images_pin: bool = True,
                 mirrors: tuple[str, ...] = ()) -> None:
        self.api = api
        self.mirrors = mirrors
        self.source = source
        # Spans of the source whose text something else fills in before the shell sees it (a notebook's
        # ``{python_expression}`` in a ``!`` line): a word that touches one has an unknown value.
        self.opaque = opaque
        self.images_pin = images_pin
        self.found: list[Found] = []
        self.documents: list[Embedded] = []  # texts of other kinds it holds, linted as theirs
        self._image: tuple[VllmApi, str | None] | None = None  # (api, image) of the container being read
        self.images: list[ImageReference] = []
        self.reader = ""  # the kind of text being read, stamped on each launch found (``Found.reader``)
        # A template's values file: where a value's origin ("values.yaml a.b") is written
        # (surfaces.templates.Template.values_locations), for findings' related locations.
        self.values_locations: Callable[[str], list[tuple[Path, int, int, int, int, str]]] | None = None

    @property
    def table(self) -> FlagTable:
        """``vllm serve``'s flags in the releases the file targets."""
        return flag_table(self.api)

    def image(self, reference: str | None, span: Span, exact: bool) -> None:
        """A container image the file names (its value statically known), for the image rules."""
        if reference:
            self.images.append(ImageReference(reference, span, exact))

    # -- shell scripts -------------------------------------------------------------------------
    def script(self, text: str, env: Environment, base: int = 0, container: Container | None = None, fixable: bool = True) -> None:
        from vllm_lint.cmdline.shell_grammar import read_commands

        commands = read_commands(text, base)
        if self.opaque:
            for command in commands:
                for word in command.words:
                    make_opaque(word, self.opaque, text, base)
        self.run_commands(commands, env, container, fixable)

    def run_commands(self, commands: list[Command], env: Environment, container: Container | None, fixable: bool) -> None:
        """Simple commands in script order: assignments and ``export`` feed ``env``, the rest may launch vLLM."""
        for command in commands:
            words = command.words
            if all(is_assignment(w) for w in words):
                for w in words:
                    self._assign(w, env, command)
                continue
            head = words[0].raw
            if head in ("export", "readonly", "declare", "local", "typeset"):
                for w in words[1:]:
                    if not self._assign(w, env, command) and not w.raw.startswith("-"):
                        if w.literal and w.raw.isidentifier():
                            env.vars.setdefault(w.raw, None)
                        else:
                            env.vars.setdefault("VLLM_API_KEY", None)  # export $(cat .env | xargs): anything
                continue
            if head in ("source", ".") and len(words) > 1:
                env.vars.setdefault("VLLM_API_KEY", None)  # a sourced env file may set any variable
                continue
            if head == "read":
                _read_into(words[1:], env)
                continue
            self._heredocs(command, env, container)
            self.command(words, env, container, fixable)

    def _assign(self, word: Word, env: Environment, command: Command) -> bool:
        """``NAME=value`` (or an array) into ``env``; a conditional one leaves the value unknown, a
        conditional array append makes its elements conditional; ``cmd=$(cat <<EOF ...)`` keeps the body."""
        if not is_assignment(word):
            return False
        if word.array is not None:
            word.array = _arrays_expanded(word.array, env)  # copy=("${cmd[@]}" --more): cmd's elements
        if word.array is not None and command.condition:
            for element in word.array:
                element.condition = element.condition | command.condition
        env.assign(word)
        name = word.raw.split("=", 1)[0].rstrip("+")
        if command.condition and word.array is None:
            env.vars[name] = None
            env.unknown_why.setdefault(name, "set under a condition (if, case, && or a loop)")
        heredoc = _captured_heredoc(word)
        if heredoc is not None:
            env.scripts[name] = heredoc
        return True

    def _heredocs(self, command: Command, env: Environment, container: Container | None) -> None:
        """Here-documents: scripts fed to a shell (``bash <<EOF``, ``ssh host <<EOF``) or written out by
        ``cat``/``tee`` (a launch script written and run later) are read here; a manifest fed to ``kubectl
        apply -f -``, or a Dockerfile, compose file or unit written out, is kept as a text of its kind."""
        if not command.heredocs:
            return
        names = [_basename(env.expand(w)) for w in command.words]
        for heredoc in command.heredocs:
            fed = [_basename(env.expand(w)) for w in heredoc.piped_to or ()]
            kind = heredoc_kind(names, fed, heredoc.written_to or _tee_target(command.words), self.source[heredoc.start : heredoc.end])
            if kind == "script":
                self.heredoc_script(heredoc, env, container)
            elif kind is not None and "vllm" in self.source[heredoc.start : heredoc.end].lower():
                self.documents.append(Embedded(kind, heredoc.start, heredoc.end, expands=not heredoc.quoted,
                                               strip_tabs=heredoc.strip_tabs))

    def heredoc_script(self, heredoc, env: Environment, container: Container | None) -> None:
        body = self.source[heredoc.start : heredoc.end]
        if "vllm" not in body.lower():
            return
        try:
            # a quoted delimiter keeps $VAR for whoever runs the script later; unquoted, it expands now
            self.script(body, Environment() if heredoc.quoted else env.copy(), heredoc.start, container, True)
        except ShellSyntaxError:
            return

    def command(self, words: list[Word], env: Environment, container: Container | None, fixable: bool) -> None:
        renderings = _branch_renderings(words)
        if renderings is not None:
            for rendering in renderings:
                self.command(rendering, env, container, fixable)
            return
        words = _arguments_expanded(_arrays_expanded(_guarded(words, env), env), env)
        if words and words[0].raw == "eval" and len(words) > 1:
            self._eval(words[1:], env, container)
            return
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
            peeled = peel(words, i, local)
            if peeled is not None:
                if peeled.script:
                    return  # a Python launcher's script: a program of its own, no vLLM command line
                if peeled.launcher.foreign_env:
                    if local is env:
                        local = env.copy()
                    local.vars.setdefault("VLLM_API_KEY", None)  # the container's own environment may set it
                if peeled.module is not None:
                    # ``torchrun ... -m MODULE ARGS``: runs as ``python -m MODULE ARGS``, not rewritable in place
                    python = Word("python", word.start, word.end, [("lit", "python")], value="python")
                    flag = Word("-m", peeled.module.start, peeled.module.end, [("lit", "-m")], value="-m")
                    rest = words[peeled.start :]
                    for w in rest:
                        local.expand(w)
                    self.launch([python, flag, *rest], local, container, False, command_start=words[0].start)
                    return
                i = peeled.start
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

    def wrapper_script(self, name: str, script: str, arguments: list[Word], env: Environment, anchor: Span) -> None:
        """A script (``name``, text ``script``) run with ``arguments`` from this file as its ``"$@"``: the
        launches that take them (``exec vllm serve "$@"``, ``exec "$@"`` of words naming vLLM), read with
        them. A launch written whole in the script is its own lint's; a script that changes its arguments
        (``shift``, ``set --``) or runs them in a function is not followed."""
        if _CHANGES_ARGUMENTS.search(script):
            return
        base = len(self.source) + 1
        combined = self.source + "\n" + script

        def read(positional: list[Word] | None) -> list[Found] | None:
            reader = Extractor(self.api, combined)
            reader.reader = self.reader
            start = env.copy()
            start.positional = positional
            try:
                reader.script(script, start, base, None, False)
            except ShellSyntaxError:
                return None
            return reader.found

        bound, alone = read(arguments), read(None) or []
        alone_at = {f.launch.anchor.start: f for f in alone if isinstance(f.launch.anchor, Span)}
        for found in bound or []:
            from_arguments = isinstance(found.launch.anchor, Span) and found.launch.anchor.start < base
            if not from_arguments and not any(w is a for w in found.words for a in arguments):
                continue
            launch_anchor = found.launch.anchor
            counterpart = alone_at.get(launch_anchor.start) if isinstance(launch_anchor, Span) and not from_arguments else None
            found.joined = Joined(base, anchor, counterpart, f"in {name}, run with the CMD's arguments")
            found.head, found.fixable = None, False
            found.words = [w for w in found.words if w.start < base]
            if found.command_start >= base:
                found.command_start = anchor.start
            self.found.append(found)

    def _eval(self, words: list[Word], env: Environment, container: Container | None) -> None:
        """``eval $cmd`` of a variable that holds a here-document, or ``eval "vllm serve ..."``."""
        match = _VARIABLE_REFERENCE.match(words[0].raw) if len(words) == 1 else None
        if match and match.group(1) in env.scripts:
            self.heredoc_script(env.scripts[match.group(1)], env, container)
            return
        if len(words) == 1 and words[0].literal:
            self.inline_script(env.expand(words[0]), env.copy(), container)

    def _shell_c(self, words: list[Word], env: Environment, container: Container | None, fixable: bool) -> None:
        for index, word in enumerate(words):
            text = env.expand(word).value or word.raw
            if text.startswith("-") and "c" in text.lstrip("-") and index + 1 < len(words):
                script = env.expand(words[index + 1])
                inner = env.copy()
                # `sh -c SCRIPT NAME ARG...`: NAME is $0, the ARGs are the script's "$@" (none when absent)
                inner.positional = [env.expand(w) for w in words[index + 3 :]]
                self.inline_script(script, inner, container)
                return
            if not text.startswith("-"):
                return

    def inline_script(self, word: Word, env: Environment, container: Container | None) -> None:
        """A script held in one word (``sh -c '...'``): map its offsets when quoting is simple."""
        raw = word.raw
        script = word.script
        if script is None and word.offsets is not None and word.value is not None:
            script = (word.value, word.offsets, ())
        if script is not None:
            text, offsets, unknown = script
            from vllm_lint.cmdline.shell_grammar import read_commands

            try:
                for command in read_commands(text, 0):
                    for w in command.words:
                        make_opaque(w, unknown, text, 0)
                        w.origin = w.origin or next((o for s, e, o in word.script_origins if s < w.end and w.start < e), None)
                        w.condition = w.condition | word.condition
                        w.start, w.end = offsets[w.start], offsets[w.end - 1] + 1
                    self.run_commands([command], env, container, word.script is None)
            except ShellSyntaxError:
                pass
            return
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" and "\\" not in raw:
            body, base, fixable = raw[1:-1], word.start + 1, True
        elif word.literal and "\\" not in raw and not word.quoted:
            body, base, fixable = raw, word.start, True
        else:
            if not word.literal:
                return
            body = "".join(p[1] for p in word.parts if p[0] == "lit")
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
        from vllm_lint.cmdline.shell_grammar import read_commands

        for command in read_commands(text, 0):
            for w in command.words:
                w.start, w.end = span.start, span.end
            words = command.words
            if all(is_assignment(w) for w in words):
                for w in words:
                    env.assign(w)
                continue
            self.command(words, env, container, fixable=False)

    def _docker_run(self, words: list[Word], env: Environment, fixable: bool, command_start: int) -> None:
        container = Container(reach_known=True)
        entrypoint: str | None = None
        i = 0
        while i < len(words):
            word = env.expand(words[i])
            text = word.value if word.value is not None else word.raw
            if not text.startswith("-"):
                break
            name, eq, inline = text.partition("=")
            if name in _DOCKER_VALUE_OPTIONS:
                value: str | None
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
                elif name in ("-p", "--publish"):
                    container.publish(value)
                elif name == "--name" and value:
                    container.names = (*container.names, value)
                elif name in ("--network", "--net"):
                    container.host_network = value == "host"
                continue
            i += 1
        if i >= len(words):
            return
        image = words[i]
        args = words[i + 1 :]
        container.image = image.value
        self.image(image.value, Span(image.start, image.end), image.raw == image.value)
        for w in args:
            env.expand(w)
        merged = env.copy()
        merged.vars.update(container.env)
        cuda = container.env.get("CUDA_VISIBLE_DEVICES")
        if container.gpu_count is None and cuda is not None:
            container.gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
        image_name = image.value or ""
        if entrypoint is None and self.runs_vllm_image(image_name) and (not args or _basename(args[0]) not in ("vllm", "python", "python3", "bash", "sh")):
            self.image_default(args, merged, container, fixable, image_name, Span(image.start, image.end), command_start)
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
            self._serve(words[2:], env, container, fixable, head=head, kind="serve", anchor=head, command_start=start, head_condition=first.condition)
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
            self._serve(rest, env, container, fixable, head=head, kind="api_server", anchor=head, command_start=start, head_condition=first.condition)
            return
        if module == CLI_MODULE and rest and rest[0].value == "serve":
            head = Span(first.start, rest[0].end)
            self._serve(rest[1:], env, container, fixable, head=head, kind="serve", anchor=head, command_start=start, head_condition=first.condition)
            return
        api, image = self._image if self._image is not None else (self.api, None)
        if unknown_vllm_module(module, api.modules):
            span = Span(module_word.start, module_word.end)
            launch = Launch(surface="command", kind="module", settings=[], anchor=span, module=module, api=api, pinned_image=image)
            self.found.append(Found(launch, None, False, [], start, reader=self.reader))

    # -- containers of the vllm/vllm-openai image -------------------------------------------------
    def runs_vllm_image(self, image: str) -> bool:
        """Whether ``image`` is vLLM's own server image (or a configured mirror of it), whose ENTRYPOINT
        starts the server with the container's arguments."""
        if _OPENAI_IMAGE.search(image):
            return True
        from vllm_lint.vllm_api.targets import mirrored_repository

        return mirrored_repository(image, self.mirrors) is not None

    def image_api(self, image: str) -> tuple[VllmApi, str | None]:
        """The releases a container of ``image`` runs, and the image when its tag chose them."""
        if not self.images_pin or not self.runs_vllm_image(image):
            # not vLLM's image: what was decided outside stands (a compose service built from a pinning Dockerfile)
            return self._image if self._image is not None else (self.api, None)
        from vllm_lint.vllm_api import load_api
        from vllm_lint.vllm_api.targets import image_target

        target = image_target(image, "image", self.mirrors)
        if target is None:
            return self.api, None
        return load_api(target.specifier), image

    @contextmanager
    def built_from(self, specifier: str, label: str) -> Iterator[None]:
        """Launches read inside run in an image built from a Dockerfile pinning ``specifier`` (``label``:
        the pin, as messages name it), unless the target-vllm-version setting decides for every file."""
        outer = self._image
        if self.images_pin:
            from vllm_lint.vllm_api import load_api

            self._image = (load_api(specifier), label)
        try:
            yield
        finally:
            self._image = outer

    @contextmanager
    def in_image(self, image: str) -> Iterator[None]:
        """Launches read inside run in a container of ``image`` (its own entrypoint or command)."""
        outer = self._image
        self._image = self.image_api(image)
        try:
            yield
        finally:
            self._image = outer

    def image_default(self, args, env, container, fixable, image: str, anchor, command_start, pin: bool = True) -> None:
        """Arguments given to vLLM's own image, which its ENTRYPOINT runs: ``vllm serve`` from 0.11.1 on,
        ``python3 -m vllm.entrypoints.openai.api_server`` before (it takes the model only as ``--model``),
        as the database read it off each release's Dockerfile. ``pin``: whether the image's tag picks the
        releases (a Dockerfile's own pin, ``pip install vllm==X`` included, is the file's target already)."""
        api, pinned = self.image_api(image) if pin else (self.api, None)
        entrypoints = api.image_entrypoints
        if len(entrypoints) > 1:
            kind = "image"  # a tag that is not known here (a template variable): either entrypoint may run
        else:
            kind = "image-api_server" if any(API_SERVER_MODULE in argv for argv in entrypoints) else "serve"
        outer = self._image
        self._image = (api, pinned)
        try:
            self._serve(args, env, container, fixable, head=None, kind=kind, anchor=anchor, command_start=command_start)
        finally:
            self._image = outer

    def _serve(self, args, env, container, fixable, head, kind, anchor, command_start, head_condition: frozenset = frozenset()) -> None:
        api, image = self._image if self._image is not None else (self.api, None)
        table = flag_table(api, "api_server" if kind in ("api_server", "image-api_server") else "serve")
        parsed = parse_serve_args(args, table, positional_model=kind in ("serve", "image"))
        if parsed.prints_only:
            return  # ``vllm serve --help``: prints and exits
        entrypoint = kind
        if kind.startswith("image"):
            # the image's own entrypoint: nothing written here to rewrite; an old image's needs --model
            kind, entrypoint = ("serve" if kind == "image" else "api_server"), "image"
        container_env = container.env if container else {}
        launch_env = {k: v for k, v in env.vars.items()}
        launch_env.update(container_env)
        gpu_count = container.gpu_count if container else None
        gpu_anchor = container.gpu_anchor if container else None
        cuda = launch_env.get("CUDA_VISIBLE_DEVICES")
        # on a machine that only declares its GPUs (a Slurm job, a cloud task), CUDA_VISIBLE_DEVICES on the
        # command narrows what this process sees (one job's GPUs shared by two servers)
        narrows = container is not None and not container.runtime and gpu_count is not None
        if (gpu_count is None or narrows) and cuda is not None and "CUDA_VISIBLE_DEVICES" in launch_env:
            gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
            gpu_anchor = None if narrows else gpu_anchor
        launch = Launch(
            surface="command",
            kind=kind,
            settings=parsed.settings,
            anchor=anchor,
            opaque=parsed.opaque,
            opaque_reasons=list(parsed.reasons),
            serves_requests=True,
            gpu_count=gpu_count,
            gpu_count_anchor=gpu_anchor,
            gpu_type=container.gpu_type if container else None,
            gpu_type_anchor=container.gpu_type_anchor if container else None,
            entrypoint=entrypoint,
            entrypoint_anchor=head or anchor,
            env=launch_env,
            container=container is not None and container.runtime,
            host_ipc=bool(container and container.host_ipc),
            shm_bytes=container.shm_bytes if container else None,
            api=api,
            pinned_image=image,
            image=container.image if container else None,
            reach=container.reach if container else Reach(),
        )
        found = Found(launch, head, fixable, list(args), command_start, parsed.conditions, reader=self.reader)
        found.head_condition = head_condition
        self.found.append(found)
