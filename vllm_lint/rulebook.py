"""The rule catalogue, read from ``rules/VLLnnn.yaml`` (one file per rule).

Each YAML file is the single source for a rule's metadata, its documentation
(``vllm-lint rule CODE``), its test cases and the agent rule files. Checker code
registers against the code; everything a user reads comes from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vllm_lint.diagnostics import Severity
from vllm_lint.resources import rules_dir
from vllm_lint.lazy_re import lazy_compile

PARSE_ERROR_CODE = "VLL000"
_PARSED_RULES = "rule-files"  # the user-cache stores of parsed rule files (one per rule, see _store_name)
_HEADS = "rule-heads"  # the user-cache store of every rule's head (rule_head)
_CODE_RE = lazy_compile(r"^VLL\d{3}$")
_SINCE_RE = lazy_compile(r"^\d+\.\d+\.\d+$")
_PREVIEW_LINE = lazy_compile(r"^preview:[ \t]*true[ \t]*(?:#.*)?$", re.MULTILINE)
EXPECT_RE = lazy_compile(r"\s*#\s*expect:\s*(?P<codes>VLL\d{3}(?:\s*,\s*VLL\d{3})*)\s*$")

LANG_SUFFIX = {
    "python": ".py",
    "bash": ".sh",
    "shell": ".sh",
    "dockerfile": "Dockerfile",
    "yaml": ".yaml",
    "compose": "docker-compose.yaml",
    "kubernetes": ".yaml",
    "helm": "templates/deployment.yaml",  # a chart's template; the example's ``files`` hold Chart.yaml and values.yaml
    "skypilot": "task.yaml",
    "markdown": ".md",
    # files that hold a launch inside a language of their own (surfaces/systemd.py, makefile.py, ...)
    "systemd": "vllm.service",
    "makefile": "Makefile",
    "github-actions": ".github/workflows/serve.yml",
    "cloud-init": "cloud-init.yaml",
    "slurm": "job.sbatch",
    "dstack": ".dstack.yml",
    "procfile": "Procfile",
    "supervisord": "supervisord.conf",
    "justfile": "justfile",
    "taskfile": "Taskfile.yml",
    # CI files whose name starts with a dot: an example names its file (``filename:``)
    "gitlab-ci": ".gitlab-ci.yml",
    "buildkite": ".buildkite/pipeline.yml",
    # A notebook example is written in the percent format (``# %%`` starts a code cell, ``# %% [markdown]``
    # a Markdown cell whose lines are ``# ``-commented), the plain-text form of notebooks that jupytext and
    # editors read; tests turn it into the .ipynb it stands for.
    "ipynb": ".ipynb",
}
# The fence info string an example is shown under (``vllm-lint rule``, agent rule files).
FENCE_LANG = {"shell": "bash", "compose": "yaml", "kubernetes": "yaml", "helm": "yaml", "skypilot": "yaml", "ipynb": "python",
              "systemd": "ini", "makefile": "make", "github-actions": "yaml", "cloud-init": "yaml", "slurm": "bash",
              "dstack": "yaml", "procfile": "text", "supervisord": "ini", "justfile": "just", "taskfile": "yaml",
              "gitlab-ci": "yaml", "buildkite": "yaml"}


class RuleFileError(ValueError):
    """A rule YAML file is malformed: a bug in the shipped data, reported clearly."""


@dataclass(frozen=True, slots=True)
class Example:
    """A code example of a rule's YAML: bad or good code, and the bad code fixed."""
    lang: str
    kind: str  # "bad" or "good"
    code: str
    fixed: str | None = None
    filename: str | None = None
    note: str | None = None
    # Other files of the example's project, by path relative to where the example's file is written from:
    # what a handler reaches in another module (python/project.py), a chart's Chart.yaml and values.yaml,
    # the entrypoint script a Dockerfile copies, compose's .env.
    files: tuple[tuple[str, str], ...] = ()
    # The vLLM releases the example is judged against (as the target-vllm-version setting takes them):
    # a name one release has and another lacks is right or wrong by the release.
    target: str | None = None
    # The shape of launch file, launcher or fact the example shows (``shape:``, issue 38's list): the audit in
    # docs/realworld.md names the rules each shape has examples of, and tests/test_shape_examples.py holds it true.
    shape: str | None = None

    def expected_lines(self, rule_code: str) -> list[int]:
        """Lines marked ``# expect: CODE`` for this rule (1-based)."""
        lines = []
        for number, line in enumerate(self.code.splitlines(), start=1):
            match = EXPECT_RE.search(line)
            if match and rule_code in re.split(r"\s*,\s*", match.group("codes")):
                lines.append(number)
        return lines

    @property
    def clean_code(self) -> str:
        """The snippet without its ``# expect:`` markers, for docs and agent files."""
        return "\n".join(EXPECT_RE.sub("", line) for line in self.code.splitlines()) + "\n"

    @property
    def fence(self) -> str:
        return FENCE_LANG.get(self.lang, self.lang)

    @property
    def standalone(self) -> bool:
        """Whether the snippet lints as shown, as one file of its fence's language (no other files, not a
        notebook's cells)."""
        return not self.files and self.lang != "ipynb"

    @property
    def default_filename(self) -> str:
        if self.filename:
            return self.filename
        suffix = LANG_SUFFIX.get(self.lang, ".txt")
        return suffix if not suffix.startswith(".") else f"example{suffix}"


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule as its YAML file describes it."""
    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    directive: str
    fix_safety: str  # "safe", "unsafe", "mixed" or "none"
    fix_title: str | None
    surfaces: tuple[str, ...]
    examples: tuple[Example, ...] = field(default=())
    use_instead: str | None = None
    # The release that first shipped the rule (``since:``), and whether it is still in preview: a preview rule
    # runs only where preview is on (``preview = true``, ``--preview``), as ruff's preview rules do.
    since: str = ""
    preview: bool = False

    @property
    def url(self) -> str:
        return f"https://github.com/vllm-lint/vllm-lint/blob/main/docs/rules/{self.code}.md"  # rule_docs.rule_pages

    @property
    def bad_examples(self) -> list[Example]:
        return [e for e in self.examples if e.kind == "bad"]

    @property
    def good_examples(self) -> list[Example]:
        return [e for e in self.examples if e.kind == "good"]


def _require(data: dict, key: str, path: Path) -> object:
    if key not in data:
        raise RuleFileError(f"{path.name}: missing key {key!r}")
    return data[key]


def _parse_examples(raw: object, path: Path) -> tuple[Example, ...]:
    if not isinstance(raw, list):
        raise RuleFileError(f"{path.name}: 'examples' must be a list")
    examples = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or ("bad" in item) == ("good" in item):
            raise RuleFileError(f"{path.name}: example {index} needs exactly one of 'bad' or 'good'")
        kind = "bad" if "bad" in item else "good"
        files = item.get("files") or {}
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise RuleFileError(f"{path.name}: example {index}: 'files' must map file names to their text")
        examples.append(
            Example(
                lang=str(item.get("lang", "python")),
                kind=kind,
                code=str(item[kind]),
                fixed=item.get("fixed"),
                filename=item.get("filename"),
                note=item.get("note"),
                files=tuple(sorted(files.items())),
                target=str(item["target"]) if item.get("target") is not None else None,
                shape=str(item["shape"]) if item.get("shape") is not None else None,
            )
        )
    return tuple(examples)


def parse_rule(data: dict, path: Path) -> Rule:
    code = str(_require(data, "code", path))
    if not _CODE_RE.match(code) or path.stem != code:
        raise RuleFileError(f"{path.name}: code {code!r} must be VLLnnn and match the file name")
    fix = data.get("fix") or {}
    try:
        severity = Severity(str(_require(data, "severity", path)))
    except ValueError as exc:
        raise RuleFileError(f"{path.name}: severity must be error, warning or info") from exc
    return Rule(
        code=code,
        name=str(_require(data, "name", path)),
        severity=severity,
        summary=str(_require(data, "summary", path)).strip(),
        why=str(_require(data, "why", path)).strip(),
        directive=str(_require(data, "directive", path)).strip(),
        fix_safety=str(fix.get("safety", "none")),
        fix_title=fix.get("title"),
        surfaces=tuple(data.get("surfaces", ["python"])),
        examples=_parse_examples(data.get("examples", []), path),
        use_instead=(str(data["use_instead"]).strip() if data.get("use_instead") else None),
        since=_since(data, path),
        preview=_preview(data, path),
    )


def _since(data: dict, path: Path) -> str:
    since = str(_require(data, "since", path))
    if not _SINCE_RE.match(since):
        raise RuleFileError(f"{path.name}: `since` must be the vllm-lint release that first ships the rule, like \"0.2.0\"")
    return since


def _preview(data: dict, path: Path) -> bool:
    preview = data.get("preview", False)
    if not isinstance(preview, bool):
        raise RuleFileError(f"{path.name}: `preview` must be true or false")
    if preview != bool(_PREVIEW_LINE.search(path.read_text(encoding="utf-8"))):
        # preview_codes() reads the flag off the file's text, without a YAML parser: keep it on a line of its own
        raise RuleFileError(f"{path.name}: write `preview: true` on a line of its own, at the top level")
    return preview


@lru_cache(maxsize=1)
def load_rules() -> dict[str, Rule]:
    """All rules, keyed by code, in code order."""
    rules: dict[str, Rule] = {}
    for path in sorted(rules_dir().glob("VLL*.yaml")):
        rule = _load_rule_file(path)
        rules[rule.code] = rule
        _parsed_files(path).save()
    return rules


def rule_for(code: str) -> Rule | None:
    """One rule, reading only its own file: a run with a few findings needs a few rules, not all 30."""
    if load_rules.cache_info().currsize:
        return load_rules().get(code)
    path = _rule_file(code)
    return None if path is None else _rule_of_file(path)


def _rule_file(code: str) -> Path | None:
    """The file of ``code``'s rule; None for a code that no rule file has."""
    path = rules_dir() / f"{code}.yaml"
    return path if _CODE_RE.match(code) and path.is_file() else None


