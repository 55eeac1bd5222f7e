"""Make a case runnable: its model pointed at the local one, its fixed version from vllm-lint's own fixer, and
the few lines a snippet lacks to import and serve (each injection noted)."""

from __future__ import annotations

import ast
import difflib
import importlib.util
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from vllm_lint.reference.bentoml_services import is_bentoml_service
from vllm_lint.reference.django_views import serves_django_views
from vllm_lint.reference.gradio_apps import is_gradio_app
from vllm_lint.reference.litserve_apps import is_litserve_server
from vllm_lint.reference.python_source import imported_packages
from vllm_lint.reference.ray_serve_apps import is_ray_serve_app
from vllm_lint.reference.sanic_apps import is_sanic_app
from vllm_lint.reference.server_kinds import ServerKind, is_grpc_server, kind_of
from vllm_lint.reference.validate.cases import Case, rewrites_a_server
from vllm_lint.reference.validate.endpoint import PROMPT_FIELDS
from vllm_lint.reference.validate.errors import NotARewrite, NotServable, ValidationError
from vllm_lint.reference.validate.websocket_endpoint import serves_websockets

# Stdlib modules a snippet may use without importing them (the seed "good" server calls uuid.uuid4()
# with no `import uuid`): the harness adds the import and says so.
STDLIB_AUTO_IMPORTS = ("uuid", "asyncio", "json", "time", "os", "logging")

Progress = Callable[[str], None]


@dataclass
class PreparedSource:
    role: str
    path: Path
    injected: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)  # set for the server: the variables naming its model



# Calls that name a model, and where: (keyword, positional index).
MODEL_ARGUMENTS = {"pipeline": ("model", 1), "LLM": ("model", 0), "AsyncEngineArgs": ("model", 0),
                   "EngineArgs": ("model", 0), "from_pretrained": ("pretrained_model_name_or_path", 0)}


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def point_at_model(source: str, model: Path) -> tuple[str, list[str]]:
    """``source`` with the model each ``pipeline``/``LLM``/``(Async)EngineArgs``/``from_pretrained`` call names
    (a string literal, or a module-level name or a local of the calling function bound to one) replaced by
    ``model``; and the names replaced.

    This is what a user does before running a server on another model; it happens before the autofixer runs,
    so the fixed file names the same local model as the bad one.
    """
    tree = ast.parse(source)
    constants: dict[str, ast.Constant] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value
    literals: dict[tuple[int, int], ast.Constant] = {}
    called = [value for node in ast.walk(tree) if isinstance(node, ast.Call) for value in _model_values(node)]
    for value in (*called, *_constructor_models(tree), *_local_models(tree), *_spread_models(tree),
                  *_attribute_models(tree)):
        if isinstance(value, ast.Name) and value.id in constants:
            value = constants[value.id]
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            literals[(value.lineno, value.col_offset)] = value
    if not literals:
        return source, []
    text = str(model)
    replacement = f'"{text}"' if '"' not in text and "\\" not in text else repr(text)
    lines = source.splitlines(keepends=True)
    names: list[str] = []
    # ast's columns are UTF-8 byte offsets; replace from the end so earlier positions stay valid.
    for literal in sorted(literals.values(), key=lambda n: (n.lineno, n.col_offset), reverse=True):
        if literal.end_lineno != literal.lineno:
            continue  # an implicitly concatenated or triple-quoted name over several lines: leave it
        line = lines[literal.lineno - 1].encode()
        lines[literal.lineno - 1] = (line[:literal.col_offset] + replacement.encode()
                                     + line[literal.end_col_offset:]).decode()
        if isinstance(literal.value, str):
            names.append(literal.value)
    return "".join(lines), sorted(set(names))


_ENVIRONMENT_READS = ("os.environ.get", "environ.get", "os.getenv", "getenv")


