"""One module away: what a handler reaches in the project's other modules, through their summaries."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from lintutil import lint_file_paths, linted_here, run_cli

APP = """
from fastapi import FastAPI

from service import answer

app = FastAPI()


@app.post("/answer")
async def handle(question: str):
    return {"text": answer(question)}
"""
SERVICE = """
from model import generate


def answer(question):
    return generate(question.strip())
"""
MODEL = """
from transformers import pipeline

_pipe = pipeline("text-generation", model="gpt2")


def generate(prompt):
    return _pipe(prompt)[0]["generated_text"]
"""


def _project(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _findings(paths: list[Path]) -> list[tuple[str, int, str, str]]:
    return [(Path(d.path).name, d.start.line, d.code, d.message) for d in lint_file_paths(paths)]


def test_a_chain_through_two_modules_is_reported_at_the_handlers_call(tmp_path):
    _project(tmp_path, {"app.py": APP, "service.py": SERVICE, "model.py": MODEL})
    assert _findings([tmp_path / "app.py"]) == [(
        "app.py", 10, "VLL101",
        "transformers pipeline called inside a request handler (handle), through service.answer -> model.generate "
        "(model.py:7): it blocks the event loop: every other request waits until it finishes; serve with vLLM's "
        "AsyncLLMEngine instead",
    )]


def test_the_whole_tree_reports_it_once(tmp_path):
    _project(tmp_path, {"app.py": APP, "service.py": SERVICE, "model.py": MODEL})
    assert [(name, line, code) for name, line, code, _ in _findings([tmp_path])] == [("app.py", 10, "VLL101")]


def test_names_are_resolved_through_imports_not_matched(tmp_path):
    # A module named like the real one, outside the project, and a function of the same name that is harmless.
    _project(tmp_path / "project", {"app.py": APP, "service.py": "def answer(question):\n    return question\n"})
    _project(tmp_path, {"service.py": SERVICE, "model.py": MODEL})
    assert _findings([tmp_path / "project" / "app.py"]) == []


def test_a_package_reexport(tmp_path):
    _project(tmp_path, {
        "app.py": APP.replace("from service import answer", "from pkg import answer"),
        "pkg/__init__.py": "from .service import answer\n",
        "pkg/service.py": SERVICE.replace("from model import generate", "from .model import generate"),
        "pkg/model.py": MODEL,
    })
    assert [(name, line, code) for name, line, code, _ in _findings([tmp_path / "app.py"])] == [("app.py", 10, "VLL101")]


def _check(cwd: Path, *args: str):
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LINT_CACHE_DIR"}
    return run_cli("check", "--isolated", "--output-format", "json", *args, cwd=cwd, env=env)


def test_a_cached_result_is_redone_when_a_module_it_used_changes(tmp_path):
    _project(tmp_path, {"app.py": APP, "service.py": SERVICE, "model.py": MODEL})
    first = _check(tmp_path, "app.py")
    assert [item["code"] for item in json.loads(first.stdout)] == ["VLL101"]
    cache = json.loads(next((tmp_path / ".vllm_lint_cache").glob("v*.json")).read_text())
    assert sorted(Path(p).name for p in cache["summaries"]) == ["model.py", "service.py"]
    (tmp_path / "model.py").write_text("def generate(prompt):\n    return prompt\n", encoding="utf-8")
    second = _check(tmp_path, "app.py")
    assert json.loads(second.stdout) == []


def test_a_module_that_cannot_matter_is_not_parsed_and_its_change_is_seen(tmp_path):
    _project(tmp_path, {"app.py": APP, "service.py": "def answer(question):\n    return question\n"})
    assert json.loads(_check(tmp_path, "app.py").stdout) == []
    (tmp_path / "service.py").write_text(textwrap.dedent(SERVICE), encoding="utf-8")
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL), encoding="utf-8")
    assert [item["code"] for item in json.loads(_check(tmp_path, "app.py").stdout)] == ["VLL101"]


def test_stdin_reads_the_other_modules_on_demand(tmp_path):
    _project(tmp_path, {"service.py": SERVICE, "model.py": MODEL})
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LINT_CACHE_DIR"}
    result = run_cli("check", "--isolated", "--output-format", "json", "--stdin-filename", "app.py", "-",
                     cwd=tmp_path, stdin=textwrap.dedent(APP).lstrip("\n"), env=env)
    assert [(item["code"], item["location"]["row"]) for item in json.loads(result.stdout)] == [("VLL101", 10)]


# A module with handler words in its code but no handler or start-up hook in its tree (vLLM's diffusion_gemma.py,
# run_batch.py, processor.py in small): what it imports is not summarised and it is not parsed.
NO_HANDLER = """
import torch

