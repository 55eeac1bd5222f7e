"""Templated YAML read without rendering it: Helm charts (Go templates), Jinja2 and envsubst files.

Template actions are set aside before the YAML parse with every offset kept. A line that holds only
actions (``{{- if .Values.lora }}``, ``{{- include "labels" . | nindent 4 }}``) becomes blank; an action
inside a line becomes a run of one private-use character (U+E000 plus the action's number), so the
scalar around it still parses as one scalar and says which action it holds. A scalar's value is then the
template's output where that is known: ``{{ .Values.x.y }}`` from the chart's ``values.yaml`` (with
``quote``, ``default``, ``required``, ``toString``, ``int``, ``index``, ``join``, ``printf``, ``trimSuffix``,
``trimPrefix``, ``replace``; ``include`` of the named templates in ``templates/_helpers.tpl`` and ``tpl``
when they hold only text and output actions; ``with`` blocks move the dot), and unknown otherwise
(``.Release``, a Jinja variable, ``${VAR}``): never a guess. Values in values.yaml are defaults an install
can override; findings say where a value came from.

Every ``{{ if }}``/``{{ else }}`` branch (``{% if %}`` in Jinja) is a condition (see
``vllm_lint.cmdline.conditions``); a ``with`` over a mapping that values.yaml has only moves the dot; one over
a value values.yaml leaves empty writes nothing with the defaults, and is set aside when the template is not
YAML with it (``Template.rendered_with_defaults``);
a ``range`` over a values list is written once per element (``element`` binds "." and its variable while
one is rendered; an empty list writes nothing); over anything else it repeats what it holds an unknown
number of times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import yaml

PLACEHOLDER = 0xE000
MAX_ACTIONS = 6000  # private-use characters available for one file
UNKNOWN = object()
_MISSING = object()
_GO_OPEN, _GO_CLOSE = "{{", "}}"
_JINJA = re.compile(r"\{%|\{#")
# What GitHub Actions writes into plain YAML (``${{ matrix.model }}``, over lines too) and a shell's array length
# (``${#names[@]}``) in a step's script: neither is a template action.
_GITHUB_EXPRESSION = re.compile(r"\$\{\{.{0,4096}?\}\}|\$\{#", re.DOTALL)
_ENVSUBST = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:}-])|\$[A-Za-z_][A-Za-z0-9_]*")
TEMPLATE_SUFFIXES = (".tpl", ".j2", ".jinja", ".jinja2", ".gotmpl", ".tmpl", ".template")


class TemplateError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message, self.offset = message, offset


@dataclass
class Action:
    start: int
    end: int
    body: str  # trim markers and delimiters removed
    kind: str  # "output", "if", "elif", "else", "end", "range", "with", "define", "set", "comment"
    block: bool = False  # alone on its line (with other actions at most)
    scope: tuple | None = ()  # what "." is: a path into the values (None: not known, inside a range)


@dataclass
class Region:
    start: int
    end: int
    condition: object | None  # a branch's key, or None for a with that only moves the dot
    repeated: bool = False  # a range body
    excluded: bool = False  # a define/macro: not part of the output
    # a Helm ``with`` body over a value the chart's values.yaml leaves empty: not rendered with the defaults
    unrendered: bool = False
    # a range over values: the values path of the list, and the variable its element is bound to
    # (``range $arg := .Values.args``); None when what it ranges over is not a values path
    over: tuple | None = None
    variable: str | None = None


@dataclass
class Template:
    source: str
    masked: str
    flavour: str  # "helm", "go", "jinja", "envsubst"
    actions: list[Action] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    values: object = None  # the chart's values.yaml (None: none read)
    values_name: str = "values.yaml"
    blanked_lines: frozenset[int] = frozenset()  # offsets of the lines made blank
    # while one element of a range is rendered: the range's region and the element's index
    element: tuple[Region, int] | None = None
    defines: dict[str, str] = field(default_factory=dict)  # the chart's named templates (_helpers.tpl): name -> body
    # what the last ``render`` wrote from the values: (start, end) in its output, and where it came from
    rendered_origins: tuple[tuple[int, int, str], ...] = ()
    values_path: Path | None = None  # where values.yaml is, and its text (for the lines origins name)
    values_text: str | None = None
    origin_paths: dict[str, tuple] = field(default_factory=dict)  # "values.yaml a.b" -> ("a", "b")
    _values_nodes: yaml.Node | Literal[False] | None = None  # False: values.yaml does not compose
    unrendered: list[Region] = field(default_factory=list)  # the with bodies set aside (rendered_with_defaults)

    def rendered_with_defaults(self) -> bool:
        """Set aside, as Helm does with the chart's values, the ``with`` bodies over values values.yaml leaves
        empty (for a template whose text is not YAML with them); False when it has none."""
        regions = [region for region in self.regions if region.unrendered]
        if not regions:
            return False
        self.unrendered = regions
        chars = list(self.masked)
        blanked = set(self.blanked_lines)
        for region in regions:
            for k in range(region.start, region.end):
                if chars[k] == "\n":
                    blanked.add(k + 1)
                else:
                    chars[k] = " "
        self.masked = "".join(chars)
        self.blanked_lines = frozenset(blanked)
        return True

    # -- where an offset is ----------------------------------------------------------------------
    def condition_at(self, offset: int) -> frozenset:
        return frozenset(r.condition for r in self.regions if r.condition is not None and r.start <= offset < r.end)

    def range_at(self, offset: int, within: int = -1) -> Region | None:
        """The innermost range body holding ``offset`` that starts after ``within``."""
        found = [r for r in self.regions if r.repeated and within < r.start <= offset < r.end]
        return min(found, key=lambda r: r.end - r.start) if found else None

    def elements(self, region: Region) -> int | None:
        """How many elements the range of ``region`` writes, when the values say (a list in values.yaml, an
        empty one too: ``extraArgs: []`` writes nothing, as Helm renders the chart's defaults, the same
        defaults every other ``.Values`` here is read at); None for an absent list."""
        if region.over is None:
            return None
        value = _lookup(self.values, region.over)
        return len(value) if isinstance(value, list) else None

    def repeated_at(self, offset: int, within: int = -1) -> bool:
        """Whether ``offset`` is in a ``range`` body that starts after ``within`` (a range around the whole
        object, or the whole container, repeats it as a unit: what it holds is written once per element)."""
        return any(r.repeated and within < r.start <= offset < r.end for r in self.regions)

    def holes(self, start: int, end: int) -> list[Action]:
        """Output actions alone on their line between ``start`` and ``end`` (``{{ toYaml .Values.env | nindent 8 }}``)."""
        return [
            a
            for a in self.actions
            if a.kind == "output" and a.block and start <= a.start < end and not self._set_aside(a.start)
        ]

    def _set_aside(self, offset: int) -> bool:
        return any(region.start <= offset < region.end for region in self.unrendered)

    # -- values ----------------------------------------------------------------------------------
    def action_of(self, char: str) -> Action | None:
        number = ord(char) - PLACEHOLDER
        return self.actions[number] if 0 <= number < len(self.actions) else None

    def has_placeholder(self, text: str) -> bool:
        return any(PLACEHOLDER <= ord(c) < PLACEHOLDER + len(self.actions) for c in text)

    def output(self, action: Action) -> tuple[str | None, str | None]:
        """What ``action`` writes, and where that came from; (None, None) when not known."""
        if self.flavour not in ("helm", "go") or action.kind != "output":
            return None, None
        value, origin = self._evaluator(action).pipeline(action.body)
        text = _go_text(value)
        return (text, origin) if text is not None else (None, None)

    def output_value(self, action: Action) -> object:
        """The value ``action`` writes before it becomes text (a list for ``toYaml .Values.args``)."""
        if self.flavour not in ("helm", "go"):
            return UNKNOWN
        body = re.sub(r"\|\s*n?indent\s+\d+\s*$", "", action.body).strip()
        match = re.fullmatch(r"toYaml\s+(.+)|(.+?)\s*\|\s*toYaml", body)
        if match is None:
            return UNKNOWN
        value, _ = self._evaluator(action).pipeline(match.group(1) or match.group(2))
        return value

    def _evaluator(self, action: Action) -> _Evaluator:
        """What "." and a range's variable are for ``action``: an element of a range being rendered moves
        the dot (and binds the variable) to that element of the values list."""
        if self.element is not None:
            region, index = self.element
            if region.over is not None and region.start <= action.start < region.end:
                path = region.over + (index,)
                return _Evaluator(self, path, {region.variable: path} if region.variable else {})
        return _Evaluator(self, action.scope)

    def render(self, text: str, offsets: list[int]) -> tuple[str, list[int], tuple[tuple[int, int], ...], str | None]:
        """``text`` (a scalar's value, ``offsets[i]`` the source offset of ``text[i]``) with each action's
        output in place: the text, its offsets, the spans whose value is not known, and the origins."""
        out: list[str] = []
        out_offsets: list[int] = []
        unknown: list[tuple[int, int]] = []
        origins: list[str] = []
        spans: list[tuple[int, int, str]] = []
        ranges = self._inline_ranges(offsets[: len(text)])
        i = 0
        while i < len(text):
            inside = next((r for r in ranges if r.start <= offsets[i] < r.end), None)
            if inside is not None:
                ranges.remove(inside)
                written_text, written_offsets, written_unknown, written_spans, i = self._inline_range(inside, text, offsets, i)
                unknown.extend((start + len(out), stop + len(out)) for start, stop in written_unknown)
                spans.extend((start + len(out), stop + len(out), origin) for start, stop, origin in written_spans)
                origins.extend(origin for _, _, origin in written_spans)
                out.extend(written_text)
                out_offsets.extend(written_offsets)
                continue
            action = self.action_of(text[i])
            if action is None:
                if self.flavour == "envsubst" and (envsubst := _ENVSUBST.match(text, i)):
                    end = envsubst.end()
                    if text[end - 1] in ":-":
                        close = text.find("}", end)
                        end = close + 1 if close != -1 else len(text)
                    unknown.append((len(out), len(out) + end - i))
                    out.extend(text[i:end])
                    out_offsets.extend(offsets[i:end])
                    i = end
                    continue
                out.append(text[i])
                out_offsets.append(offsets[i])
                i += 1
                continue
            j = i
            while j < len(text) and text[j] == text[i]:
                j += 1
            written, origin = self.output(action)
            if written is None:
                written = "$_" + "_" * max(0, j - i - 2)  # a shell word of unknown value
                unknown.append((len(out), len(out) + len(written)))
            elif origin:
                origins.append(origin)
                spans.append((len(out), len(out) + len(written), origin))
            out.extend(written)
            out_offsets.extend([offsets[i]] * len(written))
            i = j
        self.rendered_origins = tuple(spans)
        return "".join(out), out_offsets, tuple(unknown), ", ".join(dict.fromkeys(origins)) or None

    def _inline_ranges(self, offsets: list[int]) -> list[Region]:
        """The ``{{ range .Values.list }}...{{ end }}`` bodies written inside one scalar (``--x{{ range
        .Values.args }} {{ . }}{{ end }}``) over a values list, not the one being rendered."""
        if not offsets or self.flavour not in ("helm", "go"):
            return []
        low, high = min(offsets), max(offsets)
        current = self.element[0] if self.element is not None else None
        return [r for r in self.regions if r.repeated and r is not current and low <= r.start and r.end <= high + 1
                and self.elements(r) is not None]

    def _inline_range(self, region: Region, text: str, offsets: list[int], i: int):
        """The body of ``region`` from ``text[i]`` on, rendered once per element of its values list; with
        where ``text`` goes on after it."""
        end = i
        while end < len(text) and offsets[end] < region.end:
            end += 1
        body, body_offsets = text[i:end], offsets[i:end]
        written: list[str] = []
        written_offsets: list[int] = []
        written_unknown: list[tuple[int, int]] = []
        written_spans: list[tuple[int, int, str]] = []
        outer = self.element
        try:
            for index in range(self.elements(region) or 0):
                self.element = (region, index)
                rendered, rendered_offsets, unknown, _ = self.render(body, body_offsets)
                written_unknown.extend((start + len(written), stop + len(written)) for start, stop in unknown)
                written_spans.extend((start + len(written), stop + len(written), origin) for start, stop, origin in self.rendered_origins)
                written.extend(rendered)
                written_offsets.extend(rendered_offsets)
        finally:
            self.element = outer
        return written, written_offsets, written_unknown, written_spans, end

    def known_prefix(self, text: str) -> str:
        """A scalar's value up to its first unknown part (``vllm/vllm-openai:`` of ``vllm/vllm-openai:${TAG}``)."""
        rendered, _, unknown, _ = self.render(text, list(range(len(text))))
        return rendered[: unknown[0][0]] if unknown else rendered

    def values_locations(self, origin: str) -> list[tuple[Path, int, int, int, int, str]]:
        """Where in values.yaml each part of ``origin`` (``values.yaml a.b, values.yaml c``) is written:
        (path, line, column, end line, end column, the part), lines and columns from 1; parts not found left out."""
        if self.values_path is None or self.values_text is None:
            return []
        nodes = self._values_root()
        found = []
        for part in origin.split(", "):
            keys = self.origin_paths.get(part)
            node = nodes
            for key in keys or ():
                node = _child(node, key)
            if keys is not None and node is not None:
                start, end = node.start_mark, node.end_mark
                found.append((self.values_path, start.line + 1, start.column + 1, end.line + 1, end.column + 1, part))
        return found

    def _values_root(self) -> yaml.Node | None:
        if self._values_nodes is None:
            import yaml

            try:
                root = yaml.compose(self.values_text or "", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except yaml.YAMLError:
                root = None
            self._values_nodes = root if root is not None else False
        return self._values_nodes or None

    def value_of(self, text: str) -> tuple[str | None, str | None]:
        """A scalar's value with its actions written out; None when some part is not known."""
        rendered, _, unknown, origin = self.render(text, list(range(len(text))))
        return (None, None) if unknown else (rendered, origin)


# -- reading a template ----------------------------------------------------------------------------


def flavour_of(path: Path, text: str) -> str | None:
    """Which kind of template ``text`` is, or None for plain YAML."""
    name = path.name.lower()
    in_chart = chart_root(path) is not None
    if not in_chart and "${" in text:
        text = _GITHUB_EXPRESSION.sub("", text)
    if "{{" in text or "{%" in text:
        if name.endswith((".j2", ".jinja", ".jinja2")) or _JINJA.search(text):
            return "jinja"
        return "helm" if in_chart else "go"
    if name.endswith(TEMPLATE_SUFFIXES) and _ENVSUBST.search(text):
        return "envsubst"
    return None


def chart_root(path: Path) -> Path | None:
    """The chart folder (with Chart.yaml) whose templates/ holds ``path``."""
    parents = list(path.parents)
    for index, parent in enumerate(parents[:-1]):
        if parent.name == "templates" and (parents[index + 1] / "Chart.yaml").is_file():
            return parents[index + 1]
    return None


def read_template(path: Path, text: str, flavour: str, read=None) -> Template:
    """``read``: a path to its text or None (``LintJob.read_beside``), for the chart's values.yaml."""
    template = Template(text, text, flavour)
    if flavour == "envsubst":
        return template
    if flavour == "helm":
        template.values = _chart_values(template, chart_root(path), read)
        template.defines = _chart_defines(chart_root(path), read)
    actions = _lex(text, flavour)
    if len(actions) > MAX_ACTIONS:
        raise TemplateError(f"more than {MAX_ACTIONS} template actions", actions[MAX_ACTIONS].start)
    template.actions = actions
    _structure(template)
    _mask(template)
    return template


def _chart_defines(root: Path | None, read) -> dict[str, str]:
    """The named templates of the chart's ``templates/_helpers.tpl`` (``{{ define "name" }}...{{ end }}``)."""
    if root is None or read is None:
        return {}
    text = read(root / "templates" / "_helpers.tpl")
    if not text:
        return {}
    try:
        actions = _lex(text, "helm")
    except TemplateError:
        return {}
    defines: dict[str, str] = {}
    depth, name, body_start = 0, None, 0
    for action in actions:
        if action.kind == "define" and depth == 0:
            match = re.fullmatch(r'define\s+"([^"]+)"', action.body)
            name, body_start = (match.group(1) if match else None), action.end
            depth = 1
            continue
        if depth and action.kind in ("if", "range", "with", "define"):
            depth += 1
        elif depth and action.kind == "end":
            depth -= 1
            if depth == 0 and name is not None:
                # the body as text, with its trim markers kept on the actions inside it
                defines[name] = text[body_start : action.start] + ("-" if text.startswith("{{-", action.start) else "")
    return defines


def _chart_values(template: Template, root: Path | None, read) -> object:
    if root is None or read is None:
        return None
    text = read(root / "values.yaml")
    if text is None:
        return None
    try:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        values = yaml.load(text, Loader=loader)
    except Exception:  # noqa: BLE001 - no values (missing, unreadable, not YAML): every value is unknown
        return None
    template.values_path, template.values_text = root / "values.yaml", text
    return values


def _child(node, key) -> yaml.Node | None:
    """The node under ``key`` in a composed YAML mapping (or at index ``key`` of a sequence); None if absent."""
    import yaml

    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    if isinstance(node, yaml.MappingNode):
        for name, value in node.value:
            if isinstance(name, yaml.ScalarNode) and name.value == str(key):
                return value
    return None


_STRING_IN_ACTION = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\]|\\.)\'')


