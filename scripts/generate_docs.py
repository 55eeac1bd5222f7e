"""Write what is made from the rule files: ``examples/``, the rule pages ``docs/rules/VLLnnn.md`` (where a
finding's link points) and the README's rules table.

    python scripts/generate_docs.py          # write them
    python scripts/generate_docs.py --check  # exit 1 and name what is stale (tests/test_generated_docs.py does the same)

``examples/`` holds each rule's first bad example (``vllm-lint check examples`` shows every rule firing) and
``docs/rules/`` each rule's page, and nothing else: a file there that no rule makes is removed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vllm_lint.rule_docs import example_files, rule_pages, rules_table, with_rules_table  # noqa: E402
from vllm_lint.rulebook import load_rules  # noqa: E402


def stale(repo: Path = REPO) -> dict[Path, str | None]:
    """Each file that differs from what the rule files make, with its new text (None: remove it)."""
    rules = list(load_rules().values())
    wanted = {repo / "examples" / name: text for name, text in example_files(rules).items()}
    wanted.update({repo / "docs" / "rules" / name: text for name, text in rule_pages(rules).items()})
    readme = repo / "README.md"
    wanted[readme] = with_rules_table(readme.read_text(encoding="utf-8"), rules_table(rules))
    changes: dict[Path, str | None] = {path: text for path, text in wanted.items() if _read(path) != text}
    for folder in (repo / "examples", repo / "docs" / "rules"):
        for path in sorted(folder.iterdir()) if folder.is_dir() else ():
            if path not in wanted:
                changes[path] = None
    return changes


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    changes = stale()
    for path, text in changes.items():
        shown = path.relative_to(REPO)
        if args.check:
            print(f"stale: {shown} (run python scripts/generate_docs.py)")
        elif text is None:
            path.unlink()
            print(f"removed {shown}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {shown}")
    return 1 if args.check and changes else 0


if __name__ == "__main__":
    sys.exit(main())
