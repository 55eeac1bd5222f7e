"""Every code snippet in every generated agent rule file lints as it claims.

Bad snippets (labelled "Bad (`vllm-lint check` reports VLLnnn)") must report their
code; good snippets must report nothing at all. The snippets are linted by the
project's own engine, through the CLI, as a user (or an agent) would run it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
BAD_LABEL = re.compile(r"^Bad \(`vllm-lint check` reports (?P<code>VLL\d{3})\):(?: <!-- noqa -->)?$")
FILE_NAME = {"python": "example.py", "bash": "example.sh", "dockerfile": "Dockerfile", "yaml": "docker-compose.yaml"}


@dataclass(frozen=True)
class Block:
    source: str
    line: int
    lang: str
    code: str
    expect: str | None  # the code a bad snippet must report; None for a good snippet


def fenced_blocks(source: str, text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        start = index
        index += 1
        body = []
        while index < len(lines) and lines[index] != "```":
            body.append(lines[index])
            index += 1
        index += 1
        label = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        bad = BAD_LABEL.match(label)
        assert bad or label.startswith("Good"), f"{source}:{start + 1}: snippet without a Bad/Good label: {label!r}"
        assert label.endswith("<!-- noqa -->"), f"{source}:{start + 1}: the label must suppress the example for `vllm-lint check`"
        blocks.append(Block(source, start + 1, match.group("lang"), "\n".join(body) + "\n", bad.group("code") if bad else None))
    return blocks


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, str]:
    from click.testing import CliRunner

    from vllm_lint.cli.main import cli

    root = tmp_path_factory.mktemp("generated")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = CliRunner().invoke(cli, ["init", str(root), "-t", "all", "-t", "cursor-legacy"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts[:1]
    }


def test_every_snippet_lints_as_labelled(generated, tmp_path):
    blocks = [block for name, text in sorted(generated.items()) for block in fenced_blocks(name, text)]
    rule_files = [name for name in generated if name != ".aider.conf.yml"]  # Aider's settings, not a rule file
    assert len({b.source for b in blocks}) == len(rule_files) - 1  # all but copilot-instructions.md carry snippets
    unique: dict[tuple[str, str], list[Block]] = {}
    for block in blocks:
        unique.setdefault((block.lang, block.code), []).append(block)
    paths: dict[str, tuple[str, str]] = {}
    for number, key in enumerate(unique):
        lang = key[0]
        assert lang in FILE_NAME, f"no file name to lint a {lang!r} snippet under"
        path = tmp_path / f"s{number:03d}" / FILE_NAME[lang]
        path.parent.mkdir()
        path.write_text(key[1], encoding="utf-8")
        paths[str(path.resolve())] = key

    proc = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "check", "--output-format", "json", "--exit-zero", "--isolated", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[tuple[str, str], set[str]] = {key: set() for key in unique}
    for diagnostic in json.loads(proc.stdout or "[]"):
        found[paths[str(Path(diagnostic["filename"]).resolve())]].add(diagnostic["code"])

    failures = []
    for key, users in unique.items():
        codes = found[key]
        for block in users:
            if block.expect is None and codes:
                failures.append(f"{block.source}:{block.line}: good snippet reports {sorted(codes)}")
            elif block.expect is not None and block.expect not in codes:
                failures.append(f"{block.source}:{block.line}: bad snippet should report {block.expect}, got {sorted(codes)}")
    assert not failures, "\n".join(failures)


def test_full_formats_show_a_bad_and_good_snippet_per_rule_with_examples(generated):
    from vllm_lint.agent_rules.render import SKIPPED_CODES
    from vllm_lint.rulebook import load_rules

    text = generated[".github/instructions/vllm-serving.instructions.md"]
    for code, rule in load_rules().items():
        if code in SKIPPED_CODES or rule.preview:
            continue
        if rule.bad_examples:
            assert f"Bad (`vllm-lint check` reports {code}):" in text, code
        section = text.split(f"### {code}:", 1)[1].split("\n### ", 1)[0]
        assert "Why:" in section and rule.directive.split()[0] in section
        if rule.good_examples:
            assert "\nGood" in section, code


def test_generated_files_do_not_fail_vllm_lint_check(generated, tmp_path):
    """Linting a repository that holds the generated files reports nothing from them."""
    for name, text in generated.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "check", "--output-format", "concise", "--isolated", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
