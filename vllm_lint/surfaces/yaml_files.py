"""docker-compose and Kubernetes extractors, on pyyaml's safe ``compose`` nodes (they carry positions)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from vllm_lint.cmdline.serve_args import Span
from vllm_lint.cmdline.launches import (
    Container,
    Extractor,
    gpus_from_devices,
    make_opaque,
    parse_size,
)
from vllm_lint.cmdline.shell import (
    Environment,
    ShellSyntaxError,
    Word,
    _expand_inner,
    tokenize,
)
from vllm_lint.surfaces.compose_env import DotEnv, Interpolated, interpolate
from vllm_lint.surfaces.yaml_nodes import items as _items
from vllm_lint.surfaces.yaml_nodes import mapping_get as _get
from vllm_lint.surfaces.yaml_nodes import pairs as _pairs
from vllm_lint.surfaces.yaml_nodes import scalar as _scalar
from vllm_lint.surfaces.yaml_positions import exact_offsets, value_offsets
from vllm_lint.values import Value

if TYPE_CHECKING:
    from vllm_lint.surfaces.kserve import Runtimes
    import yaml

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "Pod", "Job", "CronJob", "DaemonSet", "ReplicaSet"})
_MAX_NODES = 200_000  # bound alias expansion ("billion laughs")
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_ENVSUBST_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*[}:-]")


class _Budget:
    def __init__(self) -> None:
        self.left = _MAX_NODES

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            from vllm_lint.surfaces.job import CommandParseError

            raise CommandParseError("YAML expands to too many nodes (alias bomb?)", line=1)


class _YamlWords:
    def __init__(self, source: str, extractor: Extractor, kind: str, template=None) -> None:
        self.source = source
        self.extractor = extractor
        self.kind = kind
        self.template = template  # surfaces.templates.Template when the file is one
        # what the YAML parse read (a template's actions masked, same length): what scalar values map onto
        self.parsed = _yaml_1_2_lines(template.masked if template is not None else source)
        self.interpolation: DotEnv | None = None  # a compose document's variables (see compose_env)
        self.kserve: Runtimes | None = None  # the file's KServe ServingRuntimes, when it has one

    def interpolated(self, node) -> Interpolated | None:
        """A compose scalar with compose's variables filled in; None when there is nothing to fill."""
        text = _scalar(node)
        if self.interpolation is None or self.template is not None or text is None or "$" not in text:
            return None
        offsets = self.offsets(node) or [node.start_mark.index] * (len(text) + 1)
        return interpolate(text, offsets, self.interpolation)

    def exact_offsets(self, node) -> list[int] | None:
        return exact_offsets(self.parsed, node)

    def script(self, node, env: Environment, container: Container | None = None) -> None:
        """The shell script a YAML string holds (a CI step's ``run:``), read with ``env``."""
        _script(self, node, env, container)

    def env(self, node, budget: _Budget) -> dict[str, Value | None]:
        """The variables a mapping or a list of ``NAME=value`` sets (``env:``, ``variables:``)."""
        return _env_from(node, budget, self)

    def offsets(self, node) -> list[int] | None:
        """Where each character of ``node``'s value is in the file, for positions (see yaml_positions)."""
        return value_offsets(self.parsed, node)

    def text(self, node) -> str | None:
        """A scalar's value, with a template's actions written out; None when not a scalar or not known."""
        filled = self.interpolated(node)
        if filled is not None:
            return None if filled.unknown else filled.text
        text = _scalar(node)
        if text is None or self.template is None:
            return text
        return self.template.value_of(text)[0]

    def image(self, node) -> str:
        """An image reference; in a template, what is known of it (its repository when only the tag is templated)."""
        filled = self.interpolated(node)
        if filled is not None:
            return filled.text[: filled.unknown[0][0]] if filled.unknown else filled.text
        text = _scalar(node)
        if text is None:
            return ""
        return self.template.known_prefix(text) if self.template is not None else text

    def _templated_word(self, item, text: str, within: int) -> Word:
        """A list element of a template: its value where the template's output is known (``within``: where
        the list starts; a range that holds the whole list repeats the list, not this element; a range over
        a values list, while one of its elements is rendered, is that element)."""
        start, end = item.start_mark.index, item.end_mark.index
        mapping = self.offsets(item) or [start] * (len(text) + 1)
        rendered, offsets, unknown, origin = self.template.render(text, mapping)
        element = self.template.element
        repeated = element is None and self.template.repeated_at(start, within)
        if unknown or repeated:
            prefix = rendered[: unknown[0][0]] if unknown else ""
            word = Word(self.source[start:end], start, end, [("lit", prefix), ("unknown",)] if prefix else [("unknown",)], True, None, None, single=not repeated)
        else:
            word = Word(self.source[start:end], start, end, [("lit", rendered)], True, rendered, origin, single=True)
        word.why = self._range_why(start, within) if repeated else "template expression left opaque"
        # the text a shell runs when the element is a script (sh -c), placed but not edited (a template)
        word.script = (rendered, offsets + [mapping[-1]], unknown) if not repeated else None
        word.script_origins = self.template.rendered_origins
        word.condition = self.template.condition_at(start)
        if element is not None:
            word.condition = word.condition - {element[0].condition}  # written once per element, and there are some
        return word

    def _range_why(self, start: int, within: int) -> str:
        """Why a range's words are not known: ``template range left opaque ({{ range .extraArgs }}, ...)``."""
        region = self.template.range_at(start, within)
        opening = next((a for a in self.template.actions if region is not None and a.end == region.start and a.kind == "range"), None)
        if opening is None:
            return "template range left opaque"
        if region.over is None:
            nested = any(r.repeated and r is not region and r.start <= region.start < r.end for r in self.template.regions)
            what = "inside another range" if nested else "not over a values list"
        else:
            what = f"{self.template.values_name} has no {'.'.join(str(key) for key in region.over[1:])} list"
        return f"template range left opaque ({{{{ {opening.body} }}}}: {what})"

    def _range_words(self, items: list, index: int, within: int) -> tuple[list[Word], int] | None:
        """The words of a ``{{ range }}`` over a values list that starts at ``items[index]``, written once
        per element of the list (each word where the template writes it); with the index after the range's
        items. None when the items are in no such range or the list is not known."""
        template = self.template
        region = template.range_at(items[index].start_mark.index, within)
        count = template.elements(region) if region is not None else None
        if region is None or count is None:
            return None
        end = index
        while end < len(items) and region.start <= items[end].start_mark.index < region.end:
            end += 1
        words: list[Word] = []
        for element in range(count):
            template.element = (region, element)
            try:
                for item in items[index:end]:
                    text = _scalar(item)
                    if text is not None:
                        words.append(self._templated_word(item, text, within))
            finally:
                template.element = None
        return words, end

    def expand(self, text: str, env: Environment) -> tuple[str | None, str | None]:
        if self.kind == "kubernetes":
            if _ENVSUBST_VARIABLE.search(text):
                return None, None  # Kubernetes leaves ${VAR} as it is: whatever fills it in (envsubst) runs first
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

    def _interpolated_word(self, item, filled: Interpolated) -> Word:
        """A list element of a compose file with its variables filled in: its value where known, and the
        text a shell runs when it is a script (sh -c), placed but not edited."""
        start, end = item.start_mark.index, item.end_mark.index
        text = filled.text
        if filled.unknown:
            prefix = text[: filled.unknown[0][0]]
            word = Word(self.source[start:end], start, end, [("lit", prefix), ("unknown",)] if prefix else [("unknown",)], True, None, None, single=True)
        else:
            word = Word(self.source[start:end], start, end, [("lit", text)], True, text, filled.origin, single=True)
        word.script = (text, filled.offsets + [end], filled.unknown)
        return word

    def sequence_words(self, node, env: Environment) -> list[Word]:
        words = []
        items = _items(node)
        index = 0
        while index < len(items):
            item = items[index]
            index += 1
            text = _scalar(item)
            if text is None:
                continue
            if self.template is not None:
                ranged = self._range_words(items, index - 1, node.start_mark.index)
                if ranged is not None:
                    words.extend(ranged[0])
                    index = ranged[1]
                    continue
                words.append(self._templated_word(item, text, node.start_mark.index))
                continue
            filled = self.interpolated(item)
            if filled is not None:
                words.append(self._interpolated_word(item, filled))
                continue
            value, origin = self.expand(text, env)
            start, end = item.start_mark.index, item.end_mark.index
            parts = [("lit", value)] if value is not None else [("lit", text.partition("$")[0]), ("unknown",)]
            word = Word(self.source[start:end], start, end, parts, True, value, origin, single=True)
            if value == text:
                word.offsets = self.exact_offsets(item)
                placed = self.offsets(item) if word.offsets is None else None
                if placed is not None:
                    word.script = (text, placed, ())  # folded or unescaped: placed, not edited
            words.append(word)
        return words

    def string_words(self, node, env: Environment) -> tuple[list[list[Word]], bool]:
        """A command written as one string: shell-split, offsets mapped back when possible."""
        text = node.value
        exact = self.exact_offsets(node)
        mapping = exact or self.offsets(node)
        unknown: tuple[tuple[int, int], ...] = ()
        template = self.template
        filled = self.interpolated(node)
        if filled is not None:
            # compose fills in its variables before splitting the command; each word keeps its span
            text, unknown = filled.text, filled.unknown
            mapping = filled.offsets + [mapping[-1] if mapping is not None else node.end_mark.index] if mapping is not None else None
        if template is not None:
            fixable_map = mapping is not None
            mapping = mapping or [node.start_mark.index] * (len(text) + 1)
            text, mapping = _without_blanked_lines(text, mapping, template.blanked_lines)
            text, offsets, unknown, _ = template.render(text, mapping)
            mapping = offsets + [mapping[-1]] if fixable_map else None
        try:
            commands = tokenize(text, 0)
        except ShellSyntaxError:
            commands = []
        result = []
        for command in commands:
            for word in command.words:
                if template is not None or filled is not None:
                    make_opaque(word, unknown, text, 0)
                if filled is not None and word.literal:
                    word.origin = filled.origin_of(word.start, word.end)
                if mapping is not None:
                    word.start, word.end = mapping[word.start], mapping[word.end - 1] + 1
                else:
                    word.start, word.end = node.start_mark.index, node.end_mark.index
                if self.kind == "kubernetes" and word.literal:
                    word.value, word.origin = self.expand(word.raw.strip("\"'"), env)
                    word.parts = [("lit", word.value)] if word.value is not None else [("unknown",)]
                if template is not None:
                    word.condition = template.condition_at(word.start)
                    if template.repeated_at(word.start, node.start_mark.index):
                        word.parts, word.value = [("unknown",)], None
            result.append(command.words)
        fixable = exact is not None and node.style in (None, "", "'", '"', "|") and template is None
        return result, fixable

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
        if self.extractor.runs_vllm_image(image) and head not in ("vllm", "python", "python3", "sh", "bash"):
            words = [env.expand(w) if w.offsets is None and self.kind == "compose" else w for c in cmd for w in c]
            extractor.image_default(words, env, container, cmd_fixable and len(cmd) == 1, image, _first_word(words, anchor), anchor.start)
            return
        with extractor.in_image(image):
            for words in cmd:
                extractor.command(words, env, container, fixable=cmd_fixable)


