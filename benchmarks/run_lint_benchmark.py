"""Time vllm-lint against ruff on the same inputs, in one run, interleaved, and print medians.

Usage:
    python benchmarks/fetch_vllm_source.py                 # once: bench-data/vllm-src
    python benchmarks/run_lint_benchmark.py [--rounds 5] [--write docs/performance.md] [--readme README.md] [--realworld FOLDER] [--fixit]

vllm-lint runs as users install it: the console script of a non-editable install of this working tree, as
pre-commit and CI run it. Each benchmark run builds the tree's wheel (``pip wheel --no-build-isolation``, no
network) into a temporary virtual environment whose only other entry is a ``.pth`` line naming this Python's
site-packages (for the dependencies, not for vllm-lint: an editable install's finder, ~18 ms of every start,
is a developer's artefact). ``PYTHONPATH`` is dropped for every command, so the working tree on it cannot shadow
the installed package, and ``XDG_CACHE_HOME`` is a folder of the run's own (vllm-lint's user cache, filled by the
untimed round).

Like for like: every row that runs both tools gives them the same output options (``OUTPUT``: one line per
finding, ``--output-format concise``; ``tests/test_lint_benchmark_readme.py`` fails when they differ), and both
print to a pipe that this process drains as it fills. Peak memory is the largest of a command's processes
(``wait4``'s ``ru_maxrss``: vllm-lint's workers included).

Every round runs each command once, in the same order (vllm-lint then ruff on the same input), so a drift of the
machine's speed touches both sides of a pair alike; a row's figure is the median over the rounds, and a ratio is
the median of the rounds' own ratios (median of pairs). One untimed round first (bytecode written, files in the
page cache, for every tool alike).

Rows: the vllm package source (2,642 files) cold (``--no-cache``) and warm (result cache) against
``ruff check --select ALL --no-cache``; the standard library; one clean file and one file with findings as
pre-commit runs them; ``vllm-lint hook claude`` on a file with findings (an agent's edit hook); the pre-filter's
effect on vllm/entrypoints/serve (57 files): cold with it and with ``VLLM_LINT_NO_PREFILTER=1``, and how many files
each parsed (vllm_lint.engine.prefilter_check, which also counts findings the pre-filter hid: 0 expected); the big
generated inputs of benchmarks/big_inputs.py (a 4 MB server module, the same without a vLLM word, a 50,000-line
module, a 20 MB notebook, a deeply nested expression), one file each, with ruff beside them (its default rules:
some of ALL's take it minutes on 50,000 functions; not on the notebook, which ruff lints only when told to); with
``--realworld FOLDER`` (what benchmarks/realworld/restore.py wrote; default: $VLLM_LINT_REALWORLD), the same two
cold runs over the real corpus, and their ratio (median of pairs); and a third run over only the corpus files that
have a finding or a fact for the project rules (found first, in process, with the pre-filter off): what a perfect
pre-filter would parse, a lower bound of the first run (it does not even read the other files).
``--write`` puts the table in a Markdown file (docs/performance.md), dated, with the machine and its load;
``--readme`` rewrites README's table (the main rows) between its markers, dated the same way.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import big_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data"
BAD_FILE = ROOT / "tests" / "fixtures" / "seeds" / "code" / "004_server.py"

# Bytecode is cached as in any normal install: with PYTHONDONTWRITEBYTECODE set (some sandboxes set it) each run
# would recompile what it imports, ~50 ms that no user pays. PYTHONPATH would put a source tree before the install.
ENV = {name: value for name, value in os.environ.items() if name not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
# What building the wheel needs of the tree (the rest, tests and data, stays behind).
_BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "vllm_lint", "rules", "templates")


def _tool(name: str) -> list[str] | None:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    # Absolute: the tools run in a temporary folder, where a relative PATH entry would point nowhere.
    return [os.path.abspath(found)] if found else None


def install_working_tree(work: Path) -> Path:
    """The ``vllm-lint`` console script of a non-editable install of this working tree, in a new virtual
    environment under ``work`` that takes its dependencies from this Python's site-packages. No network."""
    source = work / "source"
    source.mkdir(parents=True)
    for name in _BUILD_INPUTS:  # a copy: the build's build/ and egg-info folders stay out of the tree
        item = ROOT / name
        if item.is_dir():
            shutil.copytree(item, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(item, source / name)
    wheels, venv = work / "wheels", work / "venv"
    _quietly([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
              "--wheel-dir", str(wheels), str(source)])
    _quietly([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site_packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True, env=ENV).stdout.strip()
    # A plain path line: the folder joins sys.path after the venv's own, and its .pth files (the editable
    # install's finder among them) are not run.
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site_packages, "_benchmark_dependencies.pth").write_text("".join(f"{path}\n" for path in sorted(ours)))
    wheel = next(wheels.glob("vllm_lint-*.whl"))
    _quietly([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel)])
    script = venv / "bin" / "vllm-lint"
    probe = subprocess.run([str(script), "--version"], capture_output=True, text=True, env=ENV, cwd=work)
    located = subprocess.run([str(python), "-c", "import vllm_lint; print(vllm_lint.__file__)"], capture_output=True,
                             text=True, env=ENV, cwd=work).stdout.strip()
    if probe.returncode != 0 or not located.startswith(site_packages):
        raise SystemExit(f"the installed vllm-lint does not run from {site_packages} ({located}): {probe.stderr.strip()}")
    return script