def _lex(text: str, flavour: str) -> list[Action]:
    pairs = [("{{", "}}"), ("{%", "%}"), ("{#", "#}")] if flavour == "jinja" else [("{{", "}}")]
    opener = re.compile("|".join(re.escape(o) for o, _ in pairs))
    actions: list[Action] = []
    i = 0
    while True:
        match = opener.search(text, i)
        if match is None:
            return actions
        start = match.start()
        close = dict(pairs)[match.group(0)]
        j = match.end()
        while True:
            end = text.find(close, j)
            if end == -1:
                raise TemplateError(f"unterminated template action {match.group(0)}", start)
            string = _STRING_IN_ACTION.search(text, j, end)
            if string is None:
                break
            j = string.end()  # a "}}" inside a string does not close the action
        end += len(close)
        body = text[match.end() : end - len(close)]
        body = body[1:] if body.startswith("-") else body
        body = body[:-1] if body.endswith("-") else body
        actions.append(Action(start, end, body.strip(), _kind(match.group(0), body.strip(), flavour)))
        i = end


def _kind(opener: str, body: str, flavour: str) -> str:
    if opener == "{#" or body.startswith("/*"):
        return "comment"
    if opener == "{{":
        if flavour == "jinja":
            return "output"
        word = body.split(None, 1)[0] if body else ""
        if word in ("if", "range", "with", "define", "block", "end"):
            return {"block": "define"}.get(word, word)
        if word == "else":
            return "elif" if len(body.split()) > 1 else "else"
        if re.match(r"\$\w*\s*:?=", body) or word in ("break", "continue"):
            return "set"
        return "output"
    word = body.split(None, 1)[0] if body else ""
    return {
        "if": "if", "elif": "elif", "else": "else", "endif": "end", "for": "range", "endfor": "end",
        "macro": "define", "endmacro": "end", "call": "define", "endcall": "end", "filter": "with",
        "endfilter": "end", "block": "with", "endblock": "end", "with": "with", "endwith": "end",
        "raw": "define", "endraw": "end",
    }.get(word, "set")


