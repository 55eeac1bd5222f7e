"""``vllm-lint server`` without the ``lsp`` extra says what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_server_command_without_pygls_names_the_extra():
    hide = "import sys; sys.modules['pygls'] = None; from vllm_lint.cli.entry import main; main(['server'])"
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == 'Error: `server` needs the pygls package: pip install "vllm-lint[lsp]"\n'
