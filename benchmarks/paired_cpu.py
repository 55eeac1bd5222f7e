"""CPU seconds of whole commands, taken in turn: for comparing two trees (or vllm-lint and ruff) on a shared machine.

Usage:
    python benchmarks/paired_cpu.py [--rounds 7] LABEL=COMMAND LABEL=COMMAND [...]

Each round runs every command once, in the order given, after one untimed round (bytecode, the user cache); a
command runs through the shell with its output read from a pipe as it fills. A command's CPU is the user and
system seconds of its process and of every child it waited for (``os.wait4``: the parser processes included);
its wall time is printed beside it. Medians over the rounds, and the second command's over the first's as the
median of the rounds' own ratios. On a machine that other work shares, wall seconds measure the load more than
the command; CPU seconds move less, but still rise with the load (cores shared with other processes run slower),
so only runs taken in turn compare.

For example, the vllm source cold, a tree before and after a change (each with a user cache of its own, which
the untimed round fills: two checkouts sharing one keep repacking the vLLM API snapshot, which it holds for one
checkout at a time):

    python benchmarks/paired_cpu.py \\
      "before=XDG_CACHE_HOME=/tmp/c1 PYTHONPATH=/tmp/before python -m vllm_lint check --no-cache --isolated \\
       --exit-zero --no-respect-gitignore --output-format concise bench-data/vllm-src" \\
      "after=XDG_CACHE_HOME=/tmp/c2 PYTHONPATH=. python -m vllm_lint check ... bench-data/vllm-src"
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("commands", nargs="+", metavar="LABEL=COMMAND")
    args = parser.parse_args()
    commands = [command.split("=", 1) for command in args.commands]
    if any(len(command) != 2 for command in commands):
        parser.error("each command is LABEL=COMMAND")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run it: bytecode written once, then read
    cpu: dict[str, list[float]] = {label: [] for label, _ in commands}
    wall: dict[str, list[float]] = {label: [] for label, _ in commands}
    for round_number in range(args.rounds + 1):
        for label, command in commands:
            start = time.monotonic()
            process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            assert process.stdout is not None
            while process.stdout.read(1 << 16):
                pass
            _, _, usage = os.wait4(process.pid, 0)
            if round_number:
                cpu[label].append(usage.ru_utime + usage.ru_stime)
                wall[label].append(time.monotonic() - start)
    for label in cpu:
        print(
            f"{label}: CPU median {statistics.median(cpu[label]):.3f} s [{' '.join(f'{x:.2f}' for x in cpu[label])}]; "
            f"wall median {statistics.median(wall[label]):.3f} s"
        )
    if len(commands) > 1:
        first, second = commands[0][0], commands[1][0]
        ratio = statistics.median(b / a for a, b in zip(cpu[first], cpu[second]))
        print(f"{second} / {first}, CPU, median of the rounds' ratios: {ratio:.3f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
