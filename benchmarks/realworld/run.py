"""Lint the restored real-world corpus and report the signals that need no labels, per kind of file.

    python benchmarks/realworld/run.py FOLDER [--manifest M] [--out docs/realworld.md] [--no-fix]

FOLDER is what restore.py wrote (FOLDER/owner+name/path). For each kind of file in the manifest:

- hidden: findings the pre-filter hides (each file linted with it and without it); must be 0;
- false syntax errors: VLL000 on a file its own tool accepts (``ast.parse`` per file, per notebook cell
  and per Markdown Python block, ``bash -n``, a YAML loader, nbformat); each is listed;
- opaque launches: vLLM launches seen but not read in full, with the reasons (``vllm-lint check
  --explain-opaque``; "n/a" where the installed vllm-lint lacks that option);
- rewrite outcomes: each file with VLL101/VLL102/VLL103 is rewritten (``--fix --unsafe-fixes`` on a copy
  of its repository: the result compiles, re-lints without those codes (an info-level note aside), a second fix
  changes nothing), offloaded (the same checks passed by the fix offered where the engine rewrite is refused,
  python/rewrite/offload.py) or refused (the reason the finding gives, counted); one whose only fix is VLL104's (a
  per-request load moved to module level) is tried too, since the rewrite may follow it in the same run;
- findings per code, and the lint time.

Prints the report and writes it, dated and with the vllm-lint commit measured, to --out; the triage
(triage.tsv beside this script: file, line, code, verdict, why) is summarised in it as precision per code.
The linter is the one on PYTHONPATH (run from this worktree: ``PYTHONPATH=$PWD``).
"""

from __future__ import annotations

import argparse
import ast
import collections
import csv
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY_ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from restore import folder_name, read_manifest  # noqa: E402 - beside this script, found through sys.path

SERVER_CODES = ("VLL101", "VLL102", "VLL103")
NO_FIX_MARK = "; no automatic fix: "
FALLBACK_MARK = "; the engine rewrite is refused ("
OPAQUE_NA = "n/a (vllm-lint lacks --explain-opaque)"


@dataclasses.dataclass
class CorpusFile:
    repository: str
    path: str  # inside the repository
    kind: str
    why: str
    local: Path  # where restore.py wrote it

    @property
    def key(self) -> str:
        return str(self.local)


def corpus_files(folder: Path, manifest: Path) -> tuple[list[CorpusFile], int]:
    """The manifest's linted files (not its context rows) that are present under ``folder``; and how many are missing."""
    files, missing = [], 0
    for row in read_manifest(manifest):
        if row["kind"] == "context":
            continue
        local = (folder / folder_name(row["repository"]) / row["path"]).resolve()
        if local.is_file():
            files.append(CorpusFile(row["repository"], row["path"], row["kind"], row["why"], local))
        else:
            missing += 1
    return files, missing


def vllm_lint(*args: str, cwd: Path | None = None, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPOSITORY_ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "vllm_lint", "check", *args], capture_output=True, check=False, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def _args_file(paths: list[str]) -> list[str]:
    return [str(p) for p in paths]


