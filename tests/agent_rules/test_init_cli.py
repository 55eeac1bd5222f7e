"""``vllm-lint init`` end to end, in a fresh git repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vllm_lint.agent_rules.blocks import stamp

DEFAULT_FILES = {"CLAUDE.md", "AGENTS.md", ".cursorrules"}
ALL_FILES = {
    "CLAUDE.md",
    "AGENTS.md",
    ".cursor/rules/vllm-serving.mdc",
    ".github/copilot-instructions.md",
    ".github/instructions/vllm-serving.instructions.md",
    *(f".devin/rules/vllm-{part}.md" for part in ("serving", "engine-arguments", "sampling", "deployment", "migrations")),
    ".clinerules/vllm-serving.md",
    "GEMINI.md",
    ".roo/rules/vllm-serving.md",
    ".kiro/steering/vllm-serving.md",
    ".junie/AGENTS.md",
    ".amazonq/rules/vllm-serving.md",
    ".continue/rules/vllm-serving.md",
    "CONVENTIONS.md",
    ".aider.conf.yml",
}


def frontmatter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name} must start with frontmatter"
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_default_targets_keep_hand_written_text(repo, run_init, hand_written):
    result = run_init(repo)
    assert result.exit_code == 0, result.output
    for name in DEFAULT_FILES:
        assert (repo / name).is_file(), name
    assert not (repo / ".cursor").exists()
    claude = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.startswith(hand_written)
    assert "<!-- vllm-lint:begin hash=" in claude and claude.rstrip().endswith("<!-- vllm-lint:end -->")
    assert "vllm-lint check" in claude and "VLL203" in claude
    assert "VLL000" not in claude


def test_all_targets_then_second_run_changes_nothing(repo, run_init, tree_files):
    assert run_init(repo).exit_code == 0
    result = run_init(repo, "--target", "all")
    assert result.exit_code == 0, result.output
    for name in ALL_FILES:
        assert (repo / name).is_file(), name
    before = tree_files(repo)
    result = run_init(repo, "--target", "all")
    assert result.exit_code == 0, result.output
    assert tree_files(repo) == before
    assert run_init(repo, "--target", "all", "--check").exit_code == 0
    assert run_init(repo, "--check").exit_code == 0


def test_all_targets_name_each_file_they_write_once(repo, run_init):
    # agents and codex both read AGENTS.md: it is one file, written and reported once.
    result = run_init(repo, "--target", "all")
    assert result.exit_code == 0, result.output
    written = sorted(line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith(("created ", "updated ")))
    assert written == sorted(ALL_FILES)


def test_existing_cursor_rules_dir_gets_the_mdc_file(repo, run_init):
    (repo / ".cursor" / "rules").mkdir(parents=True)
    assert run_init(repo).exit_code == 0
    assert (repo / ".cursor/rules/vllm-serving.mdc").is_file()
    assert not (repo / ".cursorrules").exists()


def test_config_sets_default_targets_and_globs(repo, run_init):
    (repo / "pyproject.toml").write_text(
        '[tool.vllm-lint]\nagent-rules-targets = ["windsurf", "copilot"]\nagent-rules-globs = ["srv/**/*.py"]\n'
    )
    assert run_init(repo).exit_code == 0
    assert (repo / ".windsurf/rules/vllm-serving.md").is_file()
    assert not (repo / "AGENTS.md").exists()
    assert frontmatter(repo / ".github/instructions/vllm-serving.instructions.md")["applyTo"] == "srv/**/*.py"


def test_check_fails_on_missing_files(repo, run_init, tree_files, hand_written):
    result = run_init(repo, "--check")
    assert result.exit_code == 1
    assert "AGENTS.md" in result.output
    assert tree_files(repo) == {"CLAUDE.md": hand_written.encode()}


def test_hand_edit_inside_block_is_refused_until_force(repo, run_init):
    assert run_init(repo).exit_code == 0
    path = repo / "AGENTS.md"
    edited = path.read_text(encoding="utf-8").replace("Why:", "Because:", 1)
    path.write_text(edited, encoding="utf-8")

    result = run_init(repo, "--check")
    assert result.exit_code == 1
    assert "AGENTS.md" in result.output and "edited by hand" in result.output

    result = run_init(repo)
    assert result.exit_code == 1
    assert "--force" in result.output
    assert path.read_text(encoding="utf-8") == edited  # refused: nothing written

    result = run_init(repo, "--force")
    assert result.exit_code == 0, result.output
    assert "Because:" not in path.read_text(encoding="utf-8")
    assert run_init(repo, "--check").exit_code == 0


def test_hand_edit_of_generated_file_is_refused_until_force(repo, run_init):
    assert run_init(repo, "--target", "cline").exit_code == 0
    path = repo / ".clinerules/vllm-serving.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nmy own line\n", encoding="utf-8")
    result = run_init(repo, "--target", "cline", "--check")
    assert result.exit_code == 1 and ".clinerules/vllm-serving.md" in result.output
    assert run_init(repo, "--target", "cline").exit_code == 1
    assert "my own line" in path.read_text(encoding="utf-8")
    assert run_init(repo, "--target", "cline", "--force").exit_code == 0
    assert "my own line" not in path.read_text(encoding="utf-8")


def test_person_owned_whole_file_is_not_overwritten(repo, run_init):
    path = repo / ".windsurf/rules/vllm-serving.md"
    path.parent.mkdir(parents=True)
    path.write_text("mine\n")
    result = run_init(repo, "--target", "windsurf")
    assert result.exit_code == 1 and "not written by vllm-lint" in result.output
    assert path.read_text() == "mine\n"


def test_text_outside_the_block_stays_byte_identical(repo, run_init, hand_written):
    assert run_init(repo).exit_code == 0
    path = repo / "CLAUDE.md"
    text = path.read_text(encoding="utf-8")
    # a block from an older release: different text, but a hash that matches it (not a hand edit)
    start, end = text.index("<!-- vllm-lint:begin"), text.index("<!-- vllm-lint:end -->") + len("<!-- vllm-lint:end -->")
    old_block = stamp("<!-- vllm-lint:begin hash=000000000000 -->\nold rules\n<!-- vllm-lint:end -->")
    path.write_text("Above.\n" + text[:start] + old_block + text[end:] + "\nBelow, added later.\n", encoding="utf-8")
    assert run_init(repo, "--check").exit_code == 1
    result = run_init(repo)
    assert result.exit_code == 0, result.output
    after = path.read_text(encoding="utf-8")
    assert after.startswith("Above.\n" + hand_written)
    assert after.endswith("<!-- vllm-lint:end -->\n\nBelow, added later.\n")


def test_frontmatter_types(repo, run_init):
    assert run_init(repo, "--target", "all").exit_code == 0
    cursor = frontmatter(repo / ".cursor/rules/vllm-serving.mdc")
    assert isinstance(cursor["description"], str) and cursor["description"]
    assert isinstance(cursor["globs"], str) and "**/*vllm*.py" in cursor["globs"].split(",")
    assert isinstance(cursor["alwaysApply"], bool)
    copilot = frontmatter(repo / ".github/instructions/vllm-serving.instructions.md")
    assert isinstance(copilot["applyTo"], str) and "**/k8s/**/*.y*ml" in copilot["applyTo"].split(",")
    devin = frontmatter(repo / ".devin/rules/vllm-serving.md")
    assert devin["trigger"] in {"always_on", "glob", "model_decision", "manual"}
    assert isinstance(devin["globs"], str)
    cline = frontmatter(repo / ".clinerules/vllm-serving.md")
    assert isinstance(cline["paths"], list) and all(isinstance(p, str) for p in cline["paths"])
    kiro = frontmatter(repo / ".kiro/steering/vllm-serving.md")
    assert kiro["inclusion"] == "fileMatch" and "**/*vllm*.py" in kiro["fileMatchPattern"]
    cont = frontmatter(repo / ".continue/rules/vllm-serving.md")
    assert isinstance(cont["name"], str) and cont["name"] and cont["alwaysApply"] is False and "**/server*.py" in cont["globs"]
    assert yaml.safe_load((repo / ".aider.conf.yml").read_text()) == {"read": ["CONVENTIONS.md"]}
    for name in (".cursor/rules/vllm-serving.mdc", ".devin/rules/vllm-serving.md", ".clinerules/vllm-serving.md", ".kiro/steering/vllm-serving.md", ".continue/rules/vllm-serving.md"):
        body = (repo / name).read_text(encoding="utf-8").split("---\n", 2)[2]
        assert body.startswith("<!-- vllm-lint:generated hash="), name


def _within_limits(repo: Path) -> dict[str, int]:
    """Every rule file of every target written in ``repo``, checked against its target's limits: its size."""
    from vllm_lint.agent_rules.targets import PART, TARGETS

    sizes = {}
    for target in TARGETS.values():
        for output in target.outputs:
            folder, _, pattern = output.path.rpartition("/")
            prefix, _, suffix = pattern.partition(PART)
            paths = sorted((repo / folder).glob(f"{prefix}*{suffix}")) if output.split else [repo / output.path]
            for path in paths:
                if not path.is_file():
                    continue
                text = path.read_text(encoding="utf-8")
                if output.max_chars is not None:
                    assert len(text) <= output.max_chars, f"{path.relative_to(repo)}: {len(text):,} characters"
                if output.max_block_lines is not None:
                    block = text[text.index("<!-- vllm-lint:begin"):text.index("<!-- vllm-lint:end -->")]
                    assert block.count("\n") < output.max_block_lines, f"{path.relative_to(repo)}: {block.count(chr(10))} lines"
                sizes[path.relative_to(repo).as_posix()] = len(text)
    return sizes


