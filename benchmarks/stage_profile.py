"""Where a cold run's CPU goes, by stage of the pipeline: py-spy samples of a whole ``vllm-lint check`` (a wheel of
this tree, as run_lint_benchmark.py installs it), each sample counted for the innermost frame that names a stage.

    python benchmarks/stage_profile.py [FOLDER]      # default: bench-data/vllm-src; needs py-spy (pip install py-spy)

Prints the share of each stage in the worker processes' samples (where a large run's files are read, pre-filtered
and parsed), then the parent's, then the pre-filter's conditions by their share of all samples.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_lint_benchmark import DATA, ENV, TREE_OPTIONS, install_working_tree  # noqa: E402

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^():]*):?\d*\)$")


def stage_of(function: str, file: str) -> str | None:
    """The stage a frame belongs to, or None when it names none (its caller's decides)."""
    if "/output/" in file:
        return "report"
    if "libcst/_parser" in file or file.endswith("python/parsing.py"):
        return "LibCST parse"
    if file.endswith(("python/walk.py", "python/model.py")):
        return "walk and module model"
    if file.endswith("python/positions.py") or "libcst/_nodes" in file and function.startswith("_codegen"):
        return "positions (LibCST code generation)"
    if file.endswith("python/tree_facts.py"):
        return "ast stage (tree facts)"
    if function == "_may_call_into_project":
        return "other modules' summaries"
    if file.endswith(("_prefilter.py", "python/prefilter.py")) or function == "may_match":
        return "byte pre-filter"
    if file.endswith(("registry.py", "python/checker.py")) or "/rules/" in file:
        return "rules"
    if file.endswith("vllm_lint/source.py"):
        return "reading files"
    if file.endswith("engine/discovery.py"):
        return "discovery"
    if "importlib" in file or function in ("_find_and_load", "_load_unlocked"):
        return "imports"
    if file.endswith(("engine/workers.py", "engine/processes.py")):
        return "worker pipes (waiting included)"
    return None


def condition_of(frames: list[str]) -> str | None:
    """The outermost pre-filter condition on a stack (a function of a ``*_prefilter.py`` module or of prefilter.py)."""
    for frame in frames:
        match = _FRAME.match(frame)
        if (
            match
            and match["file"].endswith(("_prefilter.py", "python/prefilter.py"))
            and not match["function"].startswith("may_match")
        ):
            return f"{match['function']} ({Path(match['file']).name})"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DATA / "vllm-src")
    parser.add_argument("--rate", type=int, default=250, help="samples a second")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    work = Path(tempfile.mkdtemp(prefix="vllm-lint-stages-"))
    script = install_working_tree(work)
    env = {**ENV, "XDG_CACHE_HOME": str(work / "user-cache")}
    check = [str(script), "check", *TREE_OPTIONS, "--no-cache", str(args.folder.resolve())]
    subprocess.run(check, stdout=subprocess.DEVNULL, env=env, cwd=work, check=True)  # the user cache, bytecode
    raw = work / "samples.txt"
    subprocess.run(
        [spy, "record", "--subprocesses", "--format", "raw", "-r", str(args.rate), "-o", str(raw), "--", *check],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=work,
        check=True,
    )
    by_process: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    conditions: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        process = int(
            [frame for frame in frames if frame.startswith("process ")][-1].split()[1].rstrip(":").split(":")[0]
        )
        stage = "other"
        for frame in reversed(frames):
            match = _FRAME.match(frame)
            found = match and stage_of(match["function"], match["file"])
            if found:
                stage = found
                break
        by_process[process][stage] += int(count)
        condition = condition_of(frames)
        if condition:
            conditions[condition] += int(count)
    shutil.rmtree(work, ignore_errors=True)
    parent = min(by_process)
    workers: collections.Counter[str] = collections.Counter()
    for process, stages in by_process.items():
        if process != parent:
            workers.update(stages)
    total = sum(sum(stages.values()) for stages in by_process.values())
    for title, stages in (("worker processes", workers), ("parent process", by_process[parent])):
        samples = sum(stages.values())
        print(f"\n{title} ({samples} samples)\n\n| stage | share |\n|---|---|")
        for stage, count in stages.most_common():
            print(f"| {stage} | {count / samples:.0%} |")
    print(f"\npre-filter conditions, share of all {total} samples\n\n| condition | share |\n|---|---|")
    for condition, count in conditions.most_common(10):
        print(f"| {condition} | {count / total:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
