"""Serve a Gradio app (``gr.Blocks``, ``gr.Interface``, ``gr.ChatInterface``) as its file serves it, for
``vllm-lint validate``.

The file runs as ``__main__`` with no command-line arguments, as ``python app.py`` runs it; every
``launch()`` it makes serves on the launcher's host and port, with no share link, no browser, no notebook
iframe and client-side rendering (no Node), and blocks until the process is stopped. The rest of the call
(its queue, ``max_threads``, ``show_error``, ...) is the file's own, so each event runs with the concurrency
the file gives it (Gradio's default: one call of an event at a time). Analytics and the version check are
off (``GRADIO_ANALYTICS_ENABLED``). A file that builds an app and never launches it (one ``gradio app.py``
would serve) has its one module-level app launched the same way.
"""

from __future__ import annotations

import ast
import inspect
import os
import runpy
import sys
from pathlib import Path
from typing import Any, Callable

from vllm_lint.reference.python_source import imported_packages
from vllm_lint.reference.spawned import keep_children_off_the_file

# What launch() is made to do whatever the file passes; anything else it passes is kept.
LAUNCH_OVERRIDES = {"share": False, "inbrowser": False, "inline": False, "prevent_thread_lock": False,
                    "ssr_mode": False}


API_INFO_PATH = "/gradio_api/info"  # answers once launch() has started Gradio's server

# What builds a Gradio app, and what mounts one into another app (then served by that app's server).
APP_CLASSES = {"Blocks", "Interface", "ChatInterface", "TabbedInterface"}
MOUNT = "mount_gradio_app"


def is_gradio_app(source: str) -> bool:
    """A file whose server is Gradio's own: it imports gradio, builds an app and does not mount it into
    another one (``gr.mount_gradio_app(app, demo, ...)``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    names = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(tree)
             if isinstance(n, (ast.Attribute, ast.Name))}
    return "gradio" in imported_packages(tree) and bool(names & APP_CLASSES) and MOUNT not in names


# Components whose history Gradio 4.38-5 kept as tuples unless given ``type="messages"``; Gradio 6 takes no
# ``type`` and always hands the function role/content dicts (6.31's ``ChatInterface`` docstring of ``fn``).
MESSAGES_TYPED = ("Chatbot", "ChatInterface")


def accept_messages_type(gradio) -> None:
    """Let ``type="messages"`` through where the installed Gradio has no ``type`` (6 and later), whose history is
    in that format anyway; any other ``type`` is passed on, and fails as it would."""
    for name in MESSAGES_TYPED:
        component = getattr(gradio, name, None)
        if component is None or "type" in inspect.signature(component.__init__).parameters:
            continue

        def __init__(self, *args, _original=component.__init__, **kwargs):
            if kwargs.get("type") == "messages":
                del kwargs["type"]
            _original(self, *args, **kwargs)

        component.__init__ = __init__


def run_gradio_main(path: Path, host: str, port: int, on_app: Callable[[Any], None]) -> None:
    """Run the file as ``__main__`` (no arguments), its ``launch()`` serving on ``host:port``.

    ``on_app`` is given Gradio's FastAPI app as soon as it is made, before it serves (the launcher adds its
    token-count route there).
    """
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    # Gradio checks its own server through httpx (url_ok, startup-events), which a proxy set in the
    # environment would intercept.
    os.environ["NO_PROXY"] = ",".join(filter(None, [os.environ.get("NO_PROXY"), host, "localhost"]))
    import gradio
    from gradio.routes import App

    original_create_app = App.create_app

    def create_app(*args, **kwargs):
        app = original_create_app(*args, **kwargs)
        on_app(app)
        return app

    App.create_app = staticmethod(create_app)
    original_launch = gradio.Blocks.launch
    launched = []

    def launch(self, *args, **kwargs):
        launched.append(self)
        kwargs.update(LAUNCH_OVERRIDES, server_name=host, server_port=port)
        return original_launch(self, *args, **kwargs)

    gradio.Blocks.launch = launch
    accept_messages_type(gradio)
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    keep_children_off_the_file(path)  # a child re-running the app would launch it unpatched, on Gradio's port
    names = runpy.run_path(str(path), run_name="__main__")
    if launched:
        return
    apps = {id(v): v for v in names.values() if isinstance(v, gradio.Blocks)}
    demo = names.get("demo")
    if isinstance(demo, gradio.Blocks):
        apps = {id(demo): demo}
    if len(apps) != 1:
        raise SystemExit(f"{path} never calls launch() and defines {'no' if not apps else 'more than one'} "
                         "module-level Gradio app (and none named `demo`) to launch")
    next(iter(apps.values())).launch()