def _structure(template: Template) -> None:
    """Regions of the branches, with blocks and ranges, and what "." is in each action."""
    stack: list[dict] = []
    for number, action in enumerate(template.actions):
        scope = next((frame["scope"] for frame in reversed(stack) if "scope" in frame), ())
        action.scope = scope
        kind = action.kind
        if kind in ("if", "range", "with", "define"):
            frame = {"kind": kind, "start": action.end, "key": (number, 0), "opened": action.start}
            if kind == "with":
                path = _path(action.body[4:].strip(), scope)
                target = _lookup(template.values, path) if path is not None and template.flavour == "helm" else _MISSING
                frame["scope"] = path if path is not None else None
                if isinstance(target, dict) and target:
                    frame["key"] = None  # a with over values that exist only moves the dot
                elif target is _MISSING or (target is not UNKNOWN and not target):
                    frame["unrendered"] = True  # Go templates skip a with over an empty value
            elif kind == "range":
                frame["scope"] = None
                over = re.fullmatch(r"range\s+(?:(?:\$\w+\s*,\s*)?(\$\w+)\s*:?=\s*)?(\S+)", action.body)
                if over is not None and template.flavour in ("helm", "go"):
                    frame["over"] = _path(over.group(2), scope)
                    frame["variable"] = over.group(1)
            stack.append(frame)
        elif kind in ("elif", "else"):
            if not stack:
                raise TemplateError(f"{{{{ {action.body} }}}} outside a block", action.start)
            frame = stack[-1]
            template.regions.append(_region(frame, action.start))
            frame["start"] = action.end
            key = frame["key"]
            frame["key"] = (key[0], key[1] + 1) if isinstance(key, tuple) else (number, 1)
            if frame["kind"] == "with":
                # the else of a with: "." is what it was outside the with
                frame["scope"] = next((outer["scope"] for outer in reversed(stack[:-1]) if "scope" in outer), ())
        elif kind == "end":
            if not stack:
                raise TemplateError("an end without a block to close", action.start)
            template.regions.append(_region(stack.pop(), action.start))
    if stack:
        kind = stack[-1]['kind']
        raise TemplateError(f"{'an' if kind == 'if' else 'a'} {{{{ {kind} }}}} block that is never closed (no {{{{ end }}}})", stack[-1]["opened"])