def _rule_of_file(path: Path) -> Rule:
    """A rule file's rule, its parsed YAML kept in the user's cache."""
    rule = _load_rule_file(path)
    _parsed_files(path).save()
    return rule


@dataclass(frozen=True, slots=True)
class RuleHead:
    """What a report needs of a rule for each finding: its severity, its fix's title and its directive."""

    severity: Severity
    fix_title: str | None
    directive: str


def rule_head(code: str) -> RuleHead | None:
    """One rule's head, from a store of every rule's (``rule-heads``): a few hundred bytes a rule, where the whole
    rule (its docs and examples) is up to 200 kB of the rule's own store to read."""
    if load_rules.cache_info().currsize:
        rule = load_rules().get(code)
        return None if rule is None else RuleHead(rule.severity, rule.fix_title, rule.directive)
    path = _rule_file(code)
    if path is None:
        return None
    from vllm_lint.usercache import derived_from_file, store

    kept: tuple[str, str | None, str] = derived_from_file(_HEADS, path, _read_head)  # type: ignore[assignment]
    store(_HEADS).save()
    return RuleHead(Severity(kept[0]), kept[1], kept[2])


def _read_head(path: Path) -> tuple[str, str | None, str]:
    rule = _rule_of_file(path)
    return rule.severity.value, rule.fix_title, rule.directive