def test_size_limits(repo, run_init):
    assert run_init(repo, "--target", "all").exit_code == 0
    sizes = _within_limits(repo)
    assert {name for name in sizes if name.startswith(".devin/")} == {name for name in ALL_FILES if name.startswith(".devin/")}
    claude = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.count("\n") < 200


def test_sixty_rules_fit_every_target(repo, run_init, monkeypatch):
    # 30 more rules than the catalogue has (copies of its longest, under free codes of every group): `init -t all`
    # still writes every file within its assistant's limit, each split file within its budget.
    import dataclasses

    from vllm_lint import rulebook
    from vllm_lint.agent_rules.render import SKIPPED_CODES

    rules = dict(rulebook.load_rules())
    longest = sorted(
        (r for c, r in rules.items() if c not in SKIPPED_CODES and not r.preview), key=lambda r: -len(r.directive + r.why + r.summary)
    )
    extra = {}
    for index in range(30):
        group = "123456"[index % 6]
        code = next(c for n in range(1, 100) if (c := f"VLL{group}{n:02d}") not in rules and c not in extra)
        extra[code] = dataclasses.replace(longest[index % 10], code=code, name=f"synthetic-rule-{index}")
    monkeypatch.setattr(rulebook, "load_rules", lambda: {**rules, **extra})
    result = run_init(repo, "--target", "all")
    assert result.exit_code == 0, result.output
    sizes = _within_limits(repo)
    claude = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert all(code in claude for code in extra)
    devin = {name: size for name, size in sizes.items() if name.startswith(".devin/")}
    taught = "".join((repo / name).read_text(encoding="utf-8") for name in devin)
    shipped = (c for c, rule in rules.items() if c not in SKIPPED_CODES and not rule.preview)  # the files leave preview rules out
    assert all(f"**{code}**" in taught for code in [*extra, *shipped])
    assert ".devin/rules/vllm-other.md" in devin and max(devin.values()) <= 11_000

    # Back to the catalogue: the files no group makes any more are removed, and --check says so first.
    monkeypatch.setattr(rulebook, "load_rules", lambda: rules)
    check = run_init(repo, "--target", "all", "--check")
    assert check.exit_code == 1 and ".devin/rules/vllm-other.md: left over (run `vllm-lint init`)" in check.output
    result = run_init(repo, "--target", "all")
    assert result.exit_code == 0, result.output
    assert "removed .devin/rules/vllm-other.md (no group of rules makes it any more)" in result.output.splitlines()
    assert not (repo / ".devin/rules/vllm-other.md").exists()
    assert run_init(repo, "--target", "all", "--check").exit_code == 0


