"""docker-compose and Kubernetes extractors, on pyyaml's safe ``compose`` nodes (they carry positions)."""

from __future__ import annotations

import re

from vllm_lint.cmdline.serve_args import Span
from vllm_lint.cmdline.launches import (
    _OPENAI_IMAGE,
    Container,
    Extractor,
    gpus_from_devices,
    parse_size,
)
from vllm_lint.cmdline.shell import (
    Environment,
    ShellSyntaxError,
    Word,
    _expand_inner,
    tokenize,
)
from vllm_lint.values import Value

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "Pod", "Job", "CronJob", "DaemonSet", "ReplicaSet"})
_MAX_NODES = 200_000  # bound alias expansion ("billion laughs")
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class _Budget:
    def __init__(self) -> None:
        self.left = _MAX_NODES

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            from vllm_lint.surfaces.command_lint import CommandParseError

            raise CommandParseError("YAML expands to too many nodes (alias bomb?)", line=1)


def _get(node, key: str, depth: int = 0):
    import yaml

    if not isinstance(node, yaml.MappingNode) or depth > 4:
        return None
    merged = []
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
        if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
            merged.extend(v.value if isinstance(v, yaml.SequenceNode) else [v])
    # `<<: *common` (compose's x- extension fields): keys written here win, then the merged mappings in order
    for mapping in merged[:4]:  # bounded: merge chains cannot blow up the lookup
        found = _get(mapping, key, depth + 1)
        if found is not None:
            return found
    return None


def _scalar(node) -> str | None:
    import yaml

    return node.value if isinstance(node, yaml.ScalarNode) else None


def _items(node) -> list:
    import yaml

    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _char_map(source: str, node) -> list[int] | None:
    """Offsets in ``source`` of each character of a scalar's value (plus its end), when they map 1:1."""
    start, end = node.start_mark.index, node.end_mark.index
    value = node.value
    style = node.style
    if style in (None, "", "'", '"'):
        raw = source[start:end]
        if style in (None, "") and raw == value:
            return list(range(start, end + 1))
        if style in ("'", '"') and raw[1:-1] == value and "\\" not in raw and "''" not in raw:
            return list(range(start + 1, end))
        return None
    if style in ("|", ">"):
        line_end = source.find("\n", start)
        if line_end == -1:
            return None
        pos, indent = line_end + 1, None
        chars: list[str] = []
        offsets: list[int] = []
        while pos < end:
            src_end = source.find("\n", pos)
            src_end = len(source) if src_end == -1 else src_end
            src_line = source[pos:src_end]
            if src_line.strip():
                if indent is None:
                    indent = len(src_line) - len(src_line.lstrip(" "))
                elif style == ">" and len(src_line) - len(src_line.lstrip(" ")) != indent:
                    return None  # more-indented lines keep their newlines: not worth mapping
                if offsets:
                    chars.append("\n" if style == "|" else " ")
                    offsets.append(pos - 1)
                chars.extend(src_line[indent:])
                offsets.extend(range(pos + indent, src_end))
            elif style == ">" and offsets:
                return None
            elif offsets:
                chars.append("\n")
                offsets.append(pos - 1)
            pos = src_end + 1
        joined = "".join(chars).rstrip("\n")
        stripped = value.rstrip("\n")
        if joined != stripped:
            return None
        offsets = offsets[: len(stripped)]
        last = offsets[-1] + 1 if offsets else start
        offsets.extend([last] * (len(value) + 1 - len(offsets)))
        return offsets
    return None


