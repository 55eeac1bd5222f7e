"""The facts of every file of a workspace folder, for the project rules: ``python -m vllm_lint.lsp.scan FOLDER``
prints them as JSON (``{path: FileFacts.to_json()}``).

The server runs this once per folder (and again when the configuration changes), in a process of its own:
the walk lints through the worker processes and the result cache exactly as ``check`` does, and forking
workers from the server's threads is what this keeps out of the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vllm_lint.config import ConfigError, Settings, enabled_codes, find_config, load_settings
from vllm_lint.engine.runner import RunOptions


def folder_facts(folder: Path) -> dict[str, dict]:
    from vllm_lint.engine.discovery import discover
    from vllm_lint.engine.run import Run
    from vllm_lint.registry import project_codes
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    codes = all_codes()
    config = find_config(folder)
    # Without a configuration file, as `check` run in the folder: globs and the project are relative to it.
    settings = load_settings(config, codes) if config is not None else Settings(root=folder)
    options = RunOptions(settings=settings, enabled=enabled_codes(settings, codes), codes=codes)
    if not options.enabled & project_codes():
        return {}  # no project rule is on: no file reports facts
    files = [(path, surface) for path, surface in discover([folder], settings, all_surfaces()) if surface is not None]
    results = Run(options, cache=True).lint_files(files, project_rules=False)
    return {str(path): result.facts.to_json() for (path, _surface), result in zip(files, results) if result.facts}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m vllm_lint.lsp.scan FOLDER", file=sys.stderr)
        return 2
    try:
        facts = folder_facts(Path(argv[0]).absolute())
    except ConfigError as exc:
        print(f"vllm-lint: error: {exc}", file=sys.stderr)
        return 2
    json.dump(facts, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