def _first_word(words: list[Word], otherwise: Span) -> Span:
    """Where a launch of the image's own entrypoint is: the first argument given to it (``command:`` and
    ``args:`` hold no entrypoint to point at)."""
    return Span(words[0].start, words[0].end) if words else otherwise


def _without_blanked_lines(text: str, mapping: list[int], blanked: frozenset[int]) -> tuple[str, list[int]]:
    """A block scalar's value without the empty lines that were template actions (``{{- if }}`` lines
    between continuation lines: the template's output has no line there)."""
    if not blanked:
        return text, mapping
    keep = [k for k, c in enumerate(text) if not (c == "\n" and mapping[k] + 1 in blanked)]
    return "".join(text[k] for k in keep), [mapping[k] for k in keep] + [mapping[-1]]


def _env_from(node, budget: _Budget, words: "_YamlWords | None" = None) -> dict[str, Value | None]:
    """Variables a compose ``environment:`` or a container's ``env:`` sets; None where the value is not
    known (or, in a template, the entry is written under a condition)."""
    import yaml

    template = words.template if words is not None else None
    read = words.text if words is not None else _scalar

    def known(at, value: str | None, origin: str) -> Value | None:
        if value is None or (template is not None and template.condition_at(at.start_mark.index)):
            return None
        return Value(value, origin)

    env: dict[str, Value | None] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            budget.spend()
            name = _scalar(k)
            if name is not None:
                env[name] = known(k, read(v), f"environment {name}") if v.tag != "tag:yaml.org,2002:null" else None
    for item in _items(node):
        budget.spend()
        text = read(item)
        scalar = _scalar(item)
        if scalar is not None:
            name, eq, value = (text or scalar).partition("=")
            env[name] = known(item, value if eq and text is not None else None, f"environment {name}")
            continue
        name = _scalar(_get(item, "name"))
        if name is not None:
            env[name] = known(item, read(_get(item, "value")), f"env {name}")
    return env


