"""Start a new rule: its YAML, its checker skeleton and its pre-filter declaration, then the files made from the YAMLs.

    python scripts/new_rule.py VLL305 constant-seed --family sampling --needs seed
    python scripts/new_rule.py VLL209 max-num-seqs-too-high --launch --family engine

A Python rule's checker goes into ``vllm_lint/python/rules/<family>.py`` and its pre-filter declaration into
``<family>_prefilter.py`` beside it: ``--needs WORD`` (one or more) are words every file the rule can report
contains, the simplest necessary condition (sharpen it there later). A rule over the launch record (``--launch``)
goes into ``vllm_lint/launch/rules/<family>.py``, and its declaration is ``LAUNCH``. A family that does not exist
yet is created. The YAML lists the surfaces the family's rules list, with a bad example for each surface that
needs its own (notebooks, Helm, SkyPilot), and starts the rule in preview. Then fill in the YAML's texts and
examples, and the checker: ``python -m pytest -q --rule VLLnnn`` fails on the bad examples until the checker
reports them. CONTRIBUTING.md walks through it (tests/test_new_rule.py follows it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Every surface, in the order the rule files list them; what each family of a new kind starts with.
SURFACES = ("python", "notebook", "shell", "dockerfile", "compose", "kubernetes", "helm", "skypilot", "markdown")
_NEW_FAMILY_SURFACES = {True: SURFACES, False: ("python", "notebook")}
_DECLARATIONS = "\nPREFILTER = {\n"


class RuleError(Exception):
    """The rule cannot be added as asked."""


def next_release(version: str) -> str:
    """The release a rule added now first ships in: the next minor release after ``version``."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return f"{major}.{minor + 1}.0"


def family_surfaces(repo: Path, family: str, launch: bool) -> tuple[str, ...]:
    """The surfaces the family's rules list (its checkers read those files), in the catalogue's order; a new
    family's: every surface for a launch rule, Python and notebooks for a Python rule."""
    import yaml

    module = f"vllm_lint.{'launch' if launch else 'python'}.rules.{family}"
    path = repo / Path(*module.split(".")).with_suffix(".py")
    if not path.exists():
        return _NEW_FAMILY_SURFACES[launch]
    codes = set(re.findall(r'^@(?:python|launch)_rule\("(VLL\d{3})"', path.read_text(encoding="utf-8"), re.MULTILINE))
    listed: set[str] = set()
    for code in codes:
        rule_file = repo / "rules" / f"{code}.yaml"
        if rule_file.exists():
            listed.update(yaml.safe_load(rule_file.read_text(encoding="utf-8")).get("surfaces") or ())
    return tuple(s for s in SURFACES if s in listed) or _NEW_FAMILY_SURFACES[launch]


