"""The ``vllm-lint`` command line, in click (``vllm_lint.cli.entry`` runs the common ``check`` lines without it).

Subcommands that pull in heavy dependencies (init: jinja2; the reference server:
vLLM, FastAPI) are imported only when invoked.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from vllm_lint import EXIT_ERROR, __version__
from vllm_lint.cli.check_options import CHECK_OPTIONS, CheckOption


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
        "init": "vllm_lint.cli.init:init_command",
        "hook": "vllm_lint.cli.agents:hook_command",
        "mcp": "vllm_lint.cli.agents:mcp_command",
        "serve-reference": "vllm_lint.cli.reference:serve_reference",
        "reference": "vllm_lint.cli.reference:reference",
        "validate": "vllm_lint.cli.reference:validate",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="vllm-lint")
def cli() -> None:
    """Find, fix and teach the mistakes people make when serving LLMs with vLLM."""


def _click_option(option: CheckOption):
    """The click decorator for one row of check_options.CHECK_OPTIONS."""
    kwargs: dict = {"help": option.help}
    if option.kind == "flag":
        kwargs["is_flag"] = True
    elif option.kind == "switch":
        kwargs["default"] = None
    elif option.kind == "list":
        kwargs["multiple"] = True
    elif option.kind == "choice":
        kwargs.update(type=click.Choice(option.choices), default=option.default, show_default=True)
    elif option.kind == "file":
        kwargs["type"] = click.Path(path_type=Path, dir_okay=False)
    elif option.kind == "directory":
        kwargs["type"] = click.Path(path_type=Path, file_okay=False)
    return click.option(*option.declarations, option.param, **kwargs)


def _with_check_options(command):
    for option in reversed(CHECK_OPTIONS):  # decorators apply bottom-up; --help lists them in table order
        command = _click_option(option)(command)
    return command


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_with_check_options
def check(**params) -> None:
    """Lint PATHS (default: the current directory; `-`: the source on stdin)."""
    stdin = _reads_stdin(params["paths"], params["stdin_filename"])
    if stdin:
        # Configuration is looked up from where the named file is, or would be.
        named = Path(params["stdin_filename"] or ".")
        params["paths"] = (next((p for p in (named, *named.parents) if p.exists()), Path(".")),)
    from vllm_lint.cli.check import CheckRequest, run_check

    sys.exit(run_check(CheckRequest.from_params(params, stdin)))


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
    """Explain rule CODE (e.g. VLL101) and say where it is implemented, or list them all with --all."""
    from vllm_lint.rule_docs import list_rules, show_rule

    if show_all or code is None:
        click.echo(list_rules(output_format), nl=False)
        return
    text = show_rule(code.upper(), output_format, implementation=True)
    if text is None:
        click.echo(f"error: unknown rule code {code!r} (see `vllm-lint rule --all`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(text, nl=False)


@cli.command()
def server() -> None:
    """Run the language server over stdio, for editors (docs/editors.md); needs `pip install "vllm-lint[lsp]"`."""
    try:
        from vllm_lint.lsp.server import serve
    except ModuleNotFoundError as exc:
        raise click.ClickException(f"`server` needs the {(exc.name or 'pygls').split('.')[0]} package: pip install \"vllm-lint[lsp]\"") from None
    serve()