# pyyaml reads YAML 1.1, where NEL, LS and PS break lines; docker compose and kubectl read YAML 1.2,
# where they are ordinary characters. Same-length stand-ins keep every offset and column.
_YAML_1_1_BREAKS = str.maketrans({"\x85": " ", "\u2028": " ", "\u2029": " "})


def _yaml_1_2_lines(text: str) -> str:
    return text.translate(_YAML_1_1_BREAKS) if ("\u2028" in text or "\u2029" in text or "\x85" in text) else text


def extract_yaml(text: str, extractor: Extractor, kind: str, job=None, shell_expanded: bool = False) -> None:
    """Launches in a YAML file: each document read by its content (compose ``services:``, a Kubernetes
    ``kind``, a SkyPilot task), a template (Helm, Jinja2, envsubst) read with its actions set aside;
    ``shell_expanded``: a shell fills in its ``$VAR`` first (an unquoted here-document), read as envsubst's."""
    import yaml

    from vllm_lint.surfaces.job import CommandParseError

    template = None
    source = text
    path = job.path if job is not None else None
    if path is not None:
        from vllm_lint.surfaces.templates import TemplateError, flavour_of, read_template

        flavour = "envsubst" if shell_expanded and "$" in text else flavour_of(path, text)
        if flavour is not None:
            try:
                template = read_template(path, text, flavour, job.read_beside)
            except TemplateError as exc:
                line = text.count("\n", 0, exc.offset) + 1
                column = exc.offset - (text.rfind("\n", 0, exc.offset) + 1) + 1
                raise CommandParseError(f"{_TEMPLATE_NAMES[flavour]} that cannot be read: {exc.message}", line=line, column=column) from None
            source = template.masked
            extractor.values_locations = template.values_locations
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        try:
            documents = list(yaml.compose_all(_yaml_1_2_lines(source), Loader=loader))
        except yaml.MarkedYAMLError:
            # Helm renders the chart's defaults: a with block over a value they leave empty writes nothing
            if template is None or not template.rendered_with_defaults():
                raise
            source = template.masked
            documents = list(yaml.compose_all(_yaml_1_2_lines(source), Loader=loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 1
        problem = exc.problem or exc
        if template is not None:
            raise CommandParseError(
                f"{_TEMPLATE_NAMES[template.flavour]} that is not YAML once its template actions are set aside "
                f"({problem}): an action that writes YAML structure mid-line is not read",
                line=line, column=column,
            ) from None
        raise CommandParseError(f"invalid YAML: {problem}", line=line, column=column) from None
    except yaml.YAMLError as exc:
        raise CommandParseError(f"invalid YAML: {exc}", line=1) from None
    budget = _Budget()
    words = _YamlWords(text, extractor, "compose" if kind == "compose" else "kubernetes", template)
    templated = {"helm": "helm"}.get(template.flavour, "template") if template is not None else None
    if "ServingRuntime" in text:
        from vllm_lint.surfaces.kserve import Runtimes

        words.kserve = Runtimes(documents)
    for document in documents:
        if document is None:
            continue
        words.interpolation = None
        extractor.reader = templated or kind
        if kind != "compose" and _read_task_file(document, words, budget, text, templated):
            continue
        if kind == "compose" or (_get(document, "services") is not None and _get(document, "kind") is None):
            extractor.reader = templated or "compose"
            words.kind = "compose"
            words.interpolation = _project_env(job if "$" in text else None)
            _compose(document, words, budget, job)
        elif _is_skypilot_task(document):
            extractor.reader = templated or "skypilot"
            words.kind = "compose"  # ${VAR} in envs and run are the shell's
            _skypilot(document, words, budget)
        else:
            extractor.reader = templated or "kubernetes"
            words.kind = "kubernetes"
            _kubernetes(document, words, budget)


def _read_task_file(document, words: _YamlWords, budget: _Budget, text: str, templated: str | None) -> bool:
    """A YAML file that runs shell steps (a CI pipeline, cloud-init, dstack, a Taskfile), read by its module;
    False when ``document`` is none of them."""
    from vllm_lint.surfaces.ci_pipelines import kind_of as pipeline_kind
    from vllm_lint.surfaces.ci_pipelines import read as read_pipeline
    from vllm_lint.surfaces.cloud_init import is_cloud_config
    from vllm_lint.surfaces.cloud_init import read as read_cloud_config
    from vllm_lint.surfaces.dstack import is_task as is_dstack
    from vllm_lint.surfaces.dstack import read as read_dstack
    from vllm_lint.surfaces.taskfile import is_task as is_taskfile
    from vllm_lint.surfaces.taskfile import read as read_taskfile

    words.kind = "compose"  # ${VAR} in their scripts are the shell's
    pipeline = pipeline_kind(document)
    if pipeline is not None:
        words.extractor.reader = templated or pipeline
        read_pipeline(pipeline, document, words, budget)
        return True
    for matches, read, name in ((is_dstack, read_dstack, "dstack"), (is_taskfile, read_taskfile, "taskfile")):
        if matches(document):
            words.extractor.reader = templated or name
            read(document, words, budget)
            return True
    if is_cloud_config(document, text):
        words.extractor.reader = templated or "cloud-init"
        read_cloud_config(document, words, budget)
        return True
    return False


def _project_env(job):
    """The variables compose fills in from the project's .env (beside the compose file); a compose file
    shown in documentation has none, and one without a ``$`` needs none (so its result is cached)."""
    from vllm_lint.surfaces.compose_env import read_dotenv

    if job is None or not job.standalone:
        return read_dotenv(None)
    return read_dotenv(job.read_beside(job.path.parent / ".env"))


_TEMPLATE_NAMES = {"helm": "Helm template", "go": "Go template", "jinja": "Jinja2 template", "envsubst": "envsubst template"}


def _compose(document, words: _YamlWords, budget: _Budget, job=None) -> None:
    import yaml

    services = _get(document, "services")
    if not isinstance(services, yaml.MappingNode):
        return
    for key, service in services.value:
        budget.spend()
        if not isinstance(service, yaml.MappingNode):
            continue
        base = _extended(service, services, job)
        if base is not None and base.foreign and _get(service, "command") is None and (
            _get(base.node, "command") is not None or _get(base.node, "entrypoint") is not None
        ):
            continue  # its command is the other file's, read where it is written
        if base is not None and not base.foreign:
            service = base.merged(service)
        container = Container()
        _compose_network(container, _scalar(key), service)
        container.env = _env_from(_get(service, "environment"), budget, words)
        env_file = _get(service, "env_file")
        if env_file is not None:
            for name, value in _env_file(env_file, words, job).items():
                container.env.setdefault(name, Value(value, f"env_file {name}") if value is not None else None)
        devices = _get(_get(_get(_get(service, "deploy"), "resources"), "reservations"), "devices")
        for device in _items(devices):
            count, ids = _get(device, "count"), _get(device, "device_ids")
            if count is not None:
                container.gpu_count = gpus_from_devices(words.text(count))
                container.gpu_anchor = Span(count.start_mark.index, count.end_mark.index)
            elif ids is not None:
                container.gpu_count = len(_items(ids)) or None
                container.gpu_anchor = Span(ids.start_mark.index, ids.end_mark.index)
        cuda = container.env.get("CUDA_VISIBLE_DEVICES")
        if container.gpu_count is None and cuda is not None:
            container.gpu_count = len([d for d in str(cuda.value).split(",") if d.strip()])
        container.host_ipc = words.text(_get(service, "ipc")) == "host"
        container.shm_bytes = parse_size(words.text(_get(service, "shm_size")))
        if base is not None:
            base.complete(service, container, budget)
        env = Environment(container.env)
        image = _image(words, _get(service, "image"))
        if not image and base is not None and base.foreign:
            image = _scalar(_get(base.node, "image")) or ""
        container.image = image or None
        command = _get(service, "command")
        anchor_node = command or _get(service, "image") or service
        anchor = Span(anchor_node.start_mark.index, anchor_node.start_mark.index + 1)
        if isinstance(command, yaml.ScalarNode) and command.style in (None, ""):
            anchor = Span(command.start_mark.index, command.end_mark.index)
        built = _built_pin(_get(service, "build"), words, job)
        if built is None:
            words.launch(_get(service, "entrypoint"), command, image, env, container, anchor)
            continue
        with words.extractor.built_from(*built):
            words.launch(_get(service, "entrypoint"), command, image, env, container, anchor)


class _Base:
    """The service a compose service ``extends`` (docs.docker.com/compose/how-tos/multiple-compose-files/extend):
    in the same file, its keys the service does not set are merged in (offsets stay this file's); in another
    file, only values are taken (its environment, IPC, shared memory, GPUs, image), since its words are not here."""

    def __init__(self, node, foreign: bool) -> None:
        self.node, self.foreign = node, foreign  # node None: a file that cannot be read, which may set anything

    def merged(self, service):
        import yaml

        own = {_scalar(k) for k, _ in service.value}
        pairs = [(k, v) for k, v in self.node.value if _scalar(k) not in own and _scalar(k) != "environment"]
        pairs += [(k, v) for k, v in service.value if _scalar(k) != "extends"]
        return yaml.MappingNode(service.tag, pairs, service.start_mark, service.end_mark)

    def complete(self, service, container: Container, budget: _Budget) -> None:
        """What the base adds to the container: its environment under the service's own, and, from another
        file, its IPC, shared memory and GPU count where the service sets none."""
        for name, value in _env_from(_get(self.node, "environment"), budget).items():
            container.env.setdefault(name, value)
        if self.node is None or _get(self.node, "env_file") is not None and _get(service, "env_file") is None:
            container.env.setdefault("VLLM_API_KEY", None)  # a file named in another file: may set it
        if not self.foreign:
            return
        if _get(service, "ipc") is None:
            container.host_ipc = _scalar(_get(self.node, "ipc")) == "host"
        if _get(service, "shm_size") is None:
            container.shm_bytes = parse_size(_scalar(_get(self.node, "shm_size")))
        if _get(service, "deploy") is None:
            devices = _get(_get(_get(_get(self.node, "deploy"), "resources"), "reservations"), "devices")
            for device in _items(devices):
                count, ids = _get(device, "count"), _get(device, "device_ids")
                container.gpu_count = gpus_from_devices(_scalar(count)) if count is not None else (len(_items(ids)) or None)


def _extended(service, services, job) -> _Base | None:
    """The base of a service that ``extends`` one (``extends: NAME`` or ``{service: NAME, file: PATH}``), when
    it can be read; a base in a file that cannot be read may set anything (the launch's key among it)."""
    import yaml

    extends = _get(service, "extends")
    if extends is None:
        return None
    name = _scalar(extends) if isinstance(extends, yaml.ScalarNode) else _scalar(_get(extends, "service"))
    path = _scalar(_get(extends, "file")) if isinstance(extends, yaml.MappingNode) else None
    if path is None:
        node = _get(services, name) if name else None
        return _Base(node, False) if isinstance(node, yaml.MappingNode) and node is not service else None
    text = job.read_beside(job.path.parent / path) if job is not None and job.standalone else None
    try:
        document = yaml.compose(text) if text is not None else None
    except yaml.YAMLError:
        document = None
    node = _get(_get(document, "services"), name) if name and document is not None else None
    return _Base(node if isinstance(node, yaml.MappingNode) else None, True)


def _built_pin(build, words: _YamlWords, job) -> tuple[str, str] | None:
    """The vLLM pin of the Dockerfile a service's ``build:`` names (``pip install vllm==0.6.0``, ``FROM
    vllm/vllm-openai:v0.6.0``): its specifier and how messages name it; None when it pins none or is not read."""
    if build is None or job is None:
        return None
    context = _scalar(build) if _scalar(build) is not None else _scalar(_get(build, "context"))
    dockerfile = _scalar(_get(build, "dockerfile")) if _scalar(build) is None else None
    if context is None or "$" in context or "://" in context or (dockerfile is not None and "$" in dockerfile):
        return None
    path = (job.path.parent / context / (dockerfile or "Dockerfile")).resolve()
    text = job.read_beside(path)
    if text is None:
        return None
    from vllm_lint.vllm_api.targets import dockerfile_target

    target = dockerfile_target(text, path.name, job.launch_settings.vllm_images)
    if target is None or not target.specifier:
        return None
    return target.specifier, f"built from {context.rstrip('/') or '.'}/{dockerfile or 'Dockerfile'}"


def _image(words: _YamlWords, node) -> str:
    """An ``image:`` value as the launch rules read it (``_YamlWords.image``); recorded for the image rules
    only when it is written out in full (no ``${TAG}`` interpolation, no template action)."""
    known = words.image(node)
    text = _scalar(node)
    if text and known == text and "$" not in text and "{{" not in text:
        start, end = node.start_mark.index, node.end_mark.index
        words.extractor.image(text, Span(start, end), words.source[start:end] == text)
    return known


def _compose_network(container: Container, service_name: str | None, service) -> None:
    """How other services and the host reach the service: its names, published ports, the host's network."""
    names = [service_name, _scalar(_get(service, "container_name")), _scalar(_get(service, "hostname"))]
    container.reach_known = True
    container.names = tuple(name for name in names if name)
    container.host_network = _scalar(_get(service, "network_mode")) == "host"
    for entry in _items(_get(service, "ports")):
        text = _scalar(entry)
        if text is None:  # the long syntax: {target: 8000, published: "8001"}
            target, published = _scalar(_get(entry, "target")), _scalar(_get(entry, "published"))
            text = f"{published}:{target}" if published and target else target
        container.publish(text)


def _env_file(node, words: _YamlWords, job) -> dict[str, str | None]:
    """What a service's ``env_file:`` sets in its container (``environment:`` wins over it); a file that
    cannot be read exactly may set anything (its VLLM_API_KEY among it)."""
    import yaml

    from vllm_lint.surfaces.compose_env import read_dotenv

    entries = _items(node) if isinstance(node, yaml.SequenceNode) else [node]
    names: list[tuple[str | None, bool]] = []
    for entry in entries:
        path, required = words.text(entry), True
        if isinstance(entry, yaml.MappingNode):  # {path: ..., required: false}
            path, required = words.text(_get(entry, "path")), words.text(_get(entry, "required")) not in ("false", "False")
        names.append((path, required))
    result: dict[str, str | None] = {}
    for path, required in names:
        text = job.read_beside(job.path.parent / path) if path and job is not None and job.standalone else None
        if text is None and (required or not path or job is None or not job.standalone):
            return {"VLLM_API_KEY": None}  # not read: may set it
        env = read_dotenv(text)
        if not env.complete:
            result.setdefault("VLLM_API_KEY", None)
        result.update(env.values)  # a later file wins
    return result


WORKLOAD_KINDS = WORKLOAD_KINDS | {"LeaderWorkerSet", "InferenceService", "ServingRuntime", "ClusterServingRuntime", "RayService", "RayCluster", "RayJob", "Service", "Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"}


def _pod_specs(document, kserve: Runtimes | None = None) -> list[tuple[object, int]]:
    """The pod specs a Kubernetes object runs, each with how many pods of it make one group (LeaderWorkerSet);
    ``kserve``: the file's ServingRuntimes, which its InferenceServices run."""
    kind = _scalar(_get(document, "kind"))
    spec = _get(document, "spec")
    if kind == "Pod":
        return [(spec, 1)]
    if kind == "CronJob":
        return [(_get(_get(_get(_get(spec, "jobTemplate"), "spec"), "template"), "spec"), 1)]
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        return [(_get(_get(spec, "template"), "spec"), 1)]
    if kind == "LeaderWorkerSet":
        group = _get(spec, "leaderWorkerTemplate")
        return [(_get(_get(group, name), "spec"), 1) for name in ("leaderTemplate", "workerTemplate") if _get(group, name) is not None]
    if kind == "InferenceService":
        predictor = _get(spec, "predictor")
        if _get(predictor, "containers") is not None:
            return [(predictor, 1)]
        merged = kserve.pod_spec(predictor) if kserve is not None else None
        if merged is not None:
            return [(merged, 1)]
        model = _get(predictor, "model")  # the model's own container: image, args, env, resources
        return [(_one_container(model), 1)] if _get(model, "image") is not None or _get(model, "args") is not None else []
    if kind == "Service" and "serving.knative.dev" in (_scalar(_get(document, "apiVersion")) or ""):
        return [(_get(_get(spec, "template"), "spec"), 1)]
    if kind in ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow"):
        if kind == "CronWorkflow":
            spec = _get(spec, "workflowSpec")
        # an Argo template runs one container (``container:`` or ``script:``), or a ``containerSet``
        found = []
        for template in _items(_get(spec, "templates")):
            for key in ("container", "script"):
                if _get(template, key) is not None:
                    found.append((_one_container(_get(template, key)), 1))
            if _get(template, "containerSet") is not None:
                found.append((_get(template, "containerSet"), 1))
        return found
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        return [] if kserve is not None and kserve.read_through_service(document) else [(spec, 1)]
    if kind in ("RayService", "RayCluster"):
        cluster = _get(spec, "rayClusterConfig") if kind == "RayService" else spec
        groups = [_get(cluster, "headGroupSpec"), *_items(_get(cluster, "workerGroupSpecs"))]
        return [(_get(_get(group, "template"), "spec"), 1) for group in groups if group is not None]
    return []


def _one_container(node):
    """A pod spec holding only ``node`` as its container (an Argo template's, a KServe model's)."""
    import yaml

    if node is None:
        return None
    containers = yaml.SequenceNode("tag:yaml.org,2002:seq", [node], node.start_mark, node.end_mark)
    key = yaml.ScalarNode("tag:yaml.org,2002:str", "containers", node.start_mark, node.start_mark)
    return yaml.MappingNode("tag:yaml.org,2002:map", [(key, containers)], node.start_mark, node.end_mark)


def _lws_gpus(document, words: _YamlWords) -> int | None:
    """All the GPUs of one LeaderWorkerSet group: the leader's and (size - 1) workers'; None if not known."""
    group = _get(_get(document, "spec"), "leaderWorkerTemplate")
    size = words.text(_get(group, "size"))
    if size is None or not size.isdigit():
        return None
    per_pod: list[int | None] = []
    for name in ("leaderTemplate", "workerTemplate"):
        spec = _get(_get(group, name), "spec")
        counts = [gpus_from_devices(words.text(_get(_get(_get(c, "resources"), "limits"), "nvidia.com/gpu")) or "0") for c in _items(_get(spec, "containers"))] if spec is not None else None
        found = [c for c in counts if c is not None] if counts is not None else []
        per_pod.append(sum(found) if counts is not None and len(found) == len(counts) else None)
    leader, worker = per_pod
    if worker is None:
        return None
    return (worker if leader is None else leader) + (int(size) - 1) * worker


def _kubernetes(document, words: _YamlWords, budget: _Budget) -> None:
    kind = _scalar(_get(document, "kind"))
    if kind not in WORKLOAD_KINDS:
        return
    group_gpus = _lws_gpus(document, words) if kind == "LeaderWorkerSet" else None
    for spec, _ in _pod_specs(document, words.kserve):
        if spec is not None:
            _pod(spec, words, budget, group_gpus)
    if kind == "RayJob":
        _ray_job(document, words)
    if kind == "RayService":
        from vllm_lint.surfaces.ray_serve import read_serve_config

        read_serve_config(document, words)


# Node labels that name the GPU type a pod is scheduled on: NVIDIA's GPU feature discovery, GKE, and the
# cloud instance type (whose family has one GPU type).
_GPU_PRODUCT_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")
_INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


def _node_gpu_type(spec, words: _YamlWords) -> tuple[str, Any] | None:
    """The GPU type a pod spec asks its node for (``nodeSelector``, or required node affinity with one GPU type
    among its values), and the node that says so; None when it does not say or names several types."""
    from vllm_lint.gpus.names import gpu_from_instance_type, gpu_from_name

    found: dict[str, Any] = {}

    def read(key: str | None, node) -> None:
        text = words.text(node) if node is not None else None
        if key is None or text is None:
            return
        gpu = gpu_from_name(text) if key in _GPU_PRODUCT_LABELS else gpu_from_instance_type(text) if key in _INSTANCE_TYPE_LABELS else None
        if gpu is not None:
            found.setdefault(gpu.name, node)
        elif key in _GPU_PRODUCT_LABELS or key in _INSTANCE_TYPE_LABELS:
            found.setdefault("", node)  # a value that names no type vllm-lint knows: the type is unknown

    selector = _get(spec, "nodeSelector")
    for key_node, value in _pairs(selector):  # a selector that is no mapping (a template's text) names nothing
        read(_scalar(key_node), value)
    required = _get(_get(_get(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")
    for term in _items(_get(required, "nodeSelectorTerms")):
        for expression in _items(_get(term, "matchExpressions")):
            if _scalar(_get(expression, "operator")) == "In":
                for value in _items(_get(expression, "values")):
                    read(_scalar(_get(expression, "key")), value)
    if len(found) != 1 or "" in found:
        return None
    return next(iter(found.items()))


def _pod(spec, words: _YamlWords, budget: _Budget, group_gpus: int | None) -> None:
    host_ipc = words.text(_get(spec, "hostIPC")) in ("true", "True")
    node_gpu = _node_gpu_type(spec, words)
    memory_volumes: dict[str, int] = {}
    for volume in _items(_get(spec, "volumes")):
        budget.spend()
        empty_dir = _get(volume, "emptyDir")
        if empty_dir is not None and _scalar(_get(empty_dir, "medium")) == "Memory":
            size = parse_size(words.text(_get(empty_dir, "sizeLimit")))
            memory_volumes[_scalar(_get(volume, "name")) or ""] = size if size is not None else 1 << 40
    for item in _items(_get(spec, "containers")):
        budget.spend()
        container = Container(host_ipc=host_ipc)
        if node_gpu is not None:
            container.gpu_type = node_gpu[0]
            container.gpu_type_anchor = Span(node_gpu[1].start_mark.index, node_gpu[1].end_mark.index)
        container.env = _env_from(_get(item, "env"), budget, words)
        if _get(item, "envFrom") is not None:
            container.env.setdefault("VLLM_API_KEY", None)  # may come from the referenced ConfigMap/Secret
        limits = _get(_get(item, "resources"), "limits")
        gpu = _get(limits, "nvidia.com/gpu") or _get(limits, "amd.com/gpu")
        if gpu is not None:
            container.gpu_count = gpus_from_devices(words.text(gpu))
            container.gpu_anchor = Span(gpu.start_mark.index, gpu.end_mark.index)
        if gpu is not None and words.template is not None and words.template.condition_at(gpu.start_mark.index):
            container.gpu_count = None  # a limit written under a condition
        if group_gpus is not None and container.gpu_count is not None:
            container.gpu_count = group_gpus  # one vLLM spans the group's pods (Ray across the workers)
        for mount in _items(_get(item, "volumeMounts")):
            if words.text(_get(mount, "mountPath")) == "/dev/shm":
                container.shm_bytes = memory_volumes.get(_scalar(_get(mount, "name")) or "")
        for command, args in _command_pairs(item, words):
            holes = _holes(item, words)
            if "env" in holes or "envFrom" in holes or "" in holes:
                container.env.setdefault("VLLM_API_KEY", None)  # an {{ include }} or {{ toYaml }} may set it
            if "resources" in holes:
                container.gpu_count = None
            env = Environment(container.env)
            image = _image(words, _get(item, "image"))
            container.image = image or None
            anchor_node = command or args or item
            anchor = Span(anchor_node.start_mark.index, anchor_node.start_mark.index + 1)
            before = len(words.extractor.found)
            listed = {key: _listed_words(action, words) for key, action in holes.items() if key in ("command", "args")}
            if any(value is None for value in listed.values()):
                continue  # an action writes the command or args, and the template does not say what
            if listed:
                # `command:` written by `{{ toYaml .Values.command | nindent 10 }}` from values.yaml
                import yaml

                command_words = listed.get("command") or (words.sequence_words(command, env) if isinstance(command, yaml.SequenceNode) else [])
                args_words = listed.get("args") or (words.sequence_words(args, env) if isinstance(args, yaml.SequenceNode) else [])
                if command_words:
                    with words.extractor.in_image(image):
                        words.extractor.command(command_words + args_words, env, container, fixable=False)
                elif args_words:
                    _image_args(words, args_words, image, env, container, anchor)
                break
            if command is not None:
                _k8s_command(words, command, args, image, env, container, anchor)
            else:
                words.launch(None, args, image, env, container, anchor)
            if words.template is not None and words.template.repeated_at(anchor.start, item.start_mark.index):
                for found in words.extractor.found[before:]:
                    found.launch.left_opaque("template range repeats its words")


def _command_pairs(item, words: _YamlWords) -> list[tuple[yaml.Node | None, yaml.Node | None]]:
    """A container's ``command`` and ``args``; in a template whose ``{{ if }}``/``{{ else }}`` branches each
    write their own (the keys twice in the parsed mapping), one pair per branch: each branch's command with
    the args written in it or around it."""
    import yaml

    if not isinstance(item, yaml.MappingNode):
        return [(None, None)]
    commands = [v for k, v in item.value if _scalar(k) == "command"]
    arguments = [v for k, v in item.value if _scalar(k) == "args"]
    if words.template is None or (len(commands) <= 1 and len(arguments) <= 1):
        return [(_get(item, "command"), _get(item, "args"))]
    def condition(node) -> frozenset:
        return words.template.condition_at(node.start_mark.index)

    def partner(node, others: list):
        around = [other for other in others if condition(other) <= condition(node)]
        return max(around, key=lambda other: len(condition(other)), default=None)

    if len(commands) >= len(arguments):
        return [(command, partner(command, arguments)) for command in commands]
    return [(partner(arg, commands), arg) for arg in arguments]


def _image_args(words: _YamlWords, joined: list[Word], image: str, env: Environment, container: Container, anchor: Span) -> None:
    if words.extractor.runs_vllm_image(image) and (joined[0].value or "").rsplit("/", 1)[-1] not in ("vllm", "python", "python3", "sh", "bash"):
        words.extractor.image_default(joined, env, container, False, image, _first_word(joined, anchor), anchor.start)
        return
    with words.extractor.in_image(image):
        words.extractor.command(joined, env, container, fixable=False)


def _holes(item, words: _YamlWords) -> dict[str, object]:
    """A container's keys under which an action alone on its line writes YAML the parse did not see
    (key "" for one between keys), each with the action."""
    import yaml

    template = words.template
    if template is None or not isinstance(item, yaml.MappingNode):
        return {}
    keys = [(k.start_mark.index, _scalar(k) or "") for k, _ in item.value]
    found: dict[str, object] = {}
    for action in template.holes(item.start_mark.index, _region_end(item, words)):
        owner = ""
        for start, name in keys:
            if start <= action.start:
                owner = name
        # a hole more indented than the key's line belongs to that key's value
        line_start = template.source.rfind("\n", 0, action.start) + 1
        indent = len(template.source[line_start:action.start]) - len(template.source[line_start:action.start].lstrip())
        key_column = item.start_mark.column
        found[owner if indent > key_column else ""] = action
    return found


def _region_end(item, words: _YamlWords) -> int:
    """Where a container's lines end: the next line indented no deeper than its first key (blank-made lines
    of the template, which YAML saw as nothing, are inside)."""
    source = words.template.masked
    column = item.start_mark.column
    i = item.end_mark.index
    while i < len(source):
        line_end = source.find("\n", i)
        line_end = len(source) if line_end == -1 else line_end
        line = source[i:line_end]
        if line.strip() and len(line) - len(line.lstrip()) <= column - (2 if line.lstrip().startswith("- ") else 0) and i > item.end_mark.index:
            return i
        i = line_end + 1
    return len(source)


def _listed_words(action, words: _YamlWords) -> list[Word] | None:
    """The words of ``{{ toYaml .Values.x | nindent N }}`` when values.yaml gives x as a list of scalars,
    every one pointing at the action; None when not known."""
    value = words.template.output_value(action)
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return None
    from vllm_lint.surfaces.templates import _go_text

    result = []
    for item in value:
        text = _go_text(item)
        if text is None:
            return None
        word = Word(text, action.start, action.end, [("lit", text)], True, text, f"{words.template.values_name}", single=True)
        word.condition = words.template.condition_at(action.start)
        result.append(word)
    return result


def _k8s_command(words: _YamlWords, command, args, image, env, container, anchor) -> None:
    import yaml

    # k8s command and args are lists (a string is taken as one word); join them
    if isinstance(command, yaml.SequenceNode) and (args is None or isinstance(args, yaml.SequenceNode)):
        joined = words.sequence_words(command, env) + (words.sequence_words(args, env) if args is not None else [])
        with words.extractor.in_image(image):  # vLLM's own image runs its own release, whatever the command
            words.extractor.command(joined, env, container, fixable=False)
        return
    words.launch(command, args, image, env, container, anchor)


# -- SkyPilot tasks and Ray ------------------------------------------------------------------------

_SKYPILOT_KEYS = ("resources", "setup", "envs", "num_nodes", "workdir", "file_mounts", "service")


def _is_skypilot_task(document) -> bool:
    """A SkyPilot task: a ``run:`` script next to SkyPilot's own keys (and no Kubernetes ``kind``)."""
    import yaml

    if not isinstance(document, yaml.MappingNode) or _get(document, "kind") is not None:
        return False
    return isinstance(_get(document, "run"), yaml.ScalarNode) and any(_get(document, key) is not None for key in _SKYPILOT_KEYS)


def _accelerator_count(node, words: _YamlWords) -> int | None:
    """GPUs per node from ``resources.accelerators``: ``A100:4``, ``{A100: 4}``, ``[L4:2, A10G:2]``; None
    when the candidates differ or are not known."""
    import yaml

    candidates: list[str | None] = []
    if isinstance(node, yaml.ScalarNode):
        candidates = [words.text(node)]
    elif isinstance(node, yaml.SequenceNode):
        candidates = [words.text(item) for item in node.value]
    elif isinstance(node, yaml.MappingNode):
        candidates = [f"{_scalar(k)}:{words.text(v)}" if _scalar(v) not in (None, "") else _scalar(k) for k, v in node.value]
    counts = set()
    for candidate in candidates:
        if candidate is None:
            return None
        name, _, count = candidate.strip().partition(":")
        if not name or (count and not count.strip().isdigit()):
            return None
        counts.add(int(count) if count else 1)
    return counts.pop() if len(counts) == 1 else None


def _accelerator_type(node, words: _YamlWords) -> str | None:
    """The GPU type of ``resources.accelerators`` when every candidate is the same type (``A100-80GB:4``)."""
    import yaml

    from vllm_lint.gpus.names import gpu_from_name

    if isinstance(node, yaml.ScalarNode):
        names = [words.text(node)]
    elif isinstance(node, yaml.SequenceNode):
        names = [words.text(item) for item in node.value]
    elif isinstance(node, yaml.MappingNode):
        names = [_scalar(key) for key, _ in node.value]
    else:
        return None
    types = set()
    for name in names:
        gpu = gpu_from_name(name.partition(":")[0]) if name else None
        if gpu is None:
            return None
        types.add(gpu.name)
    return types.pop() if len(types) == 1 else None


def _skypilot(document, words: _YamlWords, budget: _Budget) -> None:
    env = Environment(_env_from(_get(document, "envs"), budget, words))
    container = Container(runtime=False)
    accelerators = _get(_get(document, "resources"), "accelerators")
    nodes = words.text(_get(document, "num_nodes"))
    if accelerators is not None and nodes in (None, "1"):
        container.gpu_count = _accelerator_count(accelerators, words)
        container.gpu_anchor = Span(accelerators.start_mark.index, accelerators.end_mark.index)
        container.gpu_type = _accelerator_type(accelerators, words)
        container.gpu_type_anchor = container.gpu_anchor
    # the vLLM the task runs: what `setup:` installs, else the image the task runs in (`docker:IMAGE`)
    from vllm_lint.vllm_api.targets import dockerfile_target

    setup = _scalar(_get(document, "setup")) or ""
    installed = dockerfile_target(setup, "setup") if "vllm" in setup else None
    image = (words.text(_get(_get(document, "resources"), "image_id")) or "").strip()
    if installed is not None and installed.specifier:
        with words.extractor.built_from(installed.specifier, "the task's setup"):
            _script(words, _get(document, "run"), env, container)
        return
    if image.startswith("docker:"):
        container.image = image[len("docker:") :]
        with words.extractor.in_image(container.image):
            _script(words, _get(document, "run"), env, container)
        return
    _script(words, _get(document, "run"), env, container)


def _script(words: _YamlWords, node, env: Environment, container: Container | None) -> None:
    """A shell script held in a YAML string (SkyPilot's ``run:``, RayJob's ``entrypoint:``)."""
    text = _scalar(node)
    if not text:
        return
    start, end = node.start_mark.index, node.end_mark.index
    word = Word(words.source[start:end], start, end, [("lit", text)], True, text)
    mapping = words.exact_offsets(node)
    placed = mapping or words.offsets(node)
    if words.template is not None:
        mapping = placed or [start] * (len(text) + 1)
        rendered, offsets, unknown, _ = words.template.render(*_without_blanked_lines(text, mapping, words.template.blanked_lines))
        word.script = (rendered, offsets + [end], unknown)
        word.script_origins = words.template.rendered_origins
        word.value = None
    elif mapping is not None:
        word.offsets = mapping
    elif placed is not None:
        word.script = (text, placed, ())  # folded (a plain scalar over several lines): placed, not edited
    if word.offsets is None and word.script is None:
        word.script = (text, [start] * (len(text) + 1), ())  # offsets not mapped: every word points at the key
    words.extractor.inline_script(word, env, container)


def _ray_job(document, words: _YamlWords) -> None:
    _script(words, _get(_get(document, "spec"), "entrypoint"), Environment(), None)