def test_a_split_file_written_by_hand_is_not_removed(repo, run_init):
    mine = repo / ".devin/rules/vllm-mine.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my notes\n", encoding="utf-8")
    assert run_init(repo, "--target", "devin").exit_code == 0
    assert mine.read_text(encoding="utf-8") == "my notes\n"


def test_dry_run_writes_nothing_and_prints_a_diff(repo, run_init, tree_files):
    before = tree_files(repo)
    result = run_init(repo, "--dry-run")
    assert result.exit_code == 0, result.output
    assert tree_files(repo) == before
    assert "--- a/CLAUDE.md" in result.output and "+++ b/CLAUDE.md" in result.output
    assert "+++ b/AGENTS.md" in result.output
    assert "+<!-- vllm-lint:begin hash=" in result.output


def test_crlf_file_stays_crlf(repo, run_init, hand_written):
    crlf = hand_written.replace("\n", "\r\n").encode()
    (repo / "CLAUDE.md").write_bytes(crlf)
    assert run_init(repo).exit_code == 0
    data = (repo / "CLAUDE.md").read_bytes()
    assert data.startswith(crlf)
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line ending is CRLF, ours too
    assert run_init(repo, "--check").exit_code == 0
    assert run_init(repo).exit_code == 0
    assert (repo / "CLAUDE.md").read_bytes() == data