def _quietly(argv: list[str]) -> None:
    """Run a build step; its output (setuptools' warnings) is shown only when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, env=ENV)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")


@dataclass
class Command:
    label: str  # the row
    tool: str  # "vllm-lint" or "ruff"
    argv: list[str]
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)

    def run(self, cwd: Path, record: bool = True) -> None:
        start = time.perf_counter()
        process = subprocess.Popen(
            self.argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**ENV, **self.env},
        )
        process.stdin.write(self.stdin)
        process.stdin.close()
        # Both tools print to a pipe that is read as it fills, as a terminal or CI's log would read them.
        while process.stdout.read(1 << 16):
            pass
        process.stdout.close()
        # wait4's usage covers the child and every descendant it waited for (vllm-lint's workers).
        _, _, usage = os.wait4(process.pid, 0)
        if record:
            self.seconds.append(time.perf_counter() - start)
            self.peak_mib.append(usage.ru_maxrss / 1024)


# How both tools print, on every row that runs both: one line per finding, to a pipe this process drains
# (Command.run). ruff's ``-q`` still renders every finding's code frame, much more text than vllm-lint's; a
# test (tests/test_lint_benchmark_readme.py) fails when the two sides of a row print differently.
OUTPUT = ("--output-format", "concise")
# Options that decide what a command prints (OUTPUT's, and those that would change it).
OUTPUT_OPTIONS = ("--output-format", "-q", "--quiet", "-s", "--silent", "--statistics", "--show-fixes", "-e", "--exit-zero")
TREE_OPTIONS = ("--no-respect-gitignore", "--isolated", "--exit-zero", *OUTPUT)
ONE_FILE_OPTIONS = ("--no-cache", "--exit-zero", "--isolated", *OUTPUT)


def output_options(argv: list[str]) -> list[str]:
    """The options of ``argv`` that decide what it prints, with their values, in order."""
    found = []
    for index, word in enumerate(argv):
        if word in OUTPUT_OPTIONS:
            found.append(word)
            if word == "--output-format":
                found.append(argv[index + 1])
    return found


BIG_ROWS = {  # (ruff's figure on these rows is with its default rules)
    "server_4mb.py": "4 MB server module (50,000 functions; ruff: default rules)",
    "no_vllm_4mb.py": "4 MB module, no vLLM word (ruff: default rules)",
    "generated_50k_lines.py": "50,000-line generated module (ruff: default rules)",
    "notebook_20mb.ipynb": "20 MB notebook",
    "nested_expression.py": "deeply nested expression (ruff: default rules)",
}


def build_commands(
    vllm_lint: list[str], ruff: list[str], work: Path, vllm_source: Path, stdlib: Path, big: dict[str, Path],
    stdlib_ruff: bool = False,
) -> list[Command]:
    """Every row's commands, vllm-lint's first; ``work`` holds the files the one-file rows lint."""
    entrypoints = vllm_source / "vllm" / "entrypoints" / "serve"
    clean = work / "clean.py"
    clean.write_text("import os\n\nprint(os.getcwd())\n")
    bad = work / BAD_FILE.name
    shutil.copyfile(BAD_FILE, bad)
    cache = ["--cache-dir", str(work / "cache")]
    ruff_tree = [*ruff, "check", "--select", "ALL", "--no-cache", *TREE_OPTIONS]
    ruff_file = [*ruff, "check", "--select", "ALL", *ONE_FILE_OPTIONS]
    ours_tree = [*vllm_lint, "check", *TREE_OPTIONS]
    ours_file = [*vllm_lint, "check", *ONE_FILE_OPTIONS]
    hook_payload = json.dumps({"hook_event_name": "PostToolUse", "cwd": str(work), "tool_name": "Write",
                               "tool_input": {"file_path": str(bad)}}).encode()
    commands = [
        Command("vllm source, cold", "vllm-lint", [*ours_tree, "--no-cache", str(vllm_source)]),
        Command("vllm source, cold", "ruff", [*ruff_tree, str(vllm_source)]),
        Command("vllm source, warm (cache)", "vllm-lint", [*ours_tree, *cache, str(vllm_source)]),
        Command("standard library, cold", "vllm-lint", [*ours_tree, "--no-cache", str(stdlib)]),
        *([Command("standard library, cold", "ruff", [*ruff_tree, str(stdlib)])] if stdlib_ruff else []),
        Command("one clean file", "vllm-lint", [*ours_file, str(clean)]),
        Command("one clean file", "ruff", [*ruff_file, str(clean)]),
        Command("one file with findings", "vllm-lint", [*ours_file, str(bad)]),
        Command("one file with findings", "ruff", [*ruff_file, str(bad)]),
        Command("hook claude, file with findings", "vllm-lint", [*vllm_lint, "hook", "claude"], stdin=hook_payload),
        Command("vllm/entrypoints/serve, pre-filter on", "vllm-lint", [*ours_tree, "--no-cache", str(entrypoints)]),
        Command("vllm/entrypoints/serve, pre-filter off", "vllm-lint", [*ours_tree, "--no-cache", str(entrypoints)],
                env={"VLLM_LINT_NO_PREFILTER": "1"}),
    ]
    # ruff with its default rules here: some of ALL's take it minutes on 50,000 functions.
    ruff_default = [*ruff, "check", *ONE_FILE_OPTIONS]
    for name, label in BIG_ROWS.items():
        commands.append(Command(label, "vllm-lint", [*ours_file, str(big[name])]))
        if not name.endswith(".ipynb"):  # ruff reads a notebook's cells only when asked (extend-include)
            commands.append(Command(label, "ruff", [*ruff_default, str(big[name])]))
    return commands


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (medians over them; at least 5)")
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file")
    parser.add_argument("--readme", type=Path, help="also rewrite README's performance table (between its markers) with the main rows")
    parser.add_argument("--fixit", action="store_true", help="also time Fixit once on the vllm source (minutes)")
    parser.add_argument("--stdlib-ruff", action="store_true", help="also time ruff on the standard library (slow)")
    parser.add_argument("--realworld", type=Path, default=os.environ.get("VLLM_LINT_REALWORLD") or None,
                        help="the restored real corpus (benchmarks/realworld/restore.py): time it with and without the pre-filter")
    parser.add_argument("--files-with-findings", type=Path, metavar="FOLDER",
                        help="print FOLDER's files that have a finding or a project fact, one a line, and exit")
    args = parser.parse_args()
    if args.files_with_findings is not None:
        print("\n".join(map(str, files_with_findings(args.files_with_findings))))
        return 0
    if args.rounds < 5:
        parser.error("--rounds: at least 5")
    if args.readme and readme_with_table(args.readme.read_text(encoding="utf-8"), [], "") is None:
        parser.error(f"--readme: {args.readme} has no {README_START!r} ... {README_END!r} markers")

    ruff = _tool("ruff")
    vllm_source = DATA / "vllm-src"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    entrypoints = vllm_source / "vllm" / "entrypoints" / "serve"
    if not vllm_source.is_dir():
        print(f"missing {vllm_source}: run benchmarks/fetch_vllm_source.py first", file=sys.stderr)
        return 2
    if ruff is None:
        print("ruff not found (pip install ruff, the bench extra)", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="vllm-lint-bench-"))
    print("installing the working tree (a wheel, in a temporary virtual environment)", file=sys.stderr, flush=True)
    vllm_lint = [str(install_working_tree(work))]
    # A user cache of this run's own (usercache.py: the code dataclasses compile, parsed rule files), filled by
    # the untimed round, as one user's with one version installed: not this machine's, shared by every checkout.
    ENV["XDG_CACHE_HOME"] = str(work / "user-cache")
    big = _big_inputs_apart(work / "big")
    commands = build_commands(vllm_lint, ruff, work, vllm_source, stdlib, big, args.stdlib_ruff)
    if args.realworld is not None:
        if not args.realworld.is_dir():
            parser.error(f"--realworld: {args.realworld} is not a folder")
        real = str(args.realworld.resolve())
        print("finding the corpus files with findings (pre-filter off, in process)", file=sys.stderr, flush=True)
        needed = _files_with_findings_apart(args.realworld.resolve())
        commands += [
            Command("real corpus, pre-filter on", "vllm-lint", [*vllm_lint, "check", *TREE_OPTIONS, "--no-cache", real]),
            Command("real corpus, pre-filter off", "vllm-lint", [*vllm_lint, "check", *TREE_OPTIONS, "--no-cache", real],
                    env={"VLLM_LINT_NO_PREFILTER": "1"}),
            Command(ORACLE_ROW, "vllm-lint", [*vllm_lint, "check", *TREE_OPTIONS, "--no-cache", *map(str, needed)]),
        ]
    load_before = os.getloadavg()
    for command in commands:
        command.run(work, record=False)  # the untimed round (it fills the cache for the warm row)
    for round_number in range(args.rounds):
        for command in commands:
            command.run(work)
        print(f"round {round_number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    fixit_seconds = None
    if args.fixit and _tool("fixit"):
        fixit = Command("vllm source", "fixit", [*_tool("fixit"), "lint", str(vllm_source)])
        fixit.run(work)
        fixit_seconds = fixit.seconds[0]

    from vllm_lint.engine.prefilter_check import compare

    effect = compare([entrypoints], per_code=False)
    shutil.rmtree(work, ignore_errors=True)

    lines = _table(commands, args.rounds)
    lines.append("")
    lines.append(
        f"Pre-filter on vllm/entrypoints/serve ({effect.files} files): {effect.parsed_filtered} parsed with it, "
        f"{effect.parsed_forced} without; findings it hid: {len(effect.hidden)}."
    )
    if args.realworld is not None:
        on, off, oracle = commands[-3], commands[-2], commands[-1]
        ratio = _median([a / b for a, b in zip(on.seconds, off.seconds)])
        floor = _median([a / b for a, b in zip(oracle.seconds, off.seconds)])
        lines.append(f"Pre-filter on the real corpus: with it / without it = {ratio:.2f} (median of pairs); a perfect "
                     f"pre-filter's lower bound, only the {len(needed)} files with findings or facts / without it = "
                     f"{floor:.2f}.")
    if fixit_seconds is not None:
        lines.append(f"Fixit (default rules) on the vllm source, one run: {fixit_seconds:.1f} s.")
    machine = (
        f"{datetime.date.today().isoformat()}, {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {_version()}, {ruff_version(ruff)}; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; medians of {args.rounds} interleaved rounds after one untimed round."
    )
    print("\n".join(lines))
    print(machine)
    if args.write:
        args.write.write_text(_document(lines, machine), encoding="utf-8")
    if args.readme:
        text = args.readme.read_text(encoding="utf-8")
        updated = readme_with_table(text, _readme_table(commands), machine)
        if updated is None:
            print(f"{args.readme}: no {README_START!r} ... {README_END!r} markers; left as it was", file=sys.stderr)
            return 2
        args.readme.write_text(updated, encoding="utf-8")
    return 0


ORACLE_ROW = "real corpus, only its files with findings"


def _big_inputs_apart(folder: Path) -> dict[str, Path]:
    """benchmarks/big_inputs.py's files, written by a process of its own: making them (a 20 MB notebook) would grow
    this one, and every command it starts afterwards would report that peak as its own (see below)."""
    subprocess.run([sys.executable, str(Path(__file__).with_name("big_inputs.py")), str(folder)], env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    return {name: folder / name for name in big_inputs.FILES}


def _files_with_findings_apart(corpus: Path) -> list[Path]:
    """files_with_findings in a process of its own: linting in this one would grow it, and every command it starts
    afterwards would report this process's peak memory as its own (a forked child's maxrss starts there)."""
    done = subprocess.run([sys.executable, __file__, "--files-with-findings", str(corpus)], capture_output=True,
                          text=True, env=ENV, check=True)
    return [Path(line) for line in done.stdout.splitlines() if line]


def files_with_findings(corpus: Path) -> list[Path]:
    """The files of ``corpus`` that have a finding or a fact for the project rules when every file is parsed:
    all that a pre-filter which never let a file through in vain would parse."""
    from vllm_lint.config import Settings, enabled_codes, pin_search_tops
    from vllm_lint.engine.discovery import discover
    from vllm_lint.engine.prefilter_check import findings_of, prefilter_off
    from vllm_lint.engine.runner import RunOptions, lint_file
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    settings = Settings(respect_gitignore=False, pin_search_tops=pin_search_tops([corpus], None))
    codes = all_codes()
    options = RunOptions(settings, enabled_codes(settings, codes, ()), codes)
    with prefilter_off():
        return [path for path, surface in discover([corpus], settings, all_surfaces())
                if findings_of(lint_file(path, surface, options))]


README_START = "<!-- performance table: benchmarks/run_lint_benchmark.py --readme writes it -->"
README_END = "<!-- end of performance table -->"
# The rows README shows (docs/performance.md has them all).
README_ROWS = ("vllm source, cold", "vllm source, warm (cache)", "one clean file", "one file with findings",
               "hook claude, file with findings")


def _readme_table(commands: list[Command]) -> list[str]:
    lines = ["| input | vllm-lint | ruff `--select ALL` | ratio (median of pairs) |", "|---|---|---|---|"]
    rows = _by_row(commands)
    for label in README_ROWS:
        ours, theirs = rows[label]["vllm-lint"], rows[label].get("ruff")
        lines.append(f"| {label} | {_seconds(ours)} | {_seconds(theirs)} | {_ratio(ours, theirs)} |")
    return lines


def readme_with_table(text: str, table: list[str], machine: str) -> str | None:
    """README's text with what lies between its performance-table markers replaced; None without them."""
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return None
    block = "\n".join([README_START, f"Measured {machine}", "", *table, README_END])
    return text[:start] + block + text[end + len(README_END):]


