"""Byte-compile each distribution pip installs as soon as pip has finished it, until STOP_FILE exists (or the
process that started this is gone).

.ci/run starts this beside its one pip call: pip installs one wheel after another on one core, and this
compiles, on the other, the modules of each distribution whose RECORD pip has written (pip writes a
distribution's RECORD after all its files). What is left when pip returns (the last distributions, what
pip did not install from a wheel) is compiled by .ci/run's `compileall` afterwards, which skips what is
already compiled. A module compiled here is the same .pyc compileall writes (checked against its source's
size and modification time when imported).

usage: python compile_as_installed.py SITE_PACKAGES STOP_FILE
"""

from __future__ import annotations

import csv
import os
import py_compile
import sys
import time
from pathlib import Path


def _modules(record: Path) -> list[Path]:
    site = record.parent.parent
    try:
        with record.open(newline="", encoding="utf-8") as rows:
            names = [row[0] for row in csv.reader(rows) if row]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return [site / name for name in names if name.endswith(".py") and not name.startswith("..")]


def main(site: Path, stop: Path) -> None:
    done: set[Path] = set()
    parent = os.getppid()
    while os.getppid() == parent:  # .ci/run gone (its install failed): nothing to wait for
        stopping = stop.exists()  # looked at before the last scan: nothing pip wrote before it is missed
        for record in sorted(site.glob("*.dist-info/RECORD")):
            if record in done:
                continue
            done.add(record)
            for module in _modules(record):
                try:
                    py_compile.compile(str(module), doraise=True, quiet=1)
                except (py_compile.PyCompileError, OSError, SyntaxError, ValueError):
                    pass  # files meant for other Python versions, as compileall reports them; nothing imports them
        if stopping:
            return
        time.sleep(0.5)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