def severity_of(code: str, otherwise: Severity) -> Severity:
    """The rule's own severity, for a finding that does not set one."""
    head = rule_head(code)
    return head.severity if head is not None else otherwise


@lru_cache(maxsize=None)
def _load_rule_file(path: Path) -> Rule:
    data = _parsed_yaml(path)
    if not isinstance(data, dict):
        raise RuleFileError(f"{path.name}: expected a mapping at the top level")
    return parse_rule(data, path)


def _parsed_files(path: Path):
    from vllm_lint.usercache import store

    return store(_store_name(path))


def _store_name(path: Path) -> str:
    # One store per rule: a run with a finding or two loads those rules' parsed files, not all of them.
    return f"{_PARSED_RULES}-{path.stem}"


def _parsed_yaml(path: Path) -> object:
    """A rule file's YAML, parsed; kept in the user's cache, because a run that reports a finding needs
    its rule's severity, and importing a YAML parser costs more than linting the file (about 15 ms of a
    300 ms one-file run)."""
    from vllm_lint.usercache import derived_from_file

    return derived_from_file(_store_name(path), path, _read_yaml)


def _read_yaml(path: Path) -> object:
    import yaml  # lazy: a clean run of the fast path never needs the rule docs

    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=1)
def _codes() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in rules_dir().glob("VLL*.yaml")))


def all_codes() -> list[str]:
    """Every rule code, read off the rule files' names (each file is named by its code, checked on
    load): configuration needs the codes on every run, the rule texts only when something is found."""
    return list(_codes())


@lru_cache(maxsize=1)
def preview_codes() -> frozenset[str]:
    """The codes whose rule is in preview, read off each file's ``preview: true`` line: every run needs
    them to decide what is enabled, and a YAML parser costs more than the lint of a small file (``parse_rule``
    checks that the line and the parsed value agree)."""
    codes = []
    for path in rules_dir().glob("VLL*.yaml"):
        data = path.read_bytes()
        if b"\npreview:" in data and _PREVIEW_LINE.search(data.decode("utf-8")):  # the byte test first: most are not
            codes.append(path.stem)
    return frozenset(codes)