from model import generate


@torch._dynamo.config.patch(recompile_limit=64)
def run(prompt):
    return generate(prompt)
"""
ON_STARTUP = """
from fastapi import FastAPI

from model import load

app = FastAPI()


@app.on_event("startup")
async def warm_up():
    app.state.pipe = load()
"""
LOADER = """
from transformers import pipeline


def load():
    return pipeline("text-generation", model="gpt2")
"""


def _parsed(paths: list[Path]) -> dict[str, bool]:
    from vllm_lint.config import Settings, enabled_codes
    from vllm_lint.engine.run import Run
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.rulebook import all_codes

    config = Settings(root=paths[0].parent.resolve())
    options = RunOptions(config, enabled_codes(config, all_codes(), ()), all_codes())
    with linted_here():
        return {Path(result.path).name: result.parsed for result in Run(options).lint_paths(paths)}


def test_a_module_with_handler_words_but_no_handler_in_its_tree_is_not_parsed(tmp_path):
    _project(tmp_path, {"worker.py": NO_HANDLER, "model.py": MODEL})
    assert _parsed([tmp_path / "worker.py"]) == {"worker.py": False}


def test_a_start_up_hook_reaching_another_module_is_parsed_and_reported(tmp_path):
    _project(tmp_path, {"app.py": ON_STARTUP, "model.py": LOADER})
    assert _parsed([tmp_path / "app.py"]) == {"app.py": True}
    assert [(name, code) for name, _, code, _ in _findings([tmp_path / "app.py"])] == [("app.py", "VLL503")]



FALCON_RESOURCE = """
import falcon

from model import generate


class Generate:
    def on_post(self, req, resp):
        resp.media = generate(req.media["prompt"])
"""


def test_a_falcon_resource_registered_elsewhere_reaches_another_module(tmp_path):
    # no route in this module: Falcon serves the responder of the class that another module adds to its app
    _project(tmp_path, {"resource.py": FALCON_RESOURCE, "model.py": MODEL})
    assert [(name, line, code) for name, line, code, _ in _findings([tmp_path / "resource.py"])] == [("resource.py", 8, "VLL101")]


def test_a_long_lived_process_sees_a_module_created_after_its_first_lint(tmp_path):
    """The language server lints each change in its own process, whose store of module summaries outlives a lint:
    a module the handler imports that did not exist at the first lint must be found at the next."""
    from vllm_lint.config import Settings, enabled_codes
    from vllm_lint.engine.run import Run, Source, forget_disk_state
    from vllm_lint.engine.runner import RunOptions
    from vllm_lint.rulebook import all_codes
    from vllm_lint.surfaces import all_surfaces

    _project(tmp_path, {"app.py": APP, "service.py": SERVICE})
    config = Settings(root=tmp_path.resolve())
    options = RunOptions(config, enabled_codes(config, all_codes(), ()), all_codes(), fix_edits=False)
    python = next(surface for surface in all_surfaces() if surface.name == "python")
    app = tmp_path / "app.py"

    def codes() -> list[str]:
        source = Source(app, str(app), app.read_bytes(), python)
        return [d.code for d in Run(options).lint_source(source).diagnostics]

    assert codes() == []  # service imports model, which is not there yet
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL), encoding="utf-8")
    forget_disk_state()  # what both servers do when told of a change on disk, or at each request
    assert codes() == ["VLL101"]
