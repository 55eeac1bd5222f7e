"""``vllm-lint hook AGENT``: read the assistant's payload on stdin, lint the edited files, answer.

Runs after every edit an agent makes, so it never imports click (``vllm_lint.cli.entry`` sends
``hook`` here first) and never stands in the agent's way because of vllm-lint's own trouble: a
payload it cannot read, or an internal error, is a note on stderr and exit 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

USAGE = "usage: vllm-lint hook AGENT < payload.json   (AGENT: {agents}; `vllm-lint init --hooks` installs it)"


def main(args: list[str]) -> int:
    from vllm_lint.agent_hooks.protocols import PROTOCOLS, PayloadError

    agents = ", ".join(PROTOCOLS)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(USAGE.format(agents=agents), file=sys.stderr if args[:1] not in (["-h"], ["--help"]) else sys.stdout)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    protocol = PROTOCOLS.get(args[0])
    if protocol is None:
        print(f"vllm-lint: error: unknown agent {args[0]!r}; known: {agents}", file=sys.stderr)
        return 2
    try:
        raw = sys.stdin.buffer.read() if sys.stdin is not None else b""
        payload = json.loads(raw.decode("utf-8"))
        if not isinstance(payload, dict):
            raise PayloadError("the payload is not a JSON object")
        edited = protocol.edited(payload, os.environ, Path.cwd())
    except (ValueError, OSError) as exc:
        reason = str(exc) if isinstance(exc, PayloadError) else f"{type(exc).__name__}: {exc}"
        print(f"vllm-lint hook {protocol.name}: note: cannot read the hook payload ({reason}); nothing checked", file=sys.stderr)
        return 0
    try:
        from vllm_lint.agent_hooks.report import lint_edited, phrase

        answer = protocol.answer(phrase(lint_edited(edited.paths, edited.root)))
    except Exception as exc:  # noqa: BLE001 - vllm-lint's own trouble must not block the agent
        print(f"vllm-lint hook {protocol.name}: note: internal error ({type(exc).__name__}: {exc}); nothing checked", file=sys.stderr)
        return 0
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr)
        sys.stderr.flush()
    return answer.exit_code