def lint_json(paths: list[str], *extra: str) -> list[dict]:
    """Every finding the CLI reports on ``paths`` (one run, so project rules see every file)."""
    if not paths:
        return []
    done = vllm_lint("--output-format", "json", "--exit-zero", "--isolated", "--no-cache",
                     "--no-respect-gitignore", *extra, *_args_file(paths))
    if done.returncode != 0:
        raise RuntimeError(f"vllm-lint check failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout or "[]")


# ---------------------------------------------------------------------------------------------------------
# hidden: the pre-filter on and off


def lint_with_and_without_prefilter(paths: list[Path]) -> tuple[dict[str, set], dict[str, set], dict[str, float]]:
    """Findings per file with the pre-filter (as vllm-lint runs) and with it off, and each file's lint time.

    The pre-filter is turned off by vllm-lint's own switch (``VLLM_LINT_NO_PREFILTER``, which
    ``vllm_lint.engine.prefilter_check`` and the recall test use too): every surface then parses what it claims,
    Markdown's Python blocks and notebook cells included.
    """
    from vllm_lint.cli.check import CheckRequest, resolve_settings
    from vllm_lint.config import enabled_codes
    from vllm_lint.engine.discovery import discover
    from vllm_lint.engine.runner import RunOptions, lint_file
    from vllm_lint.rulebook import PARSE_ERROR_CODE, all_codes
    from vllm_lint.surfaces import NO_PREFILTER_VARIABLE, all_surfaces

    codes = all_codes()
    settings = resolve_settings(CheckRequest(paths=paths, isolated=True, respect_gitignore=False), codes)
    options = RunOptions(settings=settings, enabled=enabled_codes(settings, codes, (), (), ()), codes=codes)
    files = list(discover(paths, settings, all_surfaces()))

    def run(prefilter_off: bool) -> tuple[dict[str, set], dict[str, float]]:
        found: dict[str, set] = {}
        seconds: dict[str, float] = {}
        before = os.environ.pop(NO_PREFILTER_VARIABLE, None)
        if prefilter_off:
            os.environ[NO_PREFILTER_VARIABLE] = "1"
        try:
            for path, surface in files:
                start = time.perf_counter()
                try:
                    result = lint_file(path, surface, options)
                except Exception as exc:  # noqa: BLE001 - one broken file must not stop the corpus
                    found[str(path.resolve())] = {("crash", 0, 0, f"{type(exc).__name__}: {exc}")}
                    continue
                finally:
                    seconds[str(path.resolve())] = time.perf_counter() - start
                found[str(path.resolve())] = {(d.code, d.start.line, d.start.column, d.message[:120])
                                              for d in result.diagnostics if d.code != PARSE_ERROR_CODE}
        finally:
            os.environ.pop(NO_PREFILTER_VARIABLE, None)
            if before is not None:
                os.environ[NO_PREFILTER_VARIABLE] = before
        return found, seconds

    filtered, seconds = run(prefilter_off=False)
    unfiltered, _ = run(prefilter_off=True)
    return filtered, unfiltered, seconds


# ---------------------------------------------------------------------------------------------------------
# false syntax errors: does the file's own tool accept it?

MAGIC = re.compile(r"^\s*[!%]")


def _python_accepts(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"ast.parse: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # null bytes
        return f"ast.parse: {exc}"
    return None


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    # IPython magics and shell escapes are the notebook's own syntax, not Python's
    lines = ["" if MAGIC.match(line) or line.lstrip().startswith("?") else line for line in text.splitlines()]
    if lines and lines[0].startswith("%%"):
        return ""
    return "\n".join(lines)


DOCKERFILE_INSTRUCTIONS = frozenset({
    "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK", "LABEL", "MAINTAINER",
    "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR",
})
HEREDOC = re.compile(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")


def dockerfile_rejects(text: str) -> str | None:
    """BuildKit's parser rules (moby/buildkit frontend/dockerfile/parser), for want of a Docker daemon here.

    A comment line or an empty line inside a continued instruction is dropped; the escape character
    (``\\`` or the ``# escape=`` directive) may be followed by spaces before the line ends; a heredoc
    (``<<EOF``) runs to its terminator. Every instruction must then start with a known keyword.
    """
    lines = text.splitlines()
    escape = "\\"
    for line in lines[:5]:
        directive = re.match(r"^#\s*escape\s*=\s*(\S)", line, re.IGNORECASE)
        if directive:
            escape = directive.group(1)
    continued = re.compile(re.escape(escape) + r"[ \t]*$")
    number, total = 0, len(lines)
    while number < total:
        line = lines[number]
        number += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        start = number
        logical = line
        while continued.search(logical) and number < total:
            logical = continued.sub("", logical)
            following = lines[number]
            number += 1
            if not following.strip() or following.lstrip().startswith("#"):
                logical += escape  # dropped: the instruction goes on
                continue
            logical += " " + following
        keyword = logical.split(None, 1)[0].upper()
        if keyword not in DOCKERFILE_INSTRUCTIONS:
            return f"docker: unknown instruction {keyword!r} (line {start})"
        for terminator in HEREDOC.findall(logical) if keyword in ("RUN", "COPY", "ADD") else ():
            while number < total and lines[number].strip() != terminator:
                number += 1
            number += 1
    return None


def _shell_scripts(node: object) -> list[str]:
    """The scripts of ``sh -c SCRIPT`` / ``bash -c SCRIPT`` command lists anywhere in loaded YAML."""
    found: list[str] = []
    if isinstance(node, dict):
        for value in node.values():
            found += _shell_scripts(value)
    elif isinstance(node, list):
        words = [item for item in node if isinstance(item, str)]
        for index, word in enumerate(words[:-1]):
            if word == "-c" and index > 0 and words[index - 1].rsplit("/", 1)[-1] in ("sh", "bash"):
                found.append(words[index + 1])
        for item in node:
            found += _shell_scripts(item)
    return found


def yaml_rejects(text: str) -> str | None:
    """A YAML loader, then ``bash -n`` on every ``sh -c`` script it holds (as the container's shell reads it)."""
    import yaml

    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        return f"yaml: {str(exc).splitlines()[0][:120]}"
    for script in _shell_scripts(documents):
        done = subprocess.run(["bash", "-n"], input=script, capture_output=True, check=False, text=True)
        if done.returncode:
            return f"bash -n on an sh -c script: {done.stderr.strip()[:120]}"
    return None


def _block_rejects(language: str, text: str) -> str | None:
    language = language.lower()
    if language in ("python", "py", "python3"):
        return _python_accepts(text)
    if language in ("yaml", "yml") or (not language and re.search(r"^(apiVersion|kind|services):", text, re.MULTILINE)):
        return yaml_rejects(text)
    if language in ("bash", "sh", "shell", "zsh"):
        done = subprocess.run(["bash", "-n"], input=text, capture_output=True, check=False, text=True)
        return (done.stderr.strip()[:160] or "bash -n failed") if done.returncode else None
    if language in ("dockerfile", "docker"):
        return dockerfile_rejects(text)
    return f"no checker for a {language or 'plain'} block"


def markdown_block_rejects(text: str, line: int | None) -> str | None:
    """The fenced block holding ``line`` (1-based), checked by its language's own tool; every block without a line."""
    fence = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        opened = fence.match(lines[number])
        number += 1
        if not opened:
            continue
        first = number
        while number < len(lines) and not lines[number].lstrip().startswith(opened.group(2)):
            number += 1
        body = "\n".join(text[len(opened.group(1)):] if text.startswith(opened.group(1)) else text.lstrip()
                         for text in lines[first:number])
        number += 1
        if line is None or first <= line <= number:
            why = _block_rejects(opened.group(3), body)
            if line is not None or (why and not why.startswith("no checker")):
                return f"{opened.group(3) or 'plain'} block (line {first}): {why}" if why else None
    return None if line is None else "no checker (the line is in no fenced block)"


def own_tool_rejects(path: Path, line: int | None = None) -> str | None:
    """Why the file's own tool rejects it (None: it accepts it; "no checker...": none here).

    ``line`` picks the block of a Markdown file (its code blocks are checked each with its own language's tool).
    """
    name = path.name.lower()
    data = path.read_bytes()
    if name.endswith(".py"):
        return _python_accepts(data.decode("utf-8", "replace"))
    if name.endswith(".ipynb"):
        try:
            import nbformat

            notebook = nbformat.reads(data.decode("utf-8", "replace"), as_version=nbformat.NO_CONVERT)
        except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds
            return f"nbformat: {type(exc).__name__}: {str(exc)[:100]}"
        for number, cell in enumerate(notebook.get("cells", []), 1):
            if cell.get("cell_type") == "code":
                why = _python_accepts(_cell_source(cell))
                if why:
                    return f"cell {number}: {why}"
        return None
    if name.endswith((".sh", ".bash")):
        done = subprocess.run(["bash", "-n", str(path)], capture_output=True, check=False, text=True)
        return (done.stderr.strip()[:160] or "bash -n failed") if done.returncode else None
    if name.endswith((".yaml", ".yml")):
        if "{{" in data.decode("utf-8", "replace"):
            return "no checker (a template: helm renders it first)"
        return yaml_rejects(data.decode("utf-8", "replace"))
    if name.endswith((".md", ".markdown")):
        return markdown_block_rejects(data.decode("utf-8", "replace"), line)
    if name.startswith(("dockerfile", "containerfile")) or name.endswith((".dockerfile", ".containerfile")):
        return dockerfile_rejects(data.decode("utf-8", "replace"))
    return "no checker"


# ---------------------------------------------------------------------------------------------------------
# opaque launches (vllm-lint check --explain-opaque)


def explain_opaque(paths: list[str]) -> list[dict] | None:
    """One object per vLLM launch seen, or None when this vllm-lint has no --explain-opaque."""
    from vllm_lint.cli.main import check

    if not any("--explain-opaque" in param.opts for param in check.params):
        return None
    done = vllm_lint("--explain-opaque", "--output-format", "json", "--isolated", "--no-cache",
                     "--no-respect-gitignore", *paths)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"--explain-opaque failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout or "[]")


# ---------------------------------------------------------------------------------------------------------
# rewrite outcomes


def refusal_reason(message: str) -> str:
    if NO_FIX_MARK in message:
        return message.split(NO_FIX_MARK, 1)[1].strip()
    if FALLBACK_MARK in message:
        return message.split(FALLBACK_MARK, 1)[1].rsplit("); the fix offered instead", 1)[0].strip()
    return "no fix offered"


def _compiles(path: Path) -> str | None:
    if path.name.endswith(".ipynb"):
        return own_tool_rejects(path)
    return _python_accepts(path.read_text(encoding="utf-8", errors="replace"))


def try_rewrite(file: CorpusFile, folder: Path, after_a_move: bool = False) -> tuple[str, str]:
    """("rewritten", "") or ("broken", what failed): --fix --unsafe-fixes on a copy of the file's repository.
    ``after_a_move``: only VLL104's fix was offered (a load moved out of a handler); a server finding left with
    no fix after it is a refusal, with its reason."""
    with tempfile.TemporaryDirectory(prefix="realworld-fix-") as scratch:
        copy = Path(scratch) / folder_name(file.repository)
        shutil.copytree(folder / folder_name(file.repository), copy)
        target = copy / file.path
        fixed = vllm_lint("--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--no-cache",
                          "--no-respect-gitignore", "--output-format", "json", str(target))
        if fixed.returncode != 0:
            return "broken", f"--fix exited {fixed.returncode}: {fixed.stderr.strip()[-160:]}"
        why = _compiles(target)
        if why:
            return "broken", f"the rewrite does not compile: {why}"
        left = [f for f in json.loads(fixed.stdout or "[]") if f["code"] in SERVER_CODES and f["severity"] != "info"]
        if after_a_move and left and not any(f.get("fix") for f in left):
            return "refused", "; ".join(sorted({refusal_reason(f["message"]) for f in left}))
        remaining = [f["code"] for f in left]
        if remaining:
            return "broken", f"re-lint still reports {', '.join(sorted(set(remaining)))}"
        once = target.read_bytes()
        vllm_lint("--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--no-cache", "--no-respect-gitignore",
                  "--output-format", "json", str(target))
        if target.read_bytes() != once:
            return "broken", "a second --fix changed the file again"
    return "rewritten", ""


# ---------------------------------------------------------------------------------------------------------
# the report


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPOSITORY_ROOT), *args], capture_output=True, check=False, text=True).stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    linter = git("log", "-1", "--format=%h", "--", "vllm_lint", "rules") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "vllm_lint", "rules")
    return f"{head} (vllm_lint/ and rules/ as of {linter}" + (", with uncommitted changes)" if dirty else ")")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows]
    return lines


