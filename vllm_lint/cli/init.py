"""``vllm-lint init``: write (or --check, or --dry-run) the agent rule files for the chosen targets."""

from __future__ import annotations

import re

import dataclasses
import sys
from pathlib import Path

import click

EXIT_OK, EXIT_STALE, EXIT_ERROR = 0, 1, 2
CLAUDE_FILE_LINES = 200


def _list_targets(root: Path) -> None:
    from vllm_lint.agent_rules.targets import TARGETS, default_targets

    defaults = set(default_targets(root))
    for name, target in TARGETS.items():
        flags = []
        if name in defaults:
            flags.append("default")
        if target.opt_in:
            flags.append("opt-in, not in `all`")
        suffix = f"  [{', '.join(flags)}]" if flags else ""
        paths = ", ".join(output.path for output in target.outputs)
        extras = [f"{part}: {entry.file}" for part, entry in (("--hooks", target.hook), ("--mcp", target.mcp)) if entry is not None]
        extra = f"; {'; '.join(extras)}" if extras else ""
        click.echo(f"{name:<14} {paths}{extra}  ({target.tool}){suffix}")


def _warn_cursor_twice(root: Path, chosen: list[str]) -> None:
    """Cursor reads both .cursorrules and .cursor/rules/*.mdc: say so when both carry our rules."""
    legacy = root / ".cursorrules"
    if "cursor" in chosen and "cursor-legacy" not in chosen and legacy.is_file() and b"vllm-lint:begin" in legacy.read_bytes():
        click.echo(
            "note: .cursorrules also carries the vllm-lint block and Cursor reads both files; "
            "remove the block from .cursorrules (or the file) to keep one copy",
            err=True,
        )


def _settings(root: Path):
    from vllm_lint.config import find_config, load_settings
    from vllm_lint.rulebook import all_codes

    return load_settings(find_config(root), all_codes())