def _region(frame: dict, end: int) -> Region:
    key = None if frame["key"] is None else ("template", frame["key"])
    over = frame.get("over") if frame["key"] is not None and frame["key"][1] == 0 else None  # not a range's else
    unrendered = bool(frame.get("unrendered")) and frame["key"] is not None and frame["key"][1] == 0  # not its else
    return Region(frame["start"], end, key, repeated=frame["kind"] == "range",
                  excluded=frame["kind"] == "define", over=over, variable=frame.get("variable") if over is not None else None,
                  unrendered=unrendered)


def _mask(template: Template) -> None:
    text = template.source
    chars = list(text)
    for region in template.regions:
        if region.excluded:
            for k in range(region.start, region.end):
                if chars[k] != "\n":
                    chars[k] = " "
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    by_line: dict[int, list[Action]] = {}
    import bisect

    for action in template.actions:
        by_line.setdefault(bisect.bisect_right(line_starts, action.start) - 1, []).append(action)
    blanked = set()
    for line, actions in by_line.items():
        start = line_starts[line]
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        rest = "".join(text[p] for p in range(start, end) if not any(a.start <= p < a.end for a in actions))
        alone = not rest.strip() and end >= actions[-1].end
        for number, action in ((template.actions.index(a), a) for a in actions):
            action.block = alone
            fill = " " if alone or action.kind != "output" else chr(PLACEHOLDER + number)
            for k in range(action.start, action.end):
                if chars[k] != "\n":
                    chars[k] = fill
        if alone:
            blanked.add(start)
    template.masked = "".join(chars)
    template.blanked_lines = frozenset(blanked)