def _indented(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" if line else "\n" for line in text.splitlines())


def _launch_examples(code: str, surfaces: tuple[str, ...]) -> list[tuple[str, str]]:
    """(lang, YAML lines) of the bad examples a launch rule starts with: one per language its surfaces need."""
    line = "vllm serve m --max-model-len 8192 --host 127.0.0.1"
    examples = [("bash", f"bad: |\n  {line}  # expect: {code}\n")]
    if "python" in surfaces:
        examples.append(("python", "bad: |\n  from vllm import LLM\n"
                                   f"  llm = LLM(model=\"m\", max_model_len=8192)  # expect: {code}\n"))
    if "notebook" in surfaces:
        examples.append(("ipynb", f"bad: |\n  # %%\n  !{line}  # expect: {code}\n"))
    if "helm" in surfaces:
        examples.append(("helm", "files:\n  Chart.yaml: |\n    apiVersion: v2\n    name: llm\n    version: 0.1.0\n"
                                 "  values.yaml: |\n    model: m\n"
                                 "bad: |\n  apiVersion: apps/v1\n  kind: Deployment\n  spec:\n    template:\n      spec:\n"
                                 "        containers:\n          - name: vllm\n            image: vllm/vllm-openai:v0.32.0\n"
                                 f"            command: [\"vllm\", \"serve\", \"{{{{ .Values.model }}}}\"]  # expect: {code}\n"
                                 "            args: [\"--max-model-len\", \"8192\", \"--host\", \"127.0.0.1\"]\n"))
    if "skypilot" in surfaces:
        examples.append(("skypilot", f"bad: |\n  resources:\n    accelerators: L4:1\n  run: {line}  # expect: {code}\n"))
    examples.append(("bash", f"good: |\n  {line}\n"))
    return examples


def _python_examples(code: str, surfaces: tuple[str, ...]) -> list[tuple[str, str]]:
    examples = [("python", f"bad: |\n  todo = 'the code the rule reports'  # expect: {code}\n")]
    if "notebook" in surfaces:
        examples.append(("ipynb", f"bad: |\n  # %%\n  todo = 'the code the rule reports'  # expect: {code}\n"))
    examples.append(("python", "good: |\n  todo = 'the same code, written right'\n"))
    return examples


def _yaml(code: str, name: str, severity: str, launch: bool, surfaces: tuple[str, ...], since: str) -> str:
    examples = (_launch_examples if launch else _python_examples)(code, surfaces)
    written = "".join(f"  - lang: {lang}\n" + _indented(body, 4) for lang, body in examples)
    return f"""code: {code}
name: {name}
since: "{since}"
preview: true
severity: {severity}
surfaces: [{", ".join(surfaces)}]
summary: TODO one sentence, what the rule finds.
why: >
  TODO what goes wrong at run time, and for whom.
fix: {{safety: none}}
directive: TODO the instruction a coding agent should follow.
examples:
{written}"""


def _python_checker(code: str, function: str) -> str:
    return f'''

@python_rule("{code}")
def {function}(ctx: PyContext) -> Iterator[PyFinding]:
    for site in ctx.model.calls:
        if ctx.semantics.callee(site.node) != "TODO.the.callee":
            continue
        yield PyFinding(
            message="TODO what is wrong: its consequence; what to do instead",
            node=site.node,
            statement=site.statement,
        )
'''


def _launch_checker(code: str, function: str) -> str:
    return f'''

@launch_rule("{code}")
def {function}(launch: Launch, settings: LaunchSettings) -> Iterator[LaunchFinding]:
    setting = launch.get("TODO_engine_argument")
    if setting is None:
        return
    yield LaunchFinding(
        message="TODO what is wrong: its consequence; what to do instead",
        anchor=setting.anchor,
    )
'''


def _new_family(family: str, launch: bool) -> tuple[str, str]:
    """A new family's checker module and declaration module, before their first rule."""
    if launch:
        imports = (
            "from collections.abc import Iterator\n\n"
            "from vllm_lint.launch.record import Launch, LaunchFinding\n"
            "from vllm_lint.launch.settings import LaunchSettings\n"
            "from vllm_lint.registry import launch_rule\n"
        )
        declaration_imports = "from vllm_lint.registry import LAUNCH\n"
    else:
        imports = (
            "from collections.abc import Iterator\n\n"
            "from vllm_lint.python.context import PyContext, PyFinding\n"
            "from vllm_lint.registry import python_rule\n"
        )
        declaration_imports = "from vllm_lint.python.prefilter import contains\n"
    checkers = f'"""TODO the rules of the {family} family: what they have in common."""\n\nfrom __future__ import annotations\n\n{imports}'
    doc = (f"The rules of {family}.py read the launch record only: a file can give them only where it launches vLLM."
           if launch else f"When the rules of {family}.py can fire, read off a file's bytes (see vllm_lint.python.prefilter).")
    declarations = f'"""{doc}"""\n\nfrom __future__ import annotations\n\n{declaration_imports}{_DECLARATIONS}}}\n'

    return checkers, declarations


def _declare(declarations: str, code: str, condition: str, path: Path) -> str:
    """Add ``code``'s entry at the end of the PREFILTER dict, which ends the module."""
    if _DECLARATIONS not in declarations or not declarations.endswith("}\n"):
        raise RuleError(f"{path}: PREFILTER = {{...}} must end the module for this script to add to it")
    if f'"{code}"' in declarations:
        raise RuleError(f"{path} already declares {code}")
    return declarations[: -len("}\n")] + f'    "{code}": ({condition},),\n}}\n'


def _ensure_imported(text: str, module: str, name: str) -> str:
    """``text`` with ``from module import name`` among its imports."""
    single = re.search(rf"^from {re.escape(module)} import ([^(\n]+)$", text, re.MULTILINE)
    grouped = re.search(rf"^from {re.escape(module)} import \(\n((?:    .*\n)*)\)$", text, re.MULTILINE)
    if single is not None:
        names = [n.strip() for n in single.group(1).split(",")]
        if name in names:
            return text
        joined = ", ".join(sorted({*names, name}, key=lambda n: (not n[0].isupper(), n)))
        return text[: single.start(1)] + joined + text[single.end(1) :]
    if grouped is not None:
        names = [n.strip().rstrip(",") for n in grouped.group(1).splitlines()]
        if name in names:
            return text
        lines = "".join(f"    {n},\n" for n in sorted({*names, name}, key=lambda n: (not n[0].isupper(), n)))
        return text[: grouped.start(1)] + lines + text[grouped.end(1) :]
    imports = list(re.finditer(r"^from vllm_lint\S* import [^(\n]+$|^from vllm_lint\S* import \(\n(?:    .*\n)*\)$", text, re.MULTILINE))
    anchor = imports[-1].end() if imports else text.index("from __future__ import annotations") + len("from __future__ import annotations\n")
    return text[:anchor] + f"\nfrom {module} import {name}" + text[anchor:]


_CHECKER_IMPORTS = {
    False: [("collections.abc", "Iterator"), ("vllm_lint.python.context", "PyContext"),
            ("vllm_lint.python.context", "PyFinding"), ("vllm_lint.registry", "python_rule")],
    True: [("collections.abc", "Iterator"), ("vllm_lint.launch.record", "Launch"), ("vllm_lint.launch.record", "LaunchFinding"),
           ("vllm_lint.launch.settings", "LaunchSettings"), ("vllm_lint.registry", "launch_rule")],
}


def add_rule(code: str, name: str, family: str, severity: str, launch: bool, needs: list[str], repo: Path = REPO) -> list[Path]:
    """Write the rule's files; return the paths written."""
    if not re.fullmatch(r"VLL\d{3}", code):
        raise RuleError(f"{code}: a code is VLL and three digits")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise RuleError(f"{name}: a name is lower-case words joined by hyphens")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", family) or family.endswith("_prefilter"):
        raise RuleError(f"{family}: a family is a module name")
    if not launch and not needs:
        raise RuleError("a Python rule needs --needs WORD: a word every file it can report contains")
    for word in needs:
        if not re.fullmatch(r"[ -~]+", word) or '"' in word or "\\" in word:
            raise RuleError(f"{word!r}: a word is printable ASCII without quotes or backslashes")
    yaml_path = repo / "rules" / f"{code}.yaml"
    if yaml_path.exists():
        raise RuleError(f"{yaml_path} exists")
    function = name.replace("-", "_")
    package = repo / "vllm_lint" / ("launch" if launch else "python") / "rules"
    module, declarations = package / f"{family}.py", package / f"{family}_prefilter.py"
    if module.exists() != declarations.exists():
        raise RuleError(f"{module} and {declarations} come in pairs")
    if module.exists():
        checkers, declared = module.read_text(encoding="utf-8"), declarations.read_text(encoding="utf-8")
        if re.search(rf"^def {function}\(", checkers, re.MULTILINE):
            raise RuleError(f"{module} already defines {function}")
    else:
        checkers, declared = _new_family(family, launch)
    words = ", ".join('b"' + word + '"' for word in needs)
    condition = "LAUNCH" if launch else f"contains({words})"
    declared = _declare(declared, code, condition, declarations)
    declared = _ensure_imported(declared, *(("vllm_lint.registry", "LAUNCH") if launch else ("vllm_lint.python.prefilter", "contains")))
    for source, imported in _CHECKER_IMPORTS[launch]:
        checkers = _ensure_imported(checkers, source, imported)
    checkers = checkers.rstrip("\n") + "\n" + (_launch_checker if launch else _python_checker)(code, function)
    from vllm_lint import __version__

    surfaces = family_surfaces(repo, family, launch)
    yaml_path.write_text(_yaml(code, name, severity, launch, surfaces, next_release(__version__)), encoding="utf-8")
    module.write_text(checkers, encoding="utf-8")
    declarations.write_text(declared, encoding="utf-8")
    return [yaml_path, module, declarations]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="VLLnnn")
    parser.add_argument("name", help="kebab-case, e.g. constant-request-id (the checker is constant_request_id)")
    parser.add_argument("--family", required=True, help="the family module, e.g. serving (created if new)")
    parser.add_argument("--severity", choices=["error", "warning", "info"], default="warning")
    parser.add_argument("--launch", action="store_true", help="a rule over the launch record (every surface)")
    parser.add_argument("--needs", action="append", default=[], metavar="WORD",
                        help="a Python rule: a word every file it can report contains (repeatable)")
    args = parser.parse_args(argv)
    try:
        written = add_rule(args.code, args.name, args.family, args.severity, args.launch, args.needs)
    except RuleError as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(REPO)}")
    from generate_docs import main as generate_docs  # scripts/ is this script's folder

    generate_docs([])
    from vllm_lint.registry import consistency_problems

    for problem in consistency_problems():
        print(f"registry: {problem}", file=sys.stderr)
    print(f"next: fill in rules/{args.code}.yaml and the checker (CONTRIBUTING.md, steps 2 to 4), then "
          f"python -m pytest -q --rule {args.code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