def test_file_mode_is_kept(repo, run_init):
    os.chmod(repo / "CLAUDE.md", 0o600)
    assert run_init(repo).exit_code == 0
    assert (repo / "CLAUDE.md").stat().st_mode & 0o777 == 0o600
    assert not [p for p in repo.iterdir() if p.name.endswith(".tmp") or p.name.endswith(".bak")]


def test_symlink_outside_the_directory_is_refused(repo, run_init, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "AGENTS.md"
    outside.write_text("their notes\n")
    (repo / "AGENTS.md").symlink_to(outside)
    result = run_init(repo)
    assert result.exit_code == 1
    assert f"vllm-lint: error: refusing to write AGENTS.md: it resolves outside {repo} (a symlink?)" in result.output.splitlines()
    assert outside.read_text() == "their notes\n"


def test_symlinked_claude_md_is_written_once(tmp_path, run_init, tree_files):
    (tmp_path / "AGENTS.md").write_text("Shared notes.\n")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    result = run_init(tmp_path)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert text.startswith("Shared notes.\n") and text.count("vllm-lint:begin") == 1
    assert (tmp_path / "CLAUDE.md").is_symlink()
    before = tree_files(tmp_path)
    assert run_init(tmp_path).exit_code == 0
    assert tree_files(tmp_path) == before
    assert run_init(tmp_path, "--check").exit_code == 0


def test_unknown_target_and_list_targets(repo, run_init):
    result = run_init(repo, "--target", "vim")
    assert result.exit_code == 2 and "known targets" in result.output
    listing = run_init(repo, "--list-targets")
    assert listing.exit_code == 0
    assert ".windsurf/rules/vllm-{part}.md" in listing.output and "cursor-legacy" in listing.output


def test_broken_markers_are_an_error(repo, run_init):
    (repo / "CLAUDE.md").write_text("x\n<!-- vllm-lint:begin hash=000000000000 -->\nno end\n")
    result = run_init(repo)
    assert result.exit_code == 1 and "CLAUDE.md" in result.output


def test_subprocess_python_m(repo):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "init", "--target", "claude", "--target", "agents"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (repo / "AGENTS.md").is_file()
    check = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "init", "-t", "claude", "-t", "agents", "--check"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_version_does_not_import_jinja2():
    code = "import sys; from vllm_lint.cli.main import cli; import vllm_lint.cli.init; print('jinja2' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.stdout.strip() == "False", proc.stderr


@pytest.mark.parametrize("name", ["CLAUDE.md", "AGENTS.md"])
def test_block_mentions_every_rule(repo, run_init, name):
    from vllm_lint.agent_rules.render import SKIPPED_CODES
    from vllm_lint.rulebook import load_rules

    assert run_init(repo).exit_code == 0
    text = (repo / name).read_text(encoding="utf-8")
    for code, rule in load_rules().items():
        # A rule in preview is taught once the project runs it (preview = true).
        assert (code in text) == (code not in SKIPPED_CODES and not rule.preview), code


INTRO_AFTER_HEADING = "## vLLM serving rules (vllm-lint)\n"


@pytest.mark.parametrize(("files", "intro"), [
    ({"app.py": 'from transformers import pipeline\npipe = pipeline("text-generation")\n'},
     "`vllm-lint init` found Hugging Face transformers in this project's files. Code that loads or serves a model follows\n"),
    ({"serve.sh": "vllm serve m\n", "client.py": "from openai import OpenAI\n", ".pre-commit-config.yaml": "- id: vllm-lint\n"},
     "`vllm-lint init` found vLLM, an OpenAI client in this project's files. Code that loads or serves a model follows\n"),
    ({"notes.md": "We serve with vLLM.\n", ".pre-commit-config.yaml": "- id: vllm-lint\n"},
     "Code that loads or serves a model (with vLLM, Hugging Face transformers or an LLM client) follows the rules below;\n"),
])
def test_the_introduction_says_what_init_found(tmp_path, run_init, files, intro):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert run_init(tmp_path, "-t", "claude").exit_code == 0
    claude = (tmp_path / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.split(INTRO_AFTER_HEADING, 1)[1].splitlines(keepends=True)[0] == intro
    assert run_init(tmp_path, "-t", "claude", "--check").exit_code == 0  # the rule files do not count themselves