def _top(counter: collections.Counter[str], n: int = 3) -> str:
    return "; ".join(f"{reason} ({count})" for reason, count in counter.most_common(n)) or "-"


def triage_summary(triage: Path) -> tuple[list[str], list[dict[str, str]]]:
    if not triage.is_file():
        return ["(no triage.tsv)"], []
    with triage.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    per_code: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for row in rows:
        per_code[row["code"]][row["verdict"]] += 1
    table = [[code, c["right"], c["wrong"], f"{c['right'] / (c['right'] + c['wrong']):.2f}" if c["right"] + c["wrong"] else "-"]
             for code, c in sorted(per_code.items())]
    for label, codes in (("all but VLL000", [c for c in per_code if c != "VLL000"]), ("all", list(per_code))):
        right = sum(per_code[c]["right"] for c in codes)
        wrong = sum(per_code[c]["wrong"] for c in codes)
        table.append([label, right, wrong, f"{right / (right + wrong):.2f}" if right + wrong else "-"])
    return _table(["code", "right", "wrong", "precision"], table), [r for r in rows if r["verdict"] == "wrong"]


def measure(folder: Path, manifest: Path, fix: bool = True) -> dict:
    files, missing = corpus_files(folder, manifest)
    by_key = {f.key: f for f in files}
    kinds = sorted({f.kind for f in files})
    paths = [f.key for f in files]
    report: dict = {"files": len(files), "missing": missing, "repositories": len({f.repository for f in files}),
                    "kinds": kinds, "per_kind": {k: collections.Counter() for k in kinds}, "by_key": by_key}

    def kind_of(filename: str) -> str | None:
        found = by_key.get(str(Path(filename).resolve()))
        return found.kind if found else None

    for f in files:
        report["per_kind"][f.kind]["files"] += 1

    start = time.perf_counter()
    findings = lint_json(paths)
    report["cli_seconds"] = time.perf_counter() - start
    codes_by_kind: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in kinds}
    for finding in findings:
        kind = kind_of(finding["filename"])
        if kind:
            codes_by_kind[kind][finding["code"]] += 1
    report["codes_by_kind"] = codes_by_kind
    report["findings"] = findings

    filtered, unfiltered, seconds = lint_with_and_without_prefilter([f.local for f in files])
    hidden = []
    for key, everything in unfiltered.items():
        for finding in sorted(everything - filtered.get(key, set())):
            if finding[0] != "crash":
                hidden.append((key, finding))
    crashes = [(key, next(iter(v))[3]) for key, v in filtered.items() if any(f[0] == "crash" for f in v)]
    for key, _ in hidden:
        if kind_of(key):
            report["per_kind"][kind_of(key)]["hidden"] += 1
    for key, took in seconds.items():
        if kind_of(key):
            report["per_kind"][kind_of(key)]["seconds"] += took
    report["hidden"], report["crashes"] = hidden, crashes

    false_syntax = []
    for finding in findings:
        if finding["code"] != "VLL000":
            continue
        kind = kind_of(finding["filename"])
        report["per_kind"][kind]["VLL000"] += 1
        why = own_tool_rejects(Path(finding["filename"]), finding["location"]["row"])
        if why is None:
            report["per_kind"][kind]["false syntax"] += 1
            false_syntax.append((finding, "false: its own tool accepts it"))
        elif why.startswith("no checker"):
            report["per_kind"][kind]["VLL000 unchecked"] += 1
            false_syntax.append((finding, f"unchecked: {why}"))
    report["false_syntax"] = false_syntax

    launches = explain_opaque(paths)
    report["opaque_available"] = launches is not None
    reasons_by_kind: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in kinds}
    for launch in launches or []:
        kind = kind_of(launch["filename"])
        if not kind:
            continue
        report["per_kind"][kind]["launches"] += 1
        if launch.get("opaque"):
            report["per_kind"][kind]["opaque"] += 1
            reasons_by_kind[kind].update(launch.get("reasons") or ["(no reason given)"])
    report["opaque_reasons"] = reasons_by_kind

    server_files: dict[str, list[dict]] = collections.defaultdict(list)
    moved_loads: set[str] = set()  # VLL104's fix moves a per-request load out: the rewrite may follow it
    for finding in findings:
        if finding["code"] in SERVER_CODES:
            server_files[str(Path(finding["filename"]).resolve())].append(finding)
        elif finding["code"] == "VLL104" and finding.get("fix"):
            moved_loads.add(str(Path(finding["filename"]).resolve()))
    outcomes = []
    refusals_by_kind: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in kinds}
    broken_by_kind: dict[str, collections.Counter[str]] = {k: collections.Counter() for k in kinds}
    fix_start = time.perf_counter()
    for key, server_findings in sorted(server_files.items()):
        file = by_key.get(key)
        if file is None:
            continue
        offered = any(f.get("fix") for f in server_findings)
        after_a_move = not offered and key in moved_loads
        if not offered and not after_a_move:
            reasons = sorted({refusal_reason(f["message"]) for f in server_findings})
            report["per_kind"][file.kind]["refused"] += 1
            refusals_by_kind[file.kind].update(reasons)
            outcomes.append((file, "refused", "; ".join(reasons)))
            continue
        if not fix:
            outcomes.append((file, "fix offered (not tried: --no-fix)", ""))
            report["per_kind"][file.kind]["fix offered"] += 1
            continue
        outcome, why = try_rewrite(file, folder, after_a_move)
        if outcome == "rewritten" and any(FALLBACK_MARK in f["message"] for f in server_findings):
            outcome, why = "offloaded", "; ".join(sorted({refusal_reason(f["message"]) for f in server_findings}))
        report["per_kind"][file.kind][outcome] += 1
        if outcome == "broken":
            broken_by_kind[file.kind][why] += 1
        if outcome == "refused":
            refusals_by_kind[file.kind].update(why.split("; "))
        outcomes.append((file, outcome, why))
    report["fix_seconds"] = time.perf_counter() - fix_start
    report["outcomes"], report["refusals"], report["broken"] = outcomes, refusals_by_kind, broken_by_kind
    return report


