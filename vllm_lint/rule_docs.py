"""``vllm-lint rule``: a rule's documentation, in ruff's sections, from its YAML."""

from __future__ import annotations

import json

from vllm_lint.rulebook import Rule, load_rules

_FIX_SAFETY = {
    "safe": "The fix is safe: it keeps behaviour, or replaces code that cannot run at all.",
    "unsafe": "The fix is unsafe: it changes behaviour, so it is applied only with `--unsafe-fixes`.",
    "mixed": "Some fixes are safe and some unsafe; each finding says which.",
    "none": "There is no automatic fix.",
}


def show_rule(code: str, output_format: str = "text") -> str | None:
    rule = load_rules().get(code)
    if rule is None:
        return None
    if output_format == "json":
        return json.dumps(rule_dict(rule), indent=2) + "\n"
    return _as_markdown(rule)


def list_rules(output_format: str = "text") -> str:
    rules = load_rules().values()
    if output_format == "json":
        return json.dumps([rule_dict(rule) for rule in rules], indent=2) + "\n"
    lines = [f"{r.code}  {r.name:<38} {r.severity.value:<8} fix: {r.fix_safety:<7} {r.summary}" for r in rules]
    return "\n".join(lines) + "\n"


def rule_dict(rule: Rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity.value,
        "summary": rule.summary,
        "why": rule.why,
        "fix": {"safety": rule.fix_safety, "title": rule.fix_title},
        "directive": rule.directive,
        "surfaces": list(rule.surfaces),
        "url": rule.url,
    }


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
        parts += [f"On vLLM {example.target} ({verdict}){note}", f"```{example.lang}", example.clean_code.rstrip("\n"), "```", ""]
    return parts


def _as_markdown(rule: Rule) -> str:
    parts = [f"# {rule.name} ({rule.code})", "", f"Severity: {rule.severity.value}", "", "## What it does", rule.summary, "", "## Why is this bad?", rule.why, ""]
    bad = next((e for e in rule.bad_examples), None)
    good = next((e for e in rule.good_examples), None)
    if bad is not None:
        parts += ["## Example", f"```{bad.lang}", bad.clean_code.rstrip("\n"), "```", ""]
    instead = bad.fixed if bad is not None and bad.fixed else (good.clean_code if good is not None else None)
    if rule.use_instead:
        parts += ["## Use instead", rule.use_instead, ""]
    if instead:
        lang = bad.lang if bad is not None else good.lang
        parts += [("Use instead:" if rule.use_instead else "## Use instead"), f"```{lang}", instead.rstrip("\n"), "```", ""]
    parts += _by_release(rule)
    parts += ["## Fix safety", _FIX_SAFETY.get(rule.fix_safety, rule.fix_safety)]
    if rule.fix_title:
        parts[-1] += f" ({rule.fix_title})"
    parts += ["", "## Directive for coding agents", rule.directive, ""]
    return "\n".join(parts)
