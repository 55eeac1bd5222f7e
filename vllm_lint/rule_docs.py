"""``vllm-lint rule``: a rule's documentation, in ruff's sections, from its YAML; and the files made from the YAMLs
(``examples/``, the README's rules table), which ``scripts/generate_docs.py`` writes."""

from __future__ import annotations

import json
from collections.abc import Iterable

from vllm_lint.rulebook import PARSE_ERROR_CODE, Example, Rule, load_rules

_FIX_SAFETY = {
    "safe": "The fix is safe: it keeps behaviour, or replaces code that cannot run at all.",
    "unsafe": "The fix is unsafe: it changes behaviour, so it is applied only with `--unsafe-fixes`.",
    "mixed": "Some fixes are safe and some unsafe; each finding says which.",
    "none": "There is no automatic fix.",
}


def show_rule(code: str, output_format: str = "text", implementation: bool = False) -> str | None:
    """The rule's page; with ``implementation``, also where its logic is (``module:function``): that imports
    the checkers, which a SARIF report's rule help has no use for."""
    rule = load_rules().get(code)
    if rule is None:
        return None
    where = implemented_in(code) if implementation else None
    if output_format == "json":
        return json.dumps(rule_dict(rule, where), indent=2) + "\n"
    return _as_markdown(rule, where)


def list_rules(output_format: str = "text") -> str:
    rules = load_rules().values()
    if output_format == "json":
        return json.dumps([rule_dict(rule, implemented_in(rule.code)) for rule in rules], indent=2) + "\n"
    lines = [
        f"{r.code}  {_name(r):<38} {r.severity.value:<8} fix: {r.fix_safety:<7} {r.summary}  [{', '.join(implemented_in(r.code))}]"
        for r in rules
    ]
    return "\n".join(lines) + "\n"


PREVIEW_NOTE = "runs only with preview on: `--preview`, or `preview = true` in the configuration"


def _name(rule: Rule) -> str:
    return f"{rule.name} (preview)" if rule.preview else rule.name


def implemented_in(code: str) -> list[str]:
    """``module:function`` of each checker of ``code`` (VLL000: where every surface reports a file it cannot read)."""
    if code == PARSE_ERROR_CODE:
        from vllm_lint.surfaces import parse_error

        return [f"{parse_error.__module__}:{parse_error.__qualname__}"]
    from vllm_lint.registry import implementations

    return [checker.where for checker in implementations(code)]


def rule_dict(rule: Rule, where: list[str] | None = None) -> dict:
    """The rule's fields; ``where``: its checkers (``implemented_in``), when they are wanted."""
    fields = {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity.value,
        "summary": rule.summary,
        "why": rule.why,
        "fix": {"safety": rule.fix_safety, "title": rule.fix_title},
        "directive": rule.directive,
        "surfaces": list(rule.surfaces),
        "url": rule.url,
        "since": rule.since,
        "preview": rule.preview,
    }
    if where is not None:
        fields["implementation"] = where
    return fields


def _by_release(rule: Rule) -> list[str]:
    """The examples judged against a given vLLM release: the same line is right on one release and
    wrong on another, and the rule follows the release each file targets."""
    pinned = [example for example in rule.examples if example.target]
    if not pinned:
        return []
    parts = [
        "## By vLLM release",
        "Each file is judged against the vLLM release it targets: `target-vllm-version` (or "
        "`--target-vllm-version`), else what the project pins (requirements, pyproject, lock files, a "
        "`vllm/vllm-openai` image tag).",
        "",
    ]
    for example in pinned:
        verdict = "reported" if example.kind == "bad" else "not reported"
        note = f": {example.note.strip()}" if example.note else ""
        parts += [f"On vLLM {example.target} ({verdict}){note}", *_files_of(example), f"```{example.fence}",
                  example.clean_code.rstrip("\n"), "```", ""]
    return parts


def _files_of(example: Example) -> list[str]:
    """The other files an example's project holds (a chart's values.yaml), each before the example."""
    lines = []
    for name, text in example.files:
        lines += [f"`{name}`:", f"```{_fence_for(name)}", text.rstrip("\n"), "```", ""]
    if example.files:
        lines.append(f"`{example.default_filename}`:")
    return lines


def _fence_for(name: str) -> str:
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return {"yaml": "yaml", "yml": "yaml", "sh": "bash", "py": "python", "env": "bash"}.get(suffix, "text")