def _shown(filename: str, report: dict) -> str:
    """owner/name `path` for a restored file."""
    found = report["by_key"].get(str(Path(filename).resolve()))
    return f"{found.repository} `{found.path}`" if found else f"`{filename}`"


def render(report: dict, triage: Path, started: float) -> str:
    kinds = report["kinds"]
    per_kind = report["per_kind"]
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# vllm-lint on real public code",
        "",
        f"Measured {today}, vllm-lint commit {_commit()}, on the corpus in benchmarks/realworld/manifest.tsv: "
        f"{report['files']} files from {report['repositories']} public repositories"
        + (f" ({report['missing']} manifest files were not restored)" if report["missing"] else "")
        + ". How to rebuild and rerun it: benchmarks/realworld/README.md.",
        "",
        ("Signals that need no labels, per kind of file (`kind` as in the manifest; `negative` = SGLang, TGI, "
        "llama.cpp, Ollama, Triton files that a vLLM linter should leave alone)."),
        "",
        "## Per kind of file",
        "",
    ]
    frameworks = collections.Counter(f.why.split(" ")[0].rstrip(":") for f in report["by_key"].values() if f.kind == "python")
    negatives = collections.Counter(f.why for f in report["by_key"].values() if f.kind == "negative")
    out[-2:-2] = [
        "Python files by framework (servers first; `script` = no server framework): "
        + ", ".join(f"{name} {count}" for name, count in frameworks.most_common()) + ". Negatives: "
        + ", ".join(f"{name} {count}" for name, count in negatives.most_common()) + ".",
        "",
    ]
    rows = []
    for kind in kinds:
        c = per_kind[kind]
        opaque = f"{c['launches']} / {c['launches'] - c['opaque']} / {c['opaque']}" if report["opaque_available"] else OPAQUE_NA
        rows.append([kind, c["files"], sum(report["codes_by_kind"][kind].values()), c["hidden"], c["false syntax"],
                     opaque, c["rewritten"], c["offloaded"], c["refused"], c["broken"], f"{c['seconds']:.1f}",
                     f"{1000 * c['seconds'] / max(c['files'], 1):.0f}"])
    total = collections.Counter()
    for kind in kinds:
        total.update(per_kind[kind])
    opaque_total = (f"{total['launches']} / {total['launches'] - total['opaque']} / {total['opaque']}"
                    if report["opaque_available"] else OPAQUE_NA)
    rows.append(["all", total["files"], sum(sum(c.values()) for c in report["codes_by_kind"].values()), total["hidden"],
                 total["false syntax"], opaque_total, total["rewritten"], total["offloaded"], total["refused"], total["broken"],
                 f"{total['seconds']:.1f}", f"{1000 * total['seconds'] / max(total['files'], 1):.0f}"])
    out += _table(["kind", "files", "findings", "hidden (must be 0)", "false VLL000", "launches seen / read in full / opaque",
                   "servers rewritten", "fallback", "refused", "rewrite broken", "lint s", "ms/file"], rows)
    out += ["", (f"Lint time is vllm-lint's own, in process, file by file with the pre-filter on; one CLI run over every "
            f"file took {report['cli_seconds']:.1f} s, the rewrites {report['fix_seconds']:.1f} s, the whole runner "
            f"{time.perf_counter() - started:.0f} s.")]

    out += ["", "## Opaque launches: top reasons", ""]
    if report["opaque_available"]:
        out += _table(["kind", "top reasons"], [[k, _top(report["opaque_reasons"][k])] for k in kinds if report["opaque_reasons"][k]])
    else:
        out += [f"opaque: {OPAQUE_NA}"]

    out += ["", "## Server rewrites (VLL101/VLL102/VLL103)", ""]
    refusals = collections.Counter()
    for counter in report["refusals"].values():
        refusals.update(counter)
    out += _table(["refusal reason", "files"], [[reason, count] for reason, count in refusals.most_common(15)])
    rewritten = [f for f, outcome, _ in report["outcomes"] if outcome == "rewritten"]
    if rewritten:
        out += ["", "Rewritten (compiles, re-lints without VLL101-VLL103, a second fix changes nothing):", ""]
        out += [f"- {f.repository} `{f.path}` ({f.why})" for f in rewritten]
    offloaded = [(f, why) for f, outcome, why in report["outcomes"] if outcome == "offloaded"]
    if offloaded:
        out += ["", "The fallback where the engine rewrite is refused (the same checks; the calls run one at a time, no batching):", ""]
        out += [f"- {f.repository} `{f.path}`: {why}" for f, why in offloaded]
    broken = [(f, why) for f, outcome, why in report["outcomes"] if outcome == "broken"]
    if broken:
        out += ["", "Rewrites that failed a check:", ""]
        out += [f"- {f.repository} `{f.path}`: {why}" for f, why in broken]

    out += ["", "## Findings per code", ""]
    codes = sorted({code for c in report["codes_by_kind"].values() for code in c})
    out += _table(["code", *kinds], [[code, *[report["codes_by_kind"][k][code] or "" for k in kinds]] for code in codes])

    out += ["", "## Hidden by the pre-filter", ""]
    out += [f"- {_shown(key, report)}: {finding[0]} line {finding[1]}: {finding[3]}" for key, finding in report["hidden"]] or ["none"]
    if report["crashes"]:
        out += ["", "## Crashes", ""] + [f"- {_shown(key, report)}: {why}" for key, why in report["crashes"]]

    out += ["", "## VLL000 (syntax error) findings checked against the file's own tool", ""]
    out += [f"- {_shown(f['filename'], report)} line {f['location']['row']}: {why}: {f['message'][:140]}"
            for f, why in report["false_syntax"]] or ["none: every VLL000 is a file its own tool rejects too"]

    table, wrong = triage_summary(triage)
    out += ["", "## Triage: findings read by eye (benchmarks/realworld/triage.tsv)", ""] + table
    if wrong:
        out += ["", "Wrong findings, with the shape that caused them:", ""]
        out += [f"- {r['code']} {r['file']}:{r['line']}: {r['why']}" for r in wrong]
    return "\n".join(out) + "\n"


# Sections of the page that other measurements write (benchmarks/realworld/rewrite_servers.py's servers validated
# side by side): the runner rewrites what comes before the first of them and keeps them as they are.
KEPT_SECTION = "\n## Server rewrite on real servers\n"


def kept_sections(page: Path) -> str:
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    return text[text.index(KEPT_SECTION):] if KEPT_SECTION in text else ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="what restore.py wrote")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.tsv")
    parser.add_argument("--triage", type=Path, default=HERE / "triage.tsv")
    parser.add_argument("--out", type=Path, default=REPOSITORY_ROOT / "docs" / "realworld.md")
    parser.add_argument("--json", type=Path, help="also write every finding (for triage) to this file")
    parser.add_argument("--no-fix", dest="fix", action="store_false", help="skip the --fix runs on servers")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report = measure(args.folder.resolve(), args.manifest, fix=args.fix)
    text = render(report, args.triage, started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + kept_sections(args.out), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(report["findings"], indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