def _environment_read(value: ast.expr) -> str | None:
    """The variable that ``os.environ["X"]``, ``os.environ.get("X", ...)`` or ``os.getenv("X", ...)`` reads."""
    if isinstance(value, ast.Subscript) and ast.unparse(value.value) in ("os.environ", "environ"):
        key = value.slice
    elif isinstance(value, ast.Call) and ast.unparse(value.func) in _ENVIRONMENT_READS and value.args:
        key = value.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def model_environment(source: str, model: Path) -> dict[str, str]:
    """The environment variables a model call takes its model from (``pipeline(model=os.environ["MODEL_PATH"])``,
    directly or through a name bound to the read), each set to ``model``: as a user starts the server on
    another model, and as point_at_model does for a model named in the source."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}
    for assign in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
        variable = _environment_read(assign.value)
        if variable is not None:
            bound.update({t.id: variable for t in assign.targets if isinstance(t, ast.Name)})
    found = set()
    for value in (v for node in ast.walk(tree) if isinstance(node, ast.Call) for v in _model_values(node)):
        variable = _environment_read(value) or (bound.get(value.id) if isinstance(value, ast.Name) else None)
        if variable is not None:
            found.add(variable)
    return {variable: str(model) for variable in sorted(found)}


def _local_models(tree: ast.Module) -> list[ast.expr]:
    """The literal a function's local holds where a model call in that function names the model by it:
    ``model_id = "org/m"`` then ``from_pretrained(model_id)`` in a LitServe ``setup()``."""
    found: list[ast.expr] = []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        local: dict[str, ast.Constant] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                local.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
        calls = (n for n in ast.walk(function) if isinstance(n, ast.Call))
        found += [local[v.id] for call in calls for v in _model_values(call) if isinstance(v, ast.Name) and v.id in local]
    return found


def _attribute_models(tree: ast.Module) -> list[ast.expr]:
    """The literal an attribute of the object holds where a model call in its class names the model by it:
    ``self.model_id = "org/m"`` then ``from_pretrained(self.model_id)`` in a BentoML service's ``__init__``."""
    found: list[ast.expr] = []
    for klass in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        held: dict[str, ast.Constant] = {}
        for node in ast.walk(klass):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                held.update({ast.unparse(t): node.value for t in node.targets if isinstance(t, ast.Attribute)
                             and isinstance(t.value, ast.Name) and t.value.id == "self"})
        calls = (n for n in ast.walk(klass) if isinstance(n, ast.Call))
        found += [held[ast.unparse(v)] for call in calls for v in _model_values(call)
                  if isinstance(v, ast.Attribute) and ast.unparse(v) in held]
    return found


def _spread_models(tree: ast.Module) -> list[ast.expr]:
    """The model a dict literal names where a model call gets it spread: ``params = {"model": "org/m", ...}``
    then ``LLM(**params)`` in the same function (or both at module level)."""
    found: list[ast.expr] = []
    for scope in (tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))):
        nodes = list(ast.walk(scope)) if scope is not tree else [n for s in tree.body for n in ast.walk(s)]
        dicts = {t.id: node.value for node in nodes if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                 for t in node.targets if isinstance(t, ast.Name)}
        for call in (n for n in nodes if isinstance(n, ast.Call) and _called_name(n.func) in MODEL_ARGUMENTS):
            keyword = MODEL_ARGUMENTS[_called_name(call.func) or ""][0]
            for spread in (k.value for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)):
                literal = dicts.get(spread.id)
                if literal is not None:
                    found += [v for k, v in zip(literal.keys, literal.values)
                              if isinstance(k, ast.Constant) and k.value in (keyword, "tokenizer")]
    return found


def _model_values(call: ast.Call) -> list[ast.expr]:
    """What a model-loading call (MODEL_ARGUMENTS) is given as its model, and as its tokenizer."""
    where = MODEL_ARGUMENTS.get(_called_name(call.func) or "")
    if where is None:
        return []
    keyword, position = where
    values = [k.value for k in call.keywords if k.arg in (keyword, "tokenizer")]
    if not any(k.arg == keyword for k in call.keywords) and len(call.args) > position:
        values.append(call.args[position])
    return values