def _as_markdown(rule: Rule, where: list[str] | None) -> str:
    parts = [f"# {rule.name} ({rule.code})", "", f"Severity: {rule.severity.value}", ""]
    if rule.preview:
        parts += [f"Preview since {rule.since}: it {PREVIEW_NOTE}.", ""]
    if where is not None:
        parts += [f"Implemented in: {', '.join(f'`{place}`' for place in where)}", ""]
    parts += ["## What it does", rule.summary, "", "## Why is this bad?", rule.why, ""]
    bad = next((e for e in rule.bad_examples), None)
    good = next((e for e in rule.good_examples), None)
    if bad is not None:
        parts += ["## Example", *_files_of(bad), f"```{bad.fence}", bad.clean_code.rstrip("\n"), "```", ""]
    instead = bad.fixed if bad is not None and bad.fixed else (good.clean_code if good is not None else None)
    if rule.use_instead:
        parts += ["## Use instead", rule.use_instead, ""]
    shown = bad if bad is not None and bad.fixed else good
    if instead and shown is not None:
        parts += [("Use instead:" if rule.use_instead else "## Use instead"), *(_files_of(shown) if shown is not bad else ()),
                  f"```{shown.fence}", instead.rstrip("\n"), "```", ""]
    parts += _by_release(rule)
    parts += ["## Fix safety", _FIX_SAFETY.get(rule.fix_safety, rule.fix_safety)]
    if rule.fix_title:
        parts[-1] += f" ({rule.fix_title})"
    parts += ["", "## Directive for coding agents", rule.directive, ""]
    return "\n".join(parts)


# -- files made from the rule files -------------------------------------------------------------------
def rule_pages(rules: Iterable[Rule]) -> dict[str, str]:
    """``docs/rules/``: each rule's page, as ``vllm-lint rule CODE`` prints it (what a finding's link opens)."""
    return {
        f"{rule.code}.md": f"<!-- made by scripts/generate_docs.py from rules/{rule.code}.yaml: edit that file -->\n"
        + _as_markdown(rule, None)
        for rule in rules
    }


TABLE_START = "<!-- rules table: written by scripts/generate_docs.py from rules/*.yaml -->"
TABLE_END = "<!-- end of rules table -->"
_COMMAND_SURFACES = ("shell", "dockerfile", "compose", "kubernetes", "markdown")


def example_files(rules: Iterable[Rule]) -> dict[str, str]:
    """``examples/``: each rule's first bad example that is a file of its own (no other project ``files``), named
    by its code and name, in a file its surface claims (not VLL000's: `vllm-lint check examples` shows what the
    rules find)."""
    files = {}
    for rule in rules:
        example = next((e for e in rule.bad_examples if not e.files), None)
        if example is None or rule.code == PARSE_ERROR_CODE:
            continue
        default = example.default_filename
        stem = f"{rule.code.lower()}_{rule.name.replace('-', '_')}"
        if default.startswith("example."):
            name = stem + default[len("example"):]
        else:  # a surface that claims files by name (docker-compose.yaml, Dockerfile): keep the name, tag it
            base, dot, extension = default.rpartition(".")
            name = f"{base}.{rule.code.lower()}.{extension}" if dot else f"{default}.{rule.code.lower()}"
        files[name] = example.clean_code
    return files


def rules_table(rules: Iterable[Rule]) -> str:
    """The README's table of rules, one row per rule."""
    rows = ["| code | name | severity | what it finds | where | fix |", "|---|---|---|---|---|---|"]
    for rule in rules:
        summary = rule.summary.replace("|", "\\|")
        rows.append(f"| {rule.code} | {_name(rule)} | {rule.severity.value} | {summary} | {_where(rule.surfaces)} | {rule.fix_safety} |")
    return "\n".join(rows) + "\n"


_SURFACE_NAMES = {"python": "Python", "notebook": "notebooks", "helm": "Helm", "skypilot": "SkyPilot"}
_COMMAND_NAMES = {"dockerfile": "Dockerfiles", "compose": "compose files", "kubernetes": "Kubernetes", "markdown": "Markdown"}


def _where(surfaces: tuple[str, ...]) -> str:
    shown = [_SURFACE_NAMES[s] for s in ("python", "notebook") if s in surfaces]
    commands = [surface for surface in _COMMAND_SURFACES if surface in surfaces]
    shown += ["command lines"] if len(commands) == len(_COMMAND_SURFACES) else [_COMMAND_NAMES.get(c, c) for c in commands]
    shown += [_SURFACE_NAMES[s] for s in ("helm", "skypilot") if s in surfaces]
    shown += [s for s in surfaces if s not in _SURFACE_NAMES and s not in _COMMAND_SURFACES]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def with_rules_table(readme: str, table: str) -> str:
    """``readme`` with the text between the table markers replaced by ``table``."""
    start, end = readme.index(TABLE_START) + len(TABLE_START), readme.index(TABLE_END)
    return readme[:start] + "\n" + table + readme[end:]
