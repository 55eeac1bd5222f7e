"""Rules -> the text of each agent rule file, through one Jinja2 template per target.

The context is built from the rule catalogue (``rules/*.yaml``): each rule's code,
directive, a one-line why, and one short bad and one good snippet (Python first,
``# expect:`` markers stripped). Formats with a size limit get fewer snippets until
they fit; what was left out is reported, never silently cut.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from vllm_lint.agent_rules.blocks import HASH_PLACEHOLDER, stamp
from vllm_lint.agent_rules.targets import BLOCK, DEFAULT_GLOBS, PART, Output, surface_globs

if TYPE_CHECKING:
    from jinja2 import Environment

    from vllm_lint.rulebook import Example, Rule

# Not advice on serving code: "unreadable file", and a dead noqa comment (`--fix` takes it out)
SKIPPED_CODES = frozenset({"VLL000", "VLL001"})
GROUPS = {
    "1": "Serving: request handlers and engines",
    "2": "Engine arguments",
    "3": "Sampling parameters and vLLM APIs",
    "4": "Deployment: entrypoints, containers, security",
    "5": "Framework and API migrations",
}
# A group's file name, where an output is split by group (``.devin/rules/vllm-{part}.md``).
GROUP_PARTS = {"1": "serving", "2": "engine-arguments", "3": "sampling", "4": "deployment", "5": "migrations"}
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
BEGIN_LINE = f"<!-- vllm-lint:begin {HASH_PLACEHOLDER} -->"
END_LINE = "<!-- vllm-lint:end -->"
GENERATED_LINE = (
    f"<!-- vllm-lint:generated {HASH_PLACEHOLDER}: written by `vllm-lint init` from its rule catalogue. "
    "Do not edit; run `vllm-lint init` to update. -->"
)
BLOCK_NOTE = "<!-- Written by `vllm-lint init` from its rule catalogue; edit outside this block, run `vllm-lint init` to update. -->"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


class SizeLimitError(ValueError):
    """Generated content does not fit a tool's limit even without examples."""


@dataclass(frozen=True)
class Snippet:
    lang: str  # the fence info string
    code: str  # ends with a newline
    note: str | None = None

    @property
    def lines(self) -> int:
        return self.code.count("\n")


@dataclass(frozen=True)
class RuleView:
    code: str
    name: str
    severity: str
    summary: str
    directive: str
    why: str  # the whole why, on one line
    why_short: str  # its first sentence: the concrete consequence
    use_instead: str | None
    fixable: bool
    group: str
    bad: Snippet | None
    good: Snippet | None
    show_examples: bool = True
    # What the rule says on given vLLM releases, from the examples that carry a target.
    by_release: str | None = None
    surfaces: tuple[str, ...] = ()

    @property
    def example_lines(self) -> int:
        return sum(s.lines + 4 for s in (self.bad, self.good) if s is not None)


@dataclass
class Rendered:
    text: str
    without_examples: list[str] = field(default_factory=list)  # codes whose snippets did not fit


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _first_sentence(text: str) -> str:
    flat = _one_line(text)
    return _SENTENCE_END.split(flat, maxsplit=1)[0]


def _snippet(example: Example | None, code: str | None = None) -> Snippet | None:
    if example is None:
        return None
    text = code if code is not None else example.clean_code
    text = text.rstrip("\n") + "\n"
    return Snippet(example.fence, text, _one_line(example.note) if example.note else None)


def _pick(examples: list[Example]) -> Example | None:
    """Snippets that lint as shown first (not a notebook's cells, no values.yaml beside them), then Python
    before other languages, plain examples before edge cases (those carry a note), shorter first."""
    if not examples:
        return None
    return min(
        enumerate(examples),
        key=lambda pair: (not pair[1].standalone, pair[1].lang != "python", pair[1].note is not None, len(pair[1].clean_code.splitlines()), pair[0]),
    )[1]


def rule_view(rule: Rule) -> RuleView:
    bad_example = _pick(rule.bad_examples)
    good_plain = [e for e in rule.good_examples if e.note is None]
    good = _snippet(_pick(good_plain)) if good_plain else None
    if good is None and bad_example is not None and bad_example.fixed:
        good = _snippet(bad_example, str(bad_example.fixed))  # the autofix's output is the natural contrast
    if good is None:
        good = _snippet(_pick(rule.good_examples))
    return RuleView(
        code=rule.code,
        name=rule.name,
        severity=str(getattr(rule.severity, "value", rule.severity)),
        summary=_one_line(rule.summary),
        directive=_one_line(rule.directive),
        why=_one_line(rule.why),
        why_short=_first_sentence(rule.why),
        use_instead=_one_line(rule.use_instead) if rule.use_instead else None,
        fixable=rule.fix_safety != "none",
        group=GROUPS.get(rule.code[3], "Other"),
        bad=_snippet(bad_example),
        good=good,
        by_release=_by_release(rule),
        surfaces=rule.surfaces,
    )


def _by_release(rule: Rule) -> str | None:
    notes = [f"on vLLM {e.target}, {_one_line(e.note).rstrip('.')}" for e in rule.examples if e.target and e.note]
    return "; ".join(notes) + "." if notes else None