def _constructor_models(tree: ast.Module) -> list[ast.expr]:
    """What ``Generator("gpt2")`` passes (or its default) for the ``__init__`` parameter that a model call in it
    names the model by: ``def __init__(self, model_name): self.pipe = pipeline(..., model=model_name)``."""
    found: list[ast.expr] = []
    for klass in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        init = next((n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            continue
        params = [*init.args.posonlyargs, *init.args.args][1:]
        defaults = dict(zip([p.arg for p in params][len(params) - len(init.args.defaults):], init.args.defaults))
        names = {p.arg for p in params}
        used = set()
        for node in ast.walk(init):
            if isinstance(node, ast.Call):
                used |= {v.id for v in _model_values(node) if isinstance(v, ast.Name) and v.id in names}
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == klass.name]
        for param in used:
            index = [p.arg for p in params].index(param)
            for call in calls:
                given = [k.value for k in call.keywords if k.arg == param] or call.args[index:index + 1]
                if given:
                    found.extend(given)
                elif param in defaults:
                    found.append(defaults[param])
    return found


def _module_bindings(tree: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def _framework_missing(module: str, what: str) -> str | None:
    """Why a file of a framework that is not installed cannot be served, or None when it is installed."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package missing
        found = False
    if found:
        return None
    return (f"{what}, and {module.split('.')[0]} is not installed here: "
            "pip install 'vllm-lint[frameworks]' (or the framework the file uses) to validate it")


def unservable(source: str, endpoint_given: bool = False) -> str | None:
    """Why the harness cannot start this server and send it requests (HTTP, or gRPC through the project's
    generated stub), or None when it can. With ``endpoint_given`` (``--endpoint``), a route the source shows none
    of is the user's to name (``@app.get("/ai") def prompt(line: str)``, whose parameter no prompt name matches)."""
    tree = ast.parse(source)
    modules = imported_packages(tree)
    routes = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in
              ("post", "route", "api_route", "add_api_route", "add_url_rule")]
    if "sanic" in modules:
        # Run as its __main__ runs it, in one process, with a document of the fields its handlers read.
        if not is_sanic_app(source):
            return "Sanic code that builds no app: validate runs the Sanic(...) app a file builds"
        return _framework_missing("sanic", "a Sanic app")
    if "modal" in modules:
        # Modal runs a class's methods in its cloud containers, called through Modal's own client.
        return ("a Modal app: validate does not run Modal's containers; serve the class's methods behind a local "
                "FastAPI app to validate them")
    if "ray" in modules:
        if not is_ray_serve_app(source):
            return "Ray code with no Serve deployment: validate serves a Ray Serve application"
        return _framework_missing("ray.serve", "a Ray Serve application")
    if "bentoml" in modules:
        if not is_bentoml_service(source):
            return "BentoML code with no @bentoml.service class: validate serves a service with `bentoml serve`"
        return _framework_missing("bentoml", "a BentoML service")
    if "litserve" in modules:
        if not is_litserve_server(source):
            return "a LitServe API the file never serves: validate runs the LitServer its file builds"
        return _framework_missing("litserve", "a LitServe API")
    if routes or _get_route_with_a_prompt(tree) or _starlette_post_route(tree):
        return None
    if "gradio" in modules:
        # Launched as its __main__ launches it, called through Gradio's HTTP API (gradio_endpoint).
        if is_gradio_app(source):
            return _framework_missing("gradio_client", "a Gradio app")
        return ("Gradio code that mounts its app into another app (or builds none) and no POST route: validate "
                "launches a Gradio app, or loads a route that takes a prompt")
    if "grpc" in modules:
        # Called through its generated stub (grpc_endpoint), started as its __main__ starts it.
        return None if is_grpc_server(source) else "a gRPC module that starts no server: validate starts one that adds a port"
    if "django" in modules and not serves_django_views(source):
        return "Django code with no view function (a first parameter `request`): validate routes a views module's views"
    if modules & {"fastapi", "starlette"} and serves_websockets(source):
        return None  # sent prompts over its websocket routes (websocket_endpoint)
    if modules & {"fastapi", "flask", "starlette"} and not endpoint_given:
        return "no POST route: validate loads a route that takes a prompt in a request"
    return None


def _starlette_post_route(tree: ast.Module) -> bool:
    """``Route("/age", age, methods=["POST"])``: a Starlette route that takes POST requests."""
    return any(isinstance(n, ast.Call) and _called_name(n.func) == "Route"
               and any(k.arg == "methods" and "'POST'" in ast.unparse(k.value).replace('"', "'") for k in n.keywords)
               for n in ast.walk(tree))


def _get_route_with_a_prompt(tree: ast.Module) -> bool:
    """``@app.get("/generate") def generate(text: str)``: a GET route with a prompt-like parameter, which
    discover_endpoint loads through its query string."""
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        gets = any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "get" for d in function.decorator_list)
        if gets and any(a.arg in PROMPT_FIELDS for a in (*function.args.args, *function.args.kwonlyargs)):
            return True
    return False


def make_runnable(source: str) -> tuple[str, list[str]]:
    """Return ``source`` with what it needs to import and serve, and a note per injected line."""
    tree = ast.parse(source)
    bound = _module_bindings(tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    lines: list[str] = []
    notes: list[str] = []
    for module in STDLIB_AUTO_IMPORTS:
        if module in used and module not in bound:
            lines.append(f"import {module}  # injected by vllm-lint validate")
            notes.append(f"import {module} (used but never imported)")
    # The other kinds serve no app of the file's (Django views are routed by the launcher).
    if "app" not in bound and kind_of(source) in (ServerKind.APP, ServerKind.UVICORN_MAIN):
        lines.append("from fastapi import FastAPI as _VllmLintFastAPI  # injected by vllm-lint validate")
        lines.append("app = _VllmLintFastAPI()  # injected by vllm-lint validate: the file defines no app")
        notes.append("app = FastAPI() (the file uses @app routes but never creates app)")
    if not lines:
        return source, notes
    # After the docstring and `from __future__` imports, before anything that may use the names.
    insert_at = 0
    for node in tree.body:
        is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str) and insert_at == 0 and node is tree.body[0]
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            insert_at = node.end_lineno or insert_at
        else:
            break
    src_lines = source.splitlines(keepends=True)
    if src_lines and not src_lines[-1].endswith("\n"):
        src_lines[-1] += "\n"
    new = src_lines[:insert_at] + [line + "\n" for line in lines] + src_lines[insert_at:]
    return "".join(new), notes