# -- evaluating Go template pipelines --------------------------------------------------------------

_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|`[^`]*`|\(|\)|\||[^\s()|]+)')


def _path(expression: str, scope: tuple | None, variables: dict | None = None) -> tuple | None:
    """The values path a field expression names (``.Values.a.b``, ``$.Values.a``, ``.b`` under a with,
    ``$arg`` or ``$arg.b`` of a range's element)."""
    expression = expression.strip()
    variable = re.match(r"\$(\w+)", expression)
    if variable is not None and variables and f"${variable.group(1)}" in variables:
        rest = expression[variable.end() :]
        return _path("." + rest[1:] if rest.startswith(".") else ".", variables[f"${variable.group(1)}"]) if rest else variables[f"${variable.group(1)}"]
    if expression.startswith("$."):
        expression, scope = expression[1:], ()
    elif expression == "$":
        return ()
    if expression == ".":
        return scope
    if not expression.startswith(".") or scope is None:
        return None
    parts = tuple(expression[1:].split("."))
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts):
        return None
    return scope + parts


def _lookup(values: object, path: tuple | None) -> object:
    """The value at ``path`` in the chart's values; _MISSING when values.yaml leaves it empty, UNKNOWN
    when the path is not into the values (``.Release.Name``) or there are no values to look in."""
    if path is None or not path or path[0] != "Values" or values is None:
        return UNKNOWN
    node = values
    for key in path[1:]:
        if isinstance(key, int) and isinstance(node, list) and 0 <= key < len(node):
            node = node[key]
            continue
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return _MISSING if node is None else node


class _Evaluator:
    def __init__(self, template: Template, scope: tuple | None, variables: dict | None = None) -> None:
        self.template = template
        self.scope = scope
        self.variables = variables or {}
        self.origins: list[str] = []

    def pipeline(self, body: str) -> tuple[object, str | None]:
        try:
            tokens = [m.group(1) for m in _TOKEN.finditer(body) if m.group(1)]
            value = self._pipe(tokens)
        except (ValueError, IndexError, TypeError):
            return UNKNOWN, None
        return value, ", ".join(self.origins) or None

    def _pipe(self, tokens: list[str]) -> object:
        commands: list[list[str]] = [[]]
        depth = 0
        for token in tokens:
            if token == "|" and depth == 0:
                commands.append([])
                continue
            depth += token == "("
            depth -= token == ")"
            commands[-1].append(token)
        value: object = _NOTHING
        for command in commands:
            value = self._command(command, value)
        return value

    def _command(self, tokens: list[str], piped: object) -> object:
        if tokens[0] in ("include", "template") and len(tokens) == 3 and piped is _NOTHING:
            return self._include(tokens[1], tokens[2])
        if tokens[0] == "tpl" and len(tokens) == 3 and piped is _NOTHING:
            text = self._operands([tokens[1]])[0]
            return _render_text(self.template, text, _path(tokens[2], self.scope, self.variables), self.origins) if isinstance(text, str) else UNKNOWN
        name, args = tokens[0], self._operands(tokens[1:])
        if piped is not _NOTHING:
            args.append(piped)
        if not name.startswith((".", "$", '"', "`", "(")) and not re.fullmatch(r"-?\d+(\.\d+)?|true|false", name):
            return _call(name, args)
        if len(tokens) != 1 or piped is not _NOTHING:
            return UNKNOWN
        return self._operands(tokens)[0]

    def _include(self, name_token: str, argument: str) -> object:
        """``include "name" ARG``: the named template's output with "." set to ARG (a values path)."""
        if not name_token.startswith('"'):
            return UNKNOWN
        import json

        body = self.template.defines.get(json.loads(name_token))
        if body is None:
            return UNKNOWN
        return _render_text(self.template, body, _path(argument, self.scope, self.variables), self.origins)

    def _operands(self, tokens: list[str]) -> list[object]:
        values: list[object] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token == "(":
                depth, j = 1, i + 1
                while depth:
                    depth += tokens[j] == "("
                    depth -= tokens[j] == ")"
                    j += 1
                values.append(self._pipe(tokens[i + 1 : j - 1]))
                i = j
                continue
            values.append(self._operand(token))
            i += 1
        return values

    def _operand(self, token: str) -> object:
        if token.startswith('"'):
            import json

            return json.loads(token)
        if token.startswith("`"):
            return token[1:-1]
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        if re.fullmatch(r"-?\d+\.\d+", token):
            return float(token)
        if token in ("true", "false"):
            return token == "true"
        path = _path(token, self.scope, self.variables)
        value = _lookup(self.template.values, path)
        if value is not UNKNOWN and value is not _MISSING and path is not None:
            origin = f"{self.template.values_name} {'.'.join(str(key) for key in path[1:])}"
            self.template.origin_paths[origin] = path[1:]
            self.origins.append(origin)
        return value


_NOTHING = object()


def _render_text(template: Template, text: str, scope: tuple | None, origins: list[str] | None = None) -> object:
    """A template text's output with "." at ``scope``, for a named template or ``tpl``: its text and output
    actions (trim markers applied); UNKNOWN when it holds a control action or a value not known."""
    trailing_trim = text.endswith("-")
    text = text[:-1] if trailing_trim else text
    try:
        actions = _lex(text, "helm")
    except TemplateError:
        return UNKNOWN
    out: list[str] = []
    position = 0
    for action in actions:
        if action.kind not in ("output", "comment"):
            return UNKNOWN
        piece = text[position : action.start]
        out.append(piece)
        if text.startswith("{{-", action.start):
            out[-1] = out[-1].rstrip()
        if action.kind == "output":
            value, origin = _Evaluator(template, scope).pipeline(action.body)
            text_value = _go_text(value)
            if text_value is None:
                return UNKNOWN
            if origin and origins is not None:
                origins.append(origin)
            out.append(text_value)
        position = action.end
        if text.startswith("-}}", action.end - 3):
            while position < len(text) and text[position] in " \t\r\n":
                position += 1
    out.append(text[position:])
    result = "".join(out)
    return result.rstrip() if trailing_trim else result


def _call(name: str, args: list[object]) -> object:
    if any(a is UNKNOWN for a in args):
        return UNKNOWN
    if name == "default" and len(args) == 2:
        given = args[1]
        return args[0] if given is _MISSING or given in ("", 0, False) or given == [] or given == {} else given
    if any(a is _MISSING for a in args):
        return UNKNOWN
    if name in ("quote", "squote", "toString") and len(args) == 1:
        return _go_text(args[0])
    if name == "required" and len(args) == 2:
        return args[1]
    if name in ("int", "int64") and len(args) == 1:
        return int(float(args[0])) if isinstance(args[0], (int, float, str)) and not isinstance(args[0], bool) else UNKNOWN
    if name == "float64" and len(args) == 1:
        return float(args[0]) if isinstance(args[0], (int, float, str)) else UNKNOWN
    if name in ("lower", "upper", "trim") and len(args) == 1 and isinstance(args[0], str):
        text = args[0]
        return text.lower() if name == "lower" else text.upper() if name == "upper" else text.strip()
    if name == "join" and len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], list):
        items = [item for value in args[1] if (item := _go_text(value)) is not None]
        return args[0].join(items) if len(items) == len(args[1]) else UNKNOWN
    if name == "printf" and args and isinstance(args[0], str):
        return _printf(args[0], args[1:])
    texts = [a for a in args if isinstance(a, str)]
    if name in ("trimSuffix", "trimPrefix") and len(args) == len(texts) == 2:
        affix, text = texts
        return text.removesuffix(affix) if name == "trimSuffix" else text.removeprefix(affix)
    if name == "replace" and len(args) == len(texts) == 3:
        return texts[2].replace(texts[0], texts[1])
    if name == "index" and len(args) >= 2:
        node = args[0]
        for key in args[1:]:
            if not isinstance(node, dict) or key not in node:
                return UNKNOWN
            node = node[key]
        return UNKNOWN if node is None else node
    return UNKNOWN


def _printf(layout: str, args: list[object]) -> object:
    """Go's ``printf`` for the verbs charts use (``%s``, ``%d``, ``%v``, ``%q``, ``%%``); UNKNOWN otherwise."""
    out: list[str] = []
    pending = list(args)
    i = 0
    while i < len(layout):
        c = layout[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        verb = layout[i + 1 : i + 2]
        i += 2
        if verb == "%":
            out.append("%")
            continue
        if verb not in ("s", "d", "v", "q") or not pending:
            return UNKNOWN
        text = _go_text(pending.pop(0))
        if text is None:
            return UNKNOWN
        out.append(f'"{text}"' if verb == "q" else text)
    return UNKNOWN if pending else "".join(out)


def _go_text(value: object) -> str | None:
    """A value as a Go template writes it; None when that is not certain."""
    if value is UNKNOWN or value is _MISSING or value is _NOTHING or value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Helm reads values as float64: from 1e6 up it writes 1e+06; not worth guessing
        return str(value) if abs(value) < 10**6 else None
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value)) if abs(value) < 10**6 else None
        return repr(value) if 1e-4 <= abs(value) < 1e6 else None
    if isinstance(value, str):
        return value
    return None
