"""The options of ``vllm-lint check``, declared once.

``cli.py`` builds the click command from this table. :func:`parse_common` reads the command lines that
pre-commit and CI steps use (flags, rule lists, an output format, report and cache paths, paths to lint)
from the same table without importing click, which costs about a third of a clean one-file run. Anything
else it leaves to click: ``--help``, standard input, a mistake.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Kind = Literal["flag", "switch", "list", "choice", "file", "directory", "text"]


@dataclass(frozen=True)
class CheckOption:
    """One option of ``check``: its parameter, its spellings, what it takes and its help."""
    param: str
    declarations: tuple[str, ...]  # as click takes them: "-n", "--no-cache"; a switch: "--color/--no-color"
    kind: Kind
    help: str
    choices: tuple[str, ...] = ()
    default: Any = None

    def empty(self) -> Any:
        """The value click passes when the option is absent."""
        if self.kind == "flag":
            return False
        if self.kind == "list":
            return ()
        return self.default


def _options() -> tuple[CheckOption, ...]:
    from vllm_lint.output import FORMATS

    return (
        CheckOption("select", ("--select",), "list", "Rule codes or prefixes to enable (replaces the configured set)."),
        CheckOption("ignore", ("--ignore",), "list", "Rule codes or prefixes to disable."),
        CheckOption("extend_select", ("--extend-select",), "list", "Rule codes or prefixes to enable in addition."),
        CheckOption("preview", ("--preview/--no-preview",), "switch",
                    "Also run the rules in preview (new rules start there; `vllm-lint rule --all` marks them)."),
        CheckOption("output_format", ("--output-format",), "choice",
                    "How to print findings (sarif: code scanning; github: workflow annotations; junit: test reports).",
                    choices=tuple(FORMATS), default="full"),
        CheckOption("output_file", ("-o", "--output-file"), "file", "Write the report to this file instead of stdout."),
        CheckOption("stdin_filename", ("--stdin-filename",), "text",
                    "Read the source from stdin and treat it as this file (surface, per-file-ignores, report)."),
        CheckOption("statistics", ("--statistics",), "flag",
                    "Print the number of findings per code instead of each finding."),
        CheckOption("quiet", ("-q", "--quiet"), "flag", "Print the findings only: no summary lines."),
        CheckOption("silent", ("-s", "--silent"), "flag",
                    "Print nothing (a report asked for with --output-file is still written); the exit code tells."),
        CheckOption("exit_zero", ("--exit-zero",), "flag", "Exit 0 even when there are findings."),
        CheckOption("config_path", ("--config",), "file", "Use this configuration file."),
        CheckOption("target_vllm_version", ("--target-vllm-version",), "text",
                    "Judge every file against these vLLM releases (\"0.33\", \"0.8.5\", \">=0.6,<0.9\") instead of the "
                    "ones the project pins (the target-vllm-version setting)."),
        CheckOption("gpu", ("--gpu",), "text",
                    "The GPU type launches run on where their files do not say (\"A100-80GB\", \"L4\"; the gpu setting)."),
        CheckOption("model_facts_from_hub", ("--model-facts-from-hub",), "flag",
                    "Read the config.json of a model no local source knows from the Hugging Face Hub (HF_ENDPOINT), "
                    "kept in the user cache."),
        CheckOption("show_settings", ("--show-settings",), "flag",
                    "Print the settings in effect and the vLLM releases each file is judged against, and why; lint nothing."),
        CheckOption("explain_opaque", ("--explain-opaque",), "flag",
                    "List the vLLM launches not read in full and why (with --output-format json: every launch "
                    "seen, read in full or not); report no findings."),
        CheckOption("isolated", ("--isolated",), "flag", "Ignore every configuration file."),
        CheckOption("force_exclude", ("--force-exclude",), "flag",
                    "Apply excludes to files named on the command line too (for pre-commit)."),
        CheckOption("color", ("--color/--no-color",), "switch", "Colour the output (default: only on a terminal)."),
        CheckOption("respect_gitignore", ("--respect-gitignore/--no-respect-gitignore",), "switch",
                    "Skip files ignored by .gitignore (default: yes)."),
        CheckOption("fix", ("--fix",), "flag", "Apply safe fixes."),
        CheckOption("unsafe_fixes", ("--unsafe-fixes",), "flag", "Also apply (with --fix) or show unsafe fixes."),
        CheckOption("diff", ("--diff",), "flag",
                    "Print the fixes as a unified diff and write nothing (exit 1 when there is a diff)."),
        CheckOption("show_fixes", ("--show-fixes",), "flag", "List the fixes that were applied."),
        CheckOption("fix_only", ("--fix-only",), "flag", "Apply fixes and do not report what remains."),
        CheckOption("exit_non_zero_on_fix", ("--exit-non-zero-on-fix",), "flag",
                    "Exit 1 when a fix was applied, even if nothing remains."),
        CheckOption("add_noqa", ("--add-noqa",), "flag",
                    "Add a noqa comment for every finding (each file's own comment form), so that only new ones fail."),
        CheckOption("no_cache", ("-n", "--no-cache"), "flag", "Neither read nor write the result cache."),
        CheckOption("cache_dir", ("--cache-dir",), "directory",
                    "Keep the result cache here (default: .vllm_lint_cache in the project root; env "
                    "VLLM_LINT_CACHE_DIR)."),
    )


CHECK_OPTIONS = _options()


def _by_name() -> dict[str, tuple[CheckOption, object]]:
    """Each spelling on a command line -> (option, the value a flag or switch spelling stands for)."""
    names: dict[str, tuple[CheckOption, object]] = {}
    for option in CHECK_OPTIONS:
        for declaration in option.declarations:
            if option.kind == "switch":
                on, off = declaration.split("/")
                names[on], names[off] = (option, True), (option, False)
            else:
                names[declaration] = (option, True)
    return names


def _wrong_kind(path: Path, kind: str) -> bool:
    """click.Path(dir_okay=False) refuses an existing folder, click.Path(file_okay=False) an existing file."""
    return path.is_dir() if kind == "file" else (path.exists() and not path.is_dir())


def parse_common(args: list[str]) -> dict[str, Any] | None:
    """``check``'s parameters as click would pass them, for a command line made only of flags, rule lists,
    an output format and paths; None for anything else (click then parses it, and explains any mistake)."""
    names = _by_name()
    values: dict[str, Any] = {option.param: option.empty() for option in CHECK_OPTIONS}
    paths: list[Path] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if not token.startswith("-"):
            paths.append(Path(token))
            continue
        name, has_value, value = token.partition("=")
        known = names.get(name)
        if known is None:
            return None  # "-", "--", --help, a typo, short flags run together: click's business
        option, meaning = known
        if option.kind in ("flag", "switch"):
            if has_value:
                return None
            values[option.param] = meaning
            continue
        if option.param == "stdin_filename":
            return None  # reading stdin has its own rules, in cli.py
        if not has_value:
            if index == len(args) or args[index].startswith("-"):
                return None
            value = args[index]
            index += 1
        if option.kind == "choice":
            if value not in option.choices:
                return None
            values[option.param] = value
        elif option.kind in ("file", "directory"):
            if not value or _wrong_kind(Path(value), option.kind):
                return None  # click says what is wrong with it
            values[option.param] = Path(value)
        elif option.kind == "text":
            values[option.param] = value
        else:
            values[option.param] += (value,)
    values["paths"] = tuple(paths)
    return values