def run_autofixer(path: Path, progress: Progress, *, fix_max_model_len: int | None = None) -> dict[str, int]:
    """Fix ``path`` in place with vllm-lint's own fixer, as ``vllm-lint check --fix --unsafe-fixes`` would,
    with every rule enabled; return the fixes applied, by code.

    ``fix_max_model_len`` is the fix setting of that name (the model's context, so that the fixed engine
    fits the model it is run with); the rest is the default configuration, whatever the file's folder holds.
    """
    from vllm_lint.config import Settings
    from vllm_lint.engine.fixer import fix_file

    settings = Settings(root=path.parent.resolve())
    if fix_max_model_len:
        settings = replace(settings, fix_max_model_len=fix_max_model_len)
    progress(f"autofix: vllm-lint check --fix --unsafe-fixes {path.name}"
             + (f" (fix-max-model-len = {fix_max_model_len})" if fix_max_model_len else ""))
    try:
        outcome = fix_file(path, unsafe=True, settings=settings)
    except Exception as exc:  # a crash of the fixer is a failed validation, reported as such
        raise ValidationError(f"the autofixer failed on {path.name}: {type(exc).__name__}: {exc}") from exc
    path.write_bytes(outcome.fixed)
    return dict(outcome.applied)


@dataclass
class PreparedCase:
    case: Case
    bad: PreparedSource
    fixed: PreparedSource
    diff: str | None
    applied: dict[str, int]
    model_names: list[str]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").lower() or "server"


def prepare_case(case: Case, model: Path, workdir: Path, progress: Progress, fixed: Path | None = None,
                 endpoint_given: bool = False) -> PreparedCase:
    """Write the bad server pointed at ``model`` and its fixed version (the autofixer's, or ``fixed``) into
    a folder of ``workdir``, both made runnable (``endpoint_given``: the route is named by ``--endpoint``)."""
    directory = workdir / _slug(case.name)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        bad_text, names = point_at_model(case.source, model)
    except SyntaxError as exc:
        raise ValidationError(f"{case.origin} does not parse: {exc}") from exc
    if names:
        progress(f"{case.name}: model {', '.join(names)} -> {model}")
    reason = unservable(bad_text, endpoint_given)
    if reason is not None:
        raise NotServable(reason)
    # Each copy keeps the file's name, in a folder of its own with the other files of its project (a gRPC
    # server's generated modules): a name can make a file what it is (Django's views.py).
    bad_copy, fixed_copy = directory / "bad" / case.filename, directory / "fixed" / case.filename
    for root in (directory / "bad", directory / "fixed"):
        for name, text in ((case.filename, ""), *case.files):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            if name != case.filename:
                (root / name).write_text(text)
    bad_copy.write_text(bad_text)
    applied: dict[str, int] = {}
    diff = None
    if fixed is None:
        fixed_copy.write_text(bad_text)
        from vllm_lint.reference.launch import model_context

        applied = run_autofixer(fixed_copy, progress, fix_max_model_len=model_context(str(model)))
        after = fixed_copy.read_text()
        if after == bad_text:
            raise NotARewrite("the autofixer changed nothing: there is no fix to validate")
        if not case.explicit and not rewrites_a_server(bad_text, after):
            raise NotARewrite(f"the autofixer's fixes ({', '.join(sorted(applied))}) do not "
                              "rewrite it into a server on AsyncLLMEngine nor move its model calls off the event loop")
        diff = "".join(difflib.unified_diff(bad_text.splitlines(True), after.splitlines(True), "bad", "fixed"))
        progress(f"{case.name}: fixed " + ", ".join(f"{n} x {code}" for code, n in sorted(applied.items())))
    else:
        try:
            fixed_text, _ = point_at_model(fixed.read_text(), model)
        except SyntaxError as exc:
            raise ValidationError(f"the fixed file does not parse: {exc}") from exc
        fixed_copy.write_text(fixed_text)
    prepared = []
    for role, path in (("bad", bad_copy), ("fixed", fixed_copy)):
        try:
            text, notes = make_runnable(path.read_text())
        except SyntaxError as exc:
            raise ValidationError(f"the {role} file does not parse: {exc}") from exc
        path.write_text(text)
        for note in notes:
            progress(f"{case.name}: {role}: injected {note}")
        environment = model_environment(text, model)
        if environment:
            progress(f"{case.name}: {role}: model from ${', $'.join(environment)} -> {model}")
        prepared.append(PreparedSource(role, path, notes, environment))
    return PreparedCase(case, prepared[0], prepared[1], diff, applied, names)
