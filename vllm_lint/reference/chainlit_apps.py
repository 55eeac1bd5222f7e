"""Serve a Chainlit app as ``chainlit run app.py --headless`` serves it, for ``vllm-lint validate``.

Chainlit's CLI (``chainlit.cli.run_chainlit``) imports the file as a module, checks that it answers messages, and
serves Chainlit's FastAPI app under uvicorn, whose lifespan runs the app's ``@cl.on_app_startup`` (where a fix
builds its engine) before it listens. The launcher runs the same function in its own process, after its patches,
on its host and port (``CHAINLIT_HOST``/``CHAINLIT_PORT``, which the CLI reads), headless (no browser) and without
watching the file. Chainlit takes messages over socket.io only (:mod:`vllm_lint.reference.validate.chainlit_endpoint`);
its tokens are counted from the answers.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from vllm_lint.reference.python_source import imported_packages

READY_PATH = "/health"  # Chainlit's own route, served once uvicorn's lifespan start-up is done
# What makes a file a Chainlit app: a callback that answers a user (chainlit.cli.assert_app).
_CALLBACKS = {"on_message", "on_chat_start", "on_audio_chunk"}


def is_chainlit_app(source: str) -> bool:
    """A file that imports chainlit and decorates a function with ``@cl.on_message`` (or ``on_chat_start``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    if "chainlit" not in imported_packages(tree):
        return False
    return any(ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1] in _CALLBACKS
               for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               for d in n.decorator_list)


def run_chainlit_app(path: Path, host: str, port: int) -> None:
    """``chainlit run PATH --headless`` in this process, on ``host:port``."""
    os.environ.update(CHAINLIT_HOST=host, CHAINLIT_PORT=str(port))
    from chainlit.cli import run_chainlit
    from chainlit.config import config

    config.run.headless = True
    config.run.watch = False
    run_chainlit(str(path))