class _YamlWords:
    def __init__(self, source: str, extractor: Extractor, kind: str) -> None:
        self.source = source
        self.extractor = extractor
        self.kind = kind

    def expand(self, text: str, env: Environment) -> tuple[str | None, str | None]:
        if self.kind == "kubernetes":
            unknown = False

            def substitute(match: re.Match) -> str:
                nonlocal unknown
                known = env.vars.get(match.group(1))
                if known is None:
                    unknown = True
                    return ""
                return str(known.value)

            result = _K8S_VAR.sub(substitute, text)
            return (None, None) if unknown else (result, None)
        if "$" not in text:
            return text, None
        parts: list = []
        try:
            _expand_inner(text.replace("$$", "\0"), parts)
        except ShellSyntaxError:
            return None, None
        value, origin = env.expand_parts(parts)
        return (value.replace("\0", "$") if value is not None else None), origin

    def sequence_words(self, node, env: Environment) -> list[Word]:
        words = []
        for item in _items(node):
            text = _scalar(item)
            if text is None:
                continue
            value, origin = self.expand(text, env)
            start, end = item.start_mark.index, item.end_mark.index
            parts = [("lit", value)] if value is not None else [("lit", text.partition("$")[0]), ("unknown",)]
            word = Word(self.source[start:end], start, end, parts, True, value, origin, single=True)
            if value == text:
                word.offsets = _char_map(self.source, item)
            words.append(word)
        return words

    def string_words(self, node, env: Environment) -> tuple[list[list[Word]], bool]:
        """A command written as one string: shell-split, offsets mapped back when possible."""
        text = node.value
        mapping = _char_map(self.source, node)
        try:
            commands = tokenize(text, 0)
        except ShellSyntaxError:
            commands = []
        result = []
        for command in commands:
            for word in command.words:
                if mapping is not None:
                    word.start, word.end = mapping[word.start], mapping[word.end - 1] + 1
                else:
                    word.start, word.end = node.start_mark.index, node.end_mark.index
                if self.kind == "kubernetes":
                    word.value, word.origin = self.expand(word.raw.strip("\"'"), env)
                    word.parts = [("lit", word.value)] if word.value is not None else [("unknown",)]
            result.append(command.words)
        return result, mapping is not None and node.style in (None, "", "'", '"', "|")

    def launch(self, entry_node, cmd_node, image: str, env: Environment, container: Container, anchor: Span) -> None:
        import yaml

        extractor = self.extractor

        def words_of(node) -> tuple[list[list[Word]], bool]:
            if node is None:
                return [], False
            if isinstance(node, yaml.SequenceNode):
                return [self.sequence_words(node, env)], False
            if isinstance(node, yaml.ScalarNode) and node.value:
                return self.string_words(node, env)
            return [], False

        entry, _ = words_of(entry_node)
        cmd, cmd_fixable = words_of(cmd_node)
        if entry:
            joined = [w for c in entry for w in c] + [w for c in cmd for w in c]
            with extractor.in_image(image):
                extractor.command(joined, env, container, fixable=False)
            return
        if not cmd:
            return
        first = cmd[0]
        head = (first[0].value or "").rsplit("/", 1)[-1] if first else ""
        if _OPENAI_IMAGE.search(image) and head not in ("vllm", "python", "python3", "sh", "bash"):
            words = [env.expand(w) if w.offsets is None and self.kind == "compose" else w for c in cmd for w in c]
            extractor.image_serve(image, words, env, container, cmd_fixable and len(cmd) == 1, anchor, anchor.start)
            return
        with extractor.in_image(image):
            for words in cmd:
                extractor.command(words, env, container, fixable=cmd_fixable)


def _env_from(node, budget: _Budget) -> dict[str, Value | None]:
    import yaml

    env: dict[str, Value | None] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            budget.spend()
            name = _scalar(k)
            if name is not None:
                text = _scalar(v)
                env[name] = Value(text, f"environment {name}") if text is not None and v.tag != "tag:yaml.org,2002:null" else None
    for item in _items(node):
        budget.spend()
        text = _scalar(item)
        if text is not None:
            name, eq, value = text.partition("=")
            env[name] = Value(value, f"environment {name}") if eq else None
            continue
        name = _scalar(_get(item, "name"))
        if name is not None:
            value = _scalar(_get(item, "value"))
            env[name] = Value(value, f"env {name}") if value is not None else None
    return env


# pyyaml reads YAML 1.1, where NEL, LS and PS break lines; docker compose and kubectl read YAML 1.2,
# where they are ordinary characters. Same-length stand-ins keep every offset and column.
_YAML_1_1_BREAKS = str.maketrans({"\x85": " ", "\u2028": " ", "\u2029": " "})


def _yaml_1_2_lines(text: str) -> str:
    return text.translate(_YAML_1_1_BREAKS) if ("\u2028" in text or "\u2029" in text or "\x85" in text) else text


