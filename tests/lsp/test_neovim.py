"""Neovim, headless, as the client: the setup docs/editors.md gives (``vim.lsp.config`` on Neovim 0.11 and
later; ``vim.lsp.start_client`` on older releases) gets VLL101 on a blocking server and its code actions.
Skipped where ``nvim`` is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_lint.rulebook import load_rules

REPO = Path(__file__).resolve().parents[2]
NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="Neovim (nvim) is not installed")


def docs_snippet() -> str:
    """The Neovim block of docs/editors.md."""
    text = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- neovim -->\n```lua\n(.*?)```", text, re.S)
    assert match, "docs/editors.md has no Neovim block after <!-- neovim -->"
    return match.group(1)


PROBE = """
local result = { version = tostring(vim.version().major) .. "." .. tostring(vim.version().minor) }
vim.cmd("edit " .. vim.fn.fnameescape(FILE))
local buf = vim.api.nvim_get_current_buf()
if not vim.lsp.config then
  -- Before Neovim 0.11: the same command, started by hand
  local id = vim.lsp.start_client({ name = "vllm_lint", cmd = { "vllm-lint", "server" }, root_dir = ROOT })
  vim.lsp.buf_attach_client(buf, id)
end
local ok = vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
result.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  table.insert(result.diagnostics, { code = code, line = d.lnum, source = d.source })
end
local client = vim.lsp.get_active_clients({ bufnr = buf })[1] or vim.lsp.get_active_clients()[1]
result.client = client and client.name or nil
if ok and client then
  local first = vim.diagnostic.get(buf)[1]
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = first.lnum, character = first.col }, ["end"] = { line = first.end_lnum, character = first.end_col } },
    context = { diagnostics = {} },
  }
  local response = client.request_sync("textDocument/codeAction", params, 30000, buf)
  result.actions = {}
  for _, action in ipairs((response and response.result) or {}) do
    table.insert(result.actions, action.title)
  end
end
local out = io.open(OUT, "w")
out:write(vim.fn.json_encode(result))
out:close()
vim.cmd("qall!")
"""


def test_neovim_gets_the_findings_and_code_actions(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    server = root / "server.py"
    server.write_text(load_rules()["VLL101"].bad_examples[0].clean_code)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "vllm-lint"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m vllm_lint "$@"\n')
    shim.chmod(0o755)
    out = tmp_path / "result.json"
    script = tmp_path / "init.lua"
    script.write_text(
        f"FILE = {json.dumps(str(server))}\nROOT = {json.dumps(str(root))}\nOUT = {json.dumps(str(out))}\n"
        f"if vim.lsp.config then\n{docs_snippet()}end\n{PROBE}"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state")}
    subprocess.run([NVIM, "--headless", "--clean", "-u", str(script)], cwd=root, env=env, timeout=120,
                   capture_output=True, check=False, stdin=subprocess.DEVNULL)
    result = json.loads(out.read_text())
    assert result["client"] == "vllm_lint"
    assert [(d["code"], d["line"], d["source"]) for d in result["diagnostics"]] == [("VLL101", 8, "vllm-lint")]
    assert any(title.startswith("Unsafe fix VLL101") for title in result["actions"])
    assert "Disable VLL101 for this line" in result["actions"]