def rule_views(preview: bool = False) -> list[RuleView]:
    """The rules the files teach: those in preview only with ``preview`` (the project runs them)."""
    from vllm_lint.rulebook import load_rules

    return [
        rule_view(rule) for code, rule in load_rules().items() if code not in SKIPPED_CODES and (preview or not rule.preview)
    ]


def environment() -> Environment:
    import jinja2

    from vllm_lint.resources import templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["quote"] = lambda value: json.dumps(str(value), ensure_ascii=False)  # a YAML double-quoted scalar
    env.filters["lower_first"] = lambda value: value[:1].lower() + value[1:]
    # What `init` found the project's files use (cli/init.py: serving_stacks); none: the intro asserts nothing.
    env.globals["found"] = ()
    return env


def _groups(views: list[RuleView]) -> list[tuple[str, list[RuleView]]]:
    grouped: dict[str, list[RuleView]] = {}
    for view in views:
        grouped.setdefault(view.group, []).append(view)
    return list(grouped.items())


def _render_once(env: Environment, output: Output, views: list[RuleView], globs: tuple[str, ...]) -> str:
    from vllm_lint import __version__

    body = env.get_template(output.template).render(
        rules=views,
        groups=_groups(views),
        globs=list(globs),
        globs_csv=",".join(globs),
        generated=GENERATED_LINE,
        version=__version__,
        path=output.path,
    )
    body = re.sub(r"\n{3,}", "\n\n", body).strip("\n")
    if output.mode == BLOCK:
        return stamp(f"{BEGIN_LINE}\n{BLOCK_NOTE}\n{body}\n{END_LINE}")  # no trailing newline: the merge adds it
    return stamp(body + "\n")


def _size(text: str, output: Output) -> tuple[int, int]:
    return text.count("\n") + 1, len(text)


def _fits(text: str, output: Output) -> bool:
    lines, chars = _size(text, output)
    if output.fit_lines is not None and lines > output.fit_lines:
        return False
    return output.fit_chars is None or chars <= output.fit_chars


def _drop_order(views: list[RuleView]) -> list[str]:
    """Which rules lose their snippets first: the longest, then info before warning before error.

    Keeping many short examples teaches more per line than a few long ones.
    """
    candidates = [v for v in views if v.bad is not None or v.good is not None]
    candidates.sort(key=lambda v: (-v.example_lines, SEVERITY_RANK.get(v.severity, 1), v.code))
    return [v.code for v in candidates]


def render_output(output: Output, views: list[RuleView], globs: tuple[str, ...], env: Environment | None = None) -> Rendered:
    """The file's generated text (the whole file, or the managed block), fitted to the tool's limits."""
    env = env or environment()
    dropped: list[str] = []
    order = _drop_order(views)
    while True:
        current = [_with_examples(v, v.code not in dropped) for v in views]
        text = _render_once(env, output, current, globs)
        if _fits(text, output) or not order:
            break
        dropped.append(order.pop(0))
    _enforce_limits(text, output)
    return Rendered(text, sorted(dropped))


def _with_examples(view: RuleView, show: bool) -> RuleView:
    return view if view.show_examples == show else replace(view, show_examples=show)


def _enforce_limits(text: str, output: Output) -> None:
    lines, chars = _size(text, output)
    if output.max_chars is not None and chars > output.max_chars:
        raise SizeLimitError(
            f"{output.path} would be {chars:,} characters; the tool reads at most {output.max_chars:,} characters per file"
        )
    if output.max_block_lines is not None and lines > output.max_block_lines:
        raise SizeLimitError(
            f"the vllm-lint block in {output.path} would be {lines} lines; keep it under {output.max_block_lines} lines"
        )


def render_parts(
    output: Output, views: list[RuleView], globs: tuple[str, ...] | None, env: Environment | None = None
) -> list[tuple[Output, Rendered]]:
    """Each file ``output`` stands for, with its text: the output itself, or for a split one a file per group of
    rules (split again where a group outgrows the budget without examples), each with the globs of its rules'
    surfaces. ``globs``: the user's globs (every file gets them); None: the defaults."""
    env = env or environment()
    if output.split is None:
        return [(output, render_output(output, views, globs or DEFAULT_GLOBS, env))]
    parts = []
    for key, group in _groups(views):
        code_group = next((k for k, title in GROUPS.items() if title == key), None)
        name = GROUP_PARTS.get(code_group or "", "other")
        chunks = _chunks(output, group, env)
        for number, chunk in enumerate(chunks, start=1):
            path = output.path.replace(PART, name if number == 1 else f"{name}-{number}")
            part = replace(output, path=path, split=None)
            chosen = globs or surface_globs({surface for view in chunk for surface in view.surfaces})
            parts.append((part, render_output(part, chunk, chosen, env)))
    return parts


def _chunks(output: Output, views: list[RuleView], env: Environment) -> list[list[RuleView]]:
    """``views`` in order, cut where a file of them without examples would outgrow the output's budget."""
    chunks: list[list[RuleView]] = [[]]
    for view in views:
        candidate = [*chunks[-1], view]
        plain = [_with_examples(v, False) for v in candidate]
        if chunks[-1] and not _fits(_render_once(env, output, plain, surface_globs(set())), output):
            chunks.append([view])
        else:
            chunks[-1] = candidate
    return chunks