def extract_yaml(text: str, extractor: Extractor, kind: str) -> None:
    import yaml

    from vllm_lint.surfaces.command_lint import CommandParseError

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.compose_all(_yaml_1_2_lines(text), Loader=loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 1
        raise CommandParseError(f"invalid YAML: {exc.problem or exc}", line=line, column=column) from None
    except yaml.YAMLError as exc:
        raise CommandParseError(f"invalid YAML: {exc}", line=1) from None
    budget = _Budget()
    words = _YamlWords(text, extractor, "compose" if kind == "compose" else "kubernetes")
    for document in documents:
        if document is None:
            continue
        if kind == "compose" or (_get(document, "services") is not None and _get(document, "kind") is None):
            words.kind = "compose"
            _compose(document, words, budget)
        else:
            words.kind = "kubernetes"
            _kubernetes(document, words, budget)


def _compose(document, words: _YamlWords, budget: _Budget) -> None:
    import yaml

    services = _get(document, "services")
    if not isinstance(services, yaml.MappingNode):
        return
    for _, service in services.value:
        budget.spend()
        if not isinstance(service, yaml.MappingNode):
            continue
        container = Container()
        container.env = _env_from(_get(service, "environment"), budget)
        if _get(service, "env_file") is not None:
            container.env.setdefault("VLLM_API_KEY", None)  # may be set there
        devices = _get(_get(_get(_get(service, "deploy"), "resources"), "reservations"), "devices")
        for device in _items(devices):
            count, ids = _get(device, "count"), _get(device, "device_ids")
            if count is not None:
                container.gpu_count = gpus_from_devices(_scalar(count))
                container.gpu_anchor = Span(count.start_mark.index, count.end_mark.index)
            elif ids is not None:
                container.gpu_count = len(_items(ids)) or None
                container.gpu_anchor = Span(ids.start_mark.index, ids.end_mark.index)
        cuda = container.env.get("CUDA_VISIBLE_DEVICES")
        if container.gpu_count is None and cuda is not None:
            container.gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
        container.host_ipc = _scalar(_get(service, "ipc")) == "host"
        container.shm_bytes = parse_size(_scalar(_get(service, "shm_size")))
        env = Environment(container.env)
        image = _scalar(_get(service, "image")) or ""
        command = _get(service, "command")
        anchor_node = command or _get(service, "image") or service
        anchor = Span(anchor_node.start_mark.index, anchor_node.start_mark.index + 1)
        if isinstance(command, yaml.ScalarNode) and command.style in (None, ""):
            anchor = Span(command.start_mark.index, command.end_mark.index)
        words.launch(_get(service, "entrypoint"), command, image, env, container, anchor)


def _pod_spec(document):
    kind = _scalar(_get(document, "kind"))
    if kind not in WORKLOAD_KINDS:
        return None
    spec = _get(document, "spec")
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = _get(_get(spec, "jobTemplate"), "spec")
    return _get(_get(spec, "template"), "spec")


def _kubernetes(document, words: _YamlWords, budget: _Budget) -> None:
    spec = _pod_spec(document)
    if spec is None:
        return
    host_ipc = _scalar(_get(spec, "hostIPC")) in ("true", "True")
    memory_volumes: dict[str, int] = {}
    for volume in _items(_get(spec, "volumes")):
        budget.spend()
        empty_dir = _get(volume, "emptyDir")
        if empty_dir is not None and _scalar(_get(empty_dir, "medium")) == "Memory":
            size = parse_size(_scalar(_get(empty_dir, "sizeLimit")))
            memory_volumes[_scalar(_get(volume, "name")) or ""] = size if size is not None else 1 << 40
    for item in _items(_get(spec, "containers")):
        budget.spend()
        container = Container(host_ipc=host_ipc)
        container.env = _env_from(_get(item, "env"), budget)
        if _get(item, "envFrom") is not None:
            container.env.setdefault("VLLM_API_KEY", None)  # may come from the referenced ConfigMap/Secret
        limits = _get(_get(item, "resources"), "limits")
        gpu = _get(limits, "nvidia.com/gpu")
        if gpu is not None:
            container.gpu_count = gpus_from_devices(_scalar(gpu))
            container.gpu_anchor = Span(gpu.start_mark.index, gpu.end_mark.index)
        for mount in _items(_get(item, "volumeMounts")):
            if _scalar(_get(mount, "mountPath")) == "/dev/shm":
                container.shm_bytes = memory_volumes.get(_scalar(_get(mount, "name")) or "")
        env = Environment(container.env)
        image = _scalar(_get(item, "image")) or ""
        command, args = _get(item, "command"), _get(item, "args")
        anchor_node = command or args or item
        anchor = Span(anchor_node.start_mark.index, anchor_node.start_mark.index + 1)
        if command is not None:
            _k8s_command(words, command, args, image, env, container, anchor)
        else:
            words.launch(None, args, image, env, container, anchor)


def _k8s_command(words: _YamlWords, command, args, image, env, container, anchor) -> None:
    import yaml

    # k8s command and args are lists (a string is taken as one word); join them
    if isinstance(command, yaml.SequenceNode) and (args is None or isinstance(args, yaml.SequenceNode)):
        joined = words.sequence_words(command, env) + (words.sequence_words(args, env) if args is not None else [])
        words.extractor.command(joined, env, container, fixable=False)
        return
    words.launch(command, args, image, env, container, anchor)