def _by_row(commands: list[Command]) -> dict[str, dict[str, Command]]:
    """Each row's commands by tool, rows in the order they were run."""
    rows: dict[str, dict[str, Command]] = {}
    for command in commands:
        rows.setdefault(command.label, {})[command.tool] = command
    return rows


def _ratio(ours: Command, theirs: Command | None) -> str:
    """vllm-lint over ruff, the median of the rounds' own ratios; blank for a row ruff does not run."""
    return f"{_median([a / b for a, b in zip(ours.seconds, theirs.seconds)]):.2f}" if theirs else ""


def _seconds(command: Command | None) -> str:
    return f"{_median(command.seconds):.3f} s" if command else ""


def _table(commands: list[Command], rounds: int) -> list[str]:
    lines = [
        "| input | vllm-lint | ruff `--select ALL` | vllm-lint / ruff (median of pairs) | peak MiB vllm-lint / ruff |",
        "|---|---|---|---|---|",
    ]
    for label, tools in _by_row(commands).items():
        ours, theirs = tools["vllm-lint"], tools.get("ruff")
        peak = f"{_median(ours.peak_mib):.0f}" + (f" / {_median(theirs.peak_mib):.0f}" if theirs else "")
        lines.append(f"| {label} | {_seconds(ours)} | {_seconds(theirs)} | {_ratio(ours, theirs)} | {peak} |")
    return lines


def _version() -> str:
    from vllm_lint import __version__

    return f"vllm-lint {__version__}"


def ruff_version(ruff: list[str]) -> str:
    return subprocess.run([*ruff, "--version"], capture_output=True, text=True).stdout.strip()


def _document(lines: list[str], machine: str) -> str:
    return (
        "# Performance\n\n"
        "Written by `python benchmarks/run_lint_benchmark.py --write docs/performance.md` (see its docstring for\n"
        "what each row runs). vllm-lint runs as users install it: the console script of a non-editable install (a\n"
        "wheel) of the tree, as pre-commit and CI run it. Every figure is a median over interleaved rounds,\n"
        "vllm-lint and ruff taking turns on the same input, each printing one line per finding to a pipe; ratios are\n"
        "medians of the rounds' own ratios. Only the latest run is kept here; where the time goes, and CPU figures:\n"
        "the newest speed-limits page.\n\n"
        f"Measured {machine}\n\n" + "\n".join(lines) + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
