"""The ``vllm-lint`` command line.

Subcommands that pull in heavy dependencies (init: jinja2; the reference server:
vLLM, FastAPI) are imported only when invoked, so ``vllm-lint --version`` and a
check of a clean file stay fast.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from vllm_lint import EXIT_ERROR, __version__
from vllm_lint.output import FORMATS as OUTPUT_FORMATS


class LazyGroup(click.Group):
    """A click group whose listed subcommands are imported on first use."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attribute = self.lazy[name].split(":")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise click.ClickException(f"`{name}` is not available: {exc}") from None
            return getattr(module, attribute)
        return super().get_command(ctx, name)


@click.group(
    cls=LazyGroup,
    lazy={
        "init": "vllm_lint.agent_rules.cli:init_command",
        "serve-reference": "vllm_lint.reference.cli:serve_reference",
        "reference": "vllm_lint.reference.cli:reference",
        "validate": "vllm_lint.reference.cli:validate",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="vllm-lint")
def cli() -> None:
    """Find, fix and teach the mistakes people make when serving LLMs with vLLM."""


def _comma_list(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(item.strip() for value in values for item in value.split(",") if item.strip())


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default="full",
    show_default=True,
    help="How to print findings (sarif: code scanning; github: workflow annotations; junit: test reports).",
)
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False), help="Write the report to this file instead of stdout.")
@click.option("--stdin-filename", help="Read the source from stdin and treat it as this file (surface, per-file-ignores, report).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per code instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), help="Use this configuration file.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too (for pre-commit).")
@click.option("--color/--no-color", default=None, help="Colour the output (default: only on a terminal).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files ignored by .gitignore (default: yes).")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or show unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing (exit 1 when there is a diff).")
@click.option("--show-fixes", is_flag=True, help="List the fixes that were applied.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and do not report what remains.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing remains.")
@click.option("-n", "--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), help="Keep the result cache here (default: .vllm_lint_cache in the project root; env VLLM_LINT_CACHE_DIR).")
def check(paths, select, ignore, extend_select, output_format, output_file, stdin_filename, statistics, exit_zero, config_path, isolated, force_exclude, color, respect_gitignore, fix, unsafe_fixes, diff, show_fixes, fix_only, exit_non_zero_on_fix, no_cache, cache_dir) -> None:
    """Lint PATHS (default: the current directory; `-`: the source on stdin)."""
    from vllm_lint.check import CheckRequest, run_check

    stdin = _reads_stdin(paths, stdin_filename)
    if stdin:
        # Configuration is looked up from where the named file is, or would be.
        named = Path(stdin_filename or ".")
        paths = (next((p for p in (named, *named.parents) if p.exists()), Path(".")),)
    request = CheckRequest(
        paths=list(paths) or [Path(".")],
        select=_comma_list(select),
        ignore=_comma_list(ignore),
        extend_select=_comma_list(extend_select),
        output_format=output_format,
        statistics=statistics,
        exit_zero=exit_zero,
        config_path=config_path,
        isolated=isolated,
        force_exclude=force_exclude,
        # A report written to a file is never coloured unless asked.
        color=(output_file is None and sys.stdout.isatty()) if color is None else color,
        respect_gitignore=respect_gitignore,
        fix=fix or fix_only,
        unsafe_fixes=unsafe_fixes,
        diff=diff,
        show_fixes=show_fixes,
        fix_only=fix_only,
        exit_non_zero_on_fix=exit_non_zero_on_fix,
        output_file=output_file,
        stdin=stdin,
        stdin_filename=stdin_filename,
        no_cache=no_cache,
        cache_dir=cache_dir,
    )
    sys.exit(run_check(request))


def _reads_stdin(paths: tuple[Path, ...], stdin_filename: str | None) -> bool:
    """Whether ``check`` reads stdin: for `-` alone, or whenever --stdin-filename is given (as ruff)."""
    dash = Path("-")
    if stdin_filename is not None:
        if not stdin_filename.strip():
            raise click.BadParameter("must name a file", param_hint="--stdin-filename")
        for path in paths:
            if path != dash:
                click.echo(f"vllm-lint: warning: ignoring {path} in favor of standard input", err=True)
        return True
    if dash in paths and len(paths) > 1:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    return paths == (dash,)


@cli.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code, show_all, output_format) -> None:
    """Explain rule CODE (e.g. VLL101), or list them all with --all."""
    from vllm_lint.rule_docs import list_rules, show_rule

    if show_all or code is None:
        click.echo(list_rules(output_format), nl=False)
        return
    text = show_rule(code.upper(), output_format)
    if text is None:
        click.echo(f"error: unknown rule code {code!r} (see `vllm-lint rule --all`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(text, nl=False)


class _Interrupted(BaseException):
    """Ctrl-C, raised as something click does not catch: click turns KeyboardInterrupt into
    "Aborted!" and exit code 1, which CI would read as "findings"."""


def _interrupt(signum, frame) -> None:
    raise _Interrupted


def main() -> None:
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        cli(prog_name="vllm-lint")
    except (KeyboardInterrupt, _Interrupted):
        click.echo("vllm-lint: interrupted", err=True)
        sys.exit(130)
    except ModuleNotFoundError as exc:
        # A dependency is missing from this environment: say which, not a traceback.
        click.echo(
            f"vllm-lint: error: the package {exc.name!r} is not installed in this Python environment "
            f"({sys.executable}); reinstall vllm-lint with its dependencies (`pip install vllm-lint`)",
            err=True,
        )
        sys.exit(EXIT_ERROR)