@click.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--dir", "dir_option", type=click.Path(path_type=Path, file_okay=False), help="Target directory (default: .).")
@click.option("--target", "-t", "targets", multiple=True, help="Agent to write rules for (repeatable, or `all`); see --list-targets.")
@click.option("--list-targets", is_flag=True, help="List the targets and the files they write.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; exit 1 when any file is stale or was edited by hand (for CI).")
@click.option("--dry-run", is_flag=True, help="Write nothing; print the diff each file would get.")
@click.option("--force", is_flag=True, help="Overwrite managed blocks and generated files that were edited by hand.")
@click.option("--hooks", is_flag=True, help="Also install each target's post-edit hook (`vllm-lint hook AGENT`) in the assistant's settings.")
@click.option("--mcp", "mcp", is_flag=True, help="Also register the `vllm-lint mcp` server in each target's MCP settings.")
@click.option("--preview/--no-preview", default=None, help="Teach the rules in preview too (default: the preview setting).")
def init_command(directory, dir_option, targets, list_targets, check_only, dry_run, force, hooks, mcp, preview) -> None:
    """Write agent rule files (CLAUDE.md, AGENTS.md, Cursor, Copilot, ...) teaching vllm-lint's rules.

    In files people also write (CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules,
    copilot-instructions.md) only the block between `<!-- vllm-lint:begin -->` and
    `<!-- vllm-lint:end -->` is vllm-lint's; the rest is never touched. With --hooks and
    --mcp, one entry is added to each assistant's own settings file (the rest of it keeps
    its bytes); once there, `init` keeps it current and `init --check` checks it.
    """
    from vllm_lint.agent_rules.targets import TargetError, chosen_entries, default_targets, resolve_targets
    from vllm_lint.agent_rules.writer import installed, plan_entries
    from vllm_lint.config import ConfigError

    if directory is not None and dir_option is not None and directory != dir_option:
        raise click.UsageError("give the target directory once (DIRECTORY or --dir)")
    root = directory or dir_option or Path(".")
    if not root.is_dir():
        raise click.UsageError(f"{root} is not a directory")
    if list_targets:
        _list_targets(root)
        return
    if check_only and dry_run:
        raise click.UsageError("--check and --dry-run do not go together")
    try:
        settings = _settings(root)
        if preview is not None:
            settings = dataclasses.replace(settings, preview=preview)
        names = list(targets) or list(settings.agent_rules_targets or ()) or default_targets(root)
        chosen = resolve_targets(names, root)
    except (ConfigError, TargetError) as exc:
        click.echo(f"vllm-lint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)

    changes = _plan_rule_files(root, chosen, settings, force, quiet=check_only)
    entries = chosen_entries(chosen, hooks, mcp, lambda entry: installed(root, entry))
    if (hooks or mcp) and not any(e.part in ("hooks", "mcp") for e in entries):
        click.echo("note: none of the chosen targets has a hook or an MCP entry; see `vllm-lint init --list-targets`", err=True)
    changes.extend(plan_entries(root, entries, force=force))
    notes = {entry.file: entry.note for entry in entries if entry.note}

    problems = _report_problems(changes, check_only)
    _warn_cursor_twice(root, [t.name for t in chosen])
    if check_only:
        _check(changes)
    elif dry_run:
        _dry_run(changes, problems)
    else:
        _write(root, changes, notes, problems)


# What the rule files' introduction says a project uses, by a word its files hold (lower case); "vllm" not in
# "vllm-lint": the configuration init and pre-commit write name vllm-lint, not vLLM.
_STACKS = (("vLLM", rb"vllm(?![-_]lint)"), ("Hugging Face transformers", rb"transformers"), ("an OpenAI client", rb"openai"),
           ("Anthropic's client", rb"anthropic"), ("litellm", rb"litellm"))


def serving_stacks(root: Path, settings) -> tuple[str, ...]:
    """The serving stacks the code and configuration files vllm-lint reads under ``root`` name, in ``_STACKS``'
    order: the rule files say what was found, never that the project serves with vLLM when it does not."""
    from vllm_lint.engine.discovery import PathError, discover
    from vllm_lint.surfaces import all_surfaces

    left = dict(_STACKS)
    found: set[str] = set()
    try:
        for path, surface in discover([root], settings, all_surfaces()):
            # Markdown is left out: the rule files init writes are Markdown that names every stack.
            if surface is None or surface.name == "markdown" or not left:
                continue
            try:
                data = path.read_bytes().lower()
            except OSError:
                continue
            for name, word in list(left.items()):
                if re.search(word, data):
                    found.add(name)
                    del left[name]
    except PathError:
        return ()
    return tuple(name for name, _ in _STACKS if name in found)


def _plan_rule_files(root: Path, chosen: list, settings, force: bool, quiet: bool) -> list:
    """The change each chosen target's rule files would get (a file two targets share, once), and the removal
    of the files of a split output that no group makes any more."""
    from vllm_lint.agent_rules.blocks import BlockError
    from vllm_lint.agent_rules.render import SizeLimitError, environment, render_parts, rule_views
    from vllm_lint.agent_rules.writer import plan_output, plan_removals

    globs = tuple(settings.agent_rules_globs) if settings.agent_rules_globs else None
    views = rule_views(settings.preview)
    env = environment()
    env.globals["found"] = serving_stacks(root, settings)
    changes = []
    seen: dict[Path, str] = {}
    try:
        for target in chosen:
            for output in target.outputs:
                parts = render_parts(output, views, globs, env)
                for part, rendered in parts:
                    change = plan_output(root, part, rendered.text, force=force)
                    first = seen.get(change.path)
                    if first is not None:
                        # Two targets that read one file (agents and codex: AGENTS.md), or a link to it (CLAUDE.md ->
                        # AGENTS.md): one file, one block, one line of output.
                        if first != change.rel and not quiet:
                            click.echo(f"note: {change.rel} is the same file as {first}; written once, as {first}", err=True)
                        continue
                    seen[change.path] = change.rel
                    if rendered.without_examples and change.writes and not quiet:
                        click.echo(
                            f"note: {part.path}: examples for {', '.join(rendered.without_examples)} left out to fit its size budget",
                            err=True,
                        )
                    changes.append(change)
                if output.split is not None:
                    changes.extend(plan_removals(root, output, {part.path for part, _ in parts}))
    except (SizeLimitError, BlockError) as exc:
        click.echo(f"vllm-lint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    return changes


def _report_problems(changes: list, check_only: bool) -> list:
    from vllm_lint.agent_rules.writer import CONFLICT, ERROR

    problems = [c for c in changes if c.status in (CONFLICT, ERROR)]
    for change in problems:
        if change.status == ERROR:
            label = "error"
        else:
            label = "stale" if check_only else "refusing"
        click.echo(f"vllm-lint: {label}: {change.reason}", err=True)
    return problems


def _check(changes: list) -> None:
    """--check: name each file that is missing or stale; exit 1 when any is."""
    from vllm_lint.agent_rules.writer import CONFLICT, CREATE, ERROR, REMOVE, UNCHANGED

    stale = [c for c in changes if c.status != UNCHANGED]
    for change in stale:
        if change.status in (CONFLICT, ERROR):
            continue
        verb = {CREATE: "missing", REMOVE: "left over"}.get(change.status, "stale")
        click.echo(f"{change.rel}: {verb} (run `vllm-lint init`)")
        if change.reason:
            click.echo(f"  {change.reason}")
    if stale:
        click.echo(f"{len(stale)} agent rule file(s) out of date", err=True)
        sys.exit(EXIT_STALE)
    click.echo(f"{len(changes)} agent rule file(s) up to date")


def _dry_run(changes: list, problems: list) -> None:
    from vllm_lint.agent_rules.writer import REMOVE, diff

    for change in changes:
        if change.writes or change.status == REMOVE:
            click.echo(diff(change), nl=False)
    writes = sum(c.writes or c.status == REMOVE for c in changes)
    click.echo(f"dry run: {writes} file(s) would change; nothing written", err=True)
    sys.exit(EXIT_STALE if problems else EXIT_OK)


def _write(root: Path, changes: list, notes: dict[str, str], problems: list) -> None:
    from vllm_lint.agent_rules.writer import CREATE, REMOVE, UNCHANGED
    from vllm_lint.atomic import atomic_write

    failed = 0
    for change in changes:
        if change.status == REMOVE:
            try:
                change.path.unlink()
            except OSError as exc:
                failed += 1
                click.echo(f"vllm-lint: error: cannot remove {change.rel}: {exc.strerror or exc}", err=True)
                continue
            click.echo(f"removed {change.rel} ({change.reason.split(': ', 1)[1]})")
        if not change.writes:
            continue
        try:
            atomic_write(change.path, change.new)
            if change.executable:
                change.path.chmod(change.path.stat().st_mode | 0o111)
        except OSError as exc:
            failed += 1
            click.echo(f"vllm-lint: error: cannot write {change.rel}: {exc.strerror or exc}", err=True)
            continue
        click.echo(f"{'created' if change.status == CREATE else 'updated'} {change.rel}")
        if change.reason and change.status != CREATE:
            click.echo(f"note: {change.reason}", err=True)
        if change.rel in notes:
            click.echo(f"note: {notes[change.rel]}", err=True)
    unchanged = sum(c.status == UNCHANGED for c in changes)
    if unchanged:
        click.echo(f"{unchanged} file(s) already up to date")
    _warn_long_claude_file(root, changes)
    if failed:
        sys.exit(EXIT_ERROR)
    if problems:
        sys.exit(EXIT_STALE)


def _warn_long_claude_file(root: Path, changes: list) -> None:
    claude = root / "CLAUDE.md"
    if any(c.rel == "CLAUDE.md" for c in changes) and claude.is_file():
        lines = claude.read_bytes().count(b"\n")
        if lines > CLAUDE_FILE_LINES:
            click.echo(f"warning: CLAUDE.md has {lines} lines; Claude Code follows it better under {CLAUDE_FILE_LINES}", err=True)
