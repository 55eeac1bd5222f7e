"""Decide from the raw bytes whether a Python file could produce any finding.

Most files in a repository (and nearly every file of vLLM's own source, which
mentions ``vllm``, ``SamplingParams`` and ``pipeline`` everywhere) cannot
match. Proving that with substring tests and a few regular expressions costs
microseconds; parsing with LibCST costs milliseconds and importing LibCST
~170 ms. The filter must never skip a file that a rule would report, so each
condition below is a *necessary* condition of the rules it lists, derived from
how those rules decide (the comments name the rule modules). When the cheap
reader meets something it does not understand it answers "may match" and
lets the parser decide.

Speed matters here more than anywhere: every expression starts with a literal
(``re`` then scans for it with a fast substring search) and word boundaries
are checked by hand afterwards, because a leading ``\\b`` or lookbehind makes
``re`` try every byte of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vllm_lint.vllm_api import VllmApi

ApiLoader = Callable[[], VllmApi]


class _Lazy:
    """A regular expression compiled on first use: most runs never need most of them, and
    compiling them all at import would cost a one-file pre-commit run ~15 ms."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: bytes, flags: int = 0) -> None:
        self._source, self._flags, self._compiled = source, flags, None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return getattr(self._compiled, name)


def _re(source: bytes, flags: int = 0) -> re.Pattern[bytes]:
    return _Lazy(source, flags)  # type: ignore[return-value] - quacks like a Pattern
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _word_matches(pattern: re.Pattern[bytes], data: bytes, allow_dot: bool = True) -> Iterator[re.Match[bytes]]:
    """Matches of ``pattern`` that start a word (not inside ``xLLM``; not ``.x`` unless ``allow_dot``)."""
    for match in pattern.finditer(data):
        start = match.start()
        if start == 0:
            yield match
            continue
        before = data[start - 1]
        if before not in _WORD_BYTES and (allow_dot or before != 0x2E):
            yield match


def _has_word(pattern: re.Pattern[bytes], data: bytes) -> bool:
    return next(_word_matches(pattern, data), None) is not None


# -- request handlers (semantics.Semantics.handlers) ---------------------------------------------
# A route decorator ``@<expr>.<verb>(``, a registration call, a gRPC servicer, a class-based
# view, a Ray Serve deployment, or Django's views.py.
_ROUTE_DECORATOR = _re(
    rb"@[^\n]*\.[ \t]*(?:get|post|put|patch|delete|options|head|api_route|websocket|route|view)[ \t]*\("
)


def _route_decorator(data: bytes) -> bool:
    """A route decorator: one that starts its line (``a @ b.view(...)`` is a matrix product)."""
    for match in _ROUTE_DECORATOR.finditer(data):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        if not data[line_start:match.start()].strip(b" \t"):
            return True
    return False
# Each clue: a substring that gates it (one fast scan), then the expression that confirms it.
# No word boundary at the start: ``FooServicer``, ``APIView``, ``WebSocketRoute(`` all count.
_HANDLER_CLUES = (
    (b"add_", _re(rb"add_(?:api_route|api_websocket_route|route|websocket_route|url_rule|get|post|put|patch|delete|head|view)[ \t]*\(")),
    (b"Route", _re(rb"Route[ \t]*\(")),
    (b"Servicer", _re(rb"Servicer\b")),
    (b"View", _re(rb"View(?:Set)?\b")),
    # ``app.post("/chat")(chat)``, ``web.post("/chat", chat)``, ``path("chat/", chat)`` (handler_table.py)
    (b")(", _re(rb"\.[ \t]*(?:post|put|patch|delete|options|head|api_route|websocket|route)[ \t]*\([^()\n]*\)[ \t]*\([ \t]*\w+[ \t]*\)")),
    (b"web.", _re(rb"web\.(?:get|post|put|patch|delete|head|view|route)[ \t]*\(")),
    (b"django.urls", _re(rb"django\.urls")),
)
# Frameworks whose handlers are found only through their own names: importing one is necessary.
_FRAMEWORK_NAMES = (b"gradio", b"bentoml", b"litserve", b"litestar", b"modal", b"tornado", b"rest_framework", b"bottle")
_IMPORT_LINE_START = _re(rb"[ \t]*(?:from|import)[ \t]")


def _imports_a_framework(data: bytes) -> bool:
    """``import gradio as gr``, ``from bentoml import ...``, ``import os, modal``: a line that imports one of them."""
    for name in _FRAMEWORK_NAMES:
        if name not in data:
            continue
        for lead in (b"import ", b"from ", b", "):
            start = data.find(lead + name)
            while start != -1:
                end = start + len(lead) + len(name)
                if end >= len(data) or data[end] not in _WORD_BYTES:
                    line_start = data.rfind(b"\n", 0, start) + 1
                    if _IMPORT_LINE_START.match(data, line_start):
                        return True
                start = data.find(lead + name, start + 1)
    return False
# Web app factories (semantics.APP_FACTORIES) come from importing a framework.
_WEB_FRAMEWORKS = rb"(?:fastapi|starlette|flask|quart|sanic|aiohttp|litestar|django|ray|gradio|bottle|tornado|grpc)\b"
_WEB_IMPORTS = (
    _re(rb"from[ \t]+" + _WEB_FRAMEWORKS),
    _re(rb"import[ \t]+(?:[\w. \t]+,[ \t]*)*" + _WEB_FRAMEWORKS),
)
# Model loads and model calls: serving.is_model_load, VLL102's generate, VLL103's LLM methods.
_VLLM_ENGINE_WORD = _re(rb"LLM(?:Engine)?\b")


_RAY_DEPLOYMENT = _re(rb"@[^\n]*deployment\b")


def _remembered(function: Callable[[bytes, Path], bool]) -> Callable[[bytes, Path], bool]:
    """Answer again for the same file without the work: several conditions ask the same question."""
    last: list[object] = [None, None, False]

    def remembered(data: bytes, path: Path) -> bool:
        if last[0] is data and last[1] is path:  # identity, and the reference keeps ``id`` from being reused
            return bool(last[2])
        last[:] = [data, path, function(data, path)]
        return bool(last[2])

    return remembered


def may_have_handlers(data: bytes, path: Path) -> bool:
    """Whether the module may define a request handler or a start-up hook (a necessary condition of
    handlers.py finding one), in its code, not its prose."""
    if not (_startup_event(data) or _may_have_handlers(data, path)):
        return False
    code = _code_only(data)
    return _startup_event(code) or _may_have_handlers(code, path)


_ON_EVENT = _re(rb"@[^\n]*on_event[ \t]*\(")


def _startup_event(data: bytes) -> bool:
    return b"on_event" in data and _ON_EVENT.search(data) is not None


@_remembered
def _may_have_handlers(data: bytes, path: Path) -> bool:
    if b"@" in data and (_route_decorator(data) or (b"deployment" in data and _RAY_DEPLOYMENT.search(data))):
        return True
    for gate, pattern in _HANDLER_CLUES:
        if gate in data and pattern.search(data):
            return True
    return (path.name == "views.py" and b"django" in data) or _imports_a_framework(data)


def _may_be_web_app(data: bytes, path: Path) -> bool:
    return any(_has_word(pattern, data) for pattern in _WEB_IMPORTS) or _may_have_handlers(data, path)


@_remembered
def _mentions_vllm_engine(data: bytes, path: Path) -> bool:
    if b"from_engine_args" in data:
        return True
    # "vLLM" is everywhere in prose; only when some "LLM" is not part of it is a closer look worth it.
    llm = data.count(b"LLM")
    return llm > data.count(b"vLLM") and _has_word(_VLLM_ENGINE_WORD, data)


def _serving_in_handler(data: bytes, path: Path) -> bool:
    """VLL101, VLL102, VLL104 (and VLL103's handler branch): a model load or call reached from a handler."""
    return (b"transformers" in data or _mentions_vllm_engine(data, path)) and _may_have_handlers(data, path)


def _offline_llm_in_server(data: bytes, path: Path) -> bool:
    return _mentions_vllm_engine(data, path) and _may_be_web_app(data, path)


def _multi_worker(data: bytes, path: Path) -> bool:
    return b"workers" in data and (b"uvicorn" in data or b"hypercorn" in data)


class _Callable:
    """Where a vLLM class may be called: ``Name(``, an import alias ``Name as X``, or ``X = [mod.]Name``."""

    def __init__(self, name: bytes) -> None:
        self.name = name
        self._call = _re(name + rb"[ \t]*(?:\(|\\\r?\n|as[ \t])")
        self._bare = _re(name + rb"[ \t]*(?:[#;\r\n]|$)")

    def calls(self, data: bytes) -> Iterator[re.Match[bytes]]:
        return _word_matches(self._call, data)

    def may_be_called(self, data: bytes) -> bool:
        return self.name in data and (_has_word(self._call, data) or self.aliased(data))

    def aliased(self, data: bytes) -> bool:
        """``X = [mod.]Name`` (model.py follows such module-level aliases) or ``import ... Name as X``."""
        for match in _word_matches(self._bare, data):
            line_start = data.rfind(b"\n", 0, match.start()) + 1
            if _ASSIGNED_NAME.search(data, line_start, match.start()):
                return True
        return any(m.group(0).endswith((b"as ", b"as\t")) for m in self.calls(data))


_ASSIGNED_NAME = _re(rb"=[ \t]*(?:[\w.]+\.)?$")


# -- engine constructions (python/launches.py) and launches in subprocess lists -----------------
_ENGINES = (_Callable(b"LLM"), _Callable(b"EngineArgs"), _Callable(b"AsyncEngineArgs"))
# The command starts a string or a list: ``"vllm serve ..."``, ``["vllm", "serve", ...]``,
# ``"-m", "vllm.entrypoints.openai.api_server"`` (log messages that mention it do not start with it).
_SERVE_COMMAND = (
    _re(rb"[\"']vllm(?:[\"'][ \t]*,[ \t]*[\"']|[ \t]+)serve\b"),
    _re(rb"[\"']vllm\.entrypoints\.(?:openai\.)?api_server[\"']"),
    # python/command_lines.py also reads wrapped commands (`"exec vllm serve"`, `"docker run ... vllm/vllm-openai"`),
    # `-m vllm.entrypoints.cli.main serve`, and `-m vllm.X` for a module vLLM lacks (VLL303)
    _re(rb"vllm[ \t]+serve\b"),
    _re(rb"vllm/vllm"),
    _re(rb"vllm-openai"),
    _re(rb"-m[\"',\s]{1,8}vllm\b"),
)
# The callees python/command_lines.py reads (subprocess.*, os.exec*/posix_spawn*/system/popen,
# asyncio.create_subprocess_*), as written or imported: ``from os import execvp``, ``import os as o``.
_PROCESS_WORDS = (b"subprocess", b"os.exec", b"os.posix_spawn", b"os.system", b"os.popen", b"from os import", b"import os as")


def _engine_launch(data: bytes, path: Path) -> bool:
    llm, engine_args, async_engine_args = _ENGINES
    if llm.may_be_called(data):
        return True
    # One scan for both: "AsyncEngineArgs" contains "EngineArgs".
    return b"EngineArgs" in data and (engine_args.may_be_called(data) or async_engine_args.may_be_called(data))


def _launch_in_command_line(raw: bytes) -> bool:
    """``subprocess.run(["vllm", "serve", ...])`` and friends: the command is in strings, so raw bytes."""
    return (
        b"vllm" in raw
        and any(word in raw for word in _PROCESS_WORDS)
        and any(pattern.search(raw) for pattern in _SERVE_COMMAND)
    )


_LEGACY_ENGINE = (
    _re(rb"vllm[ \t]*\.[ \t]*engine[ \t]*\.[ \t]*(?:async_)?llm_engine\b"),
    _re(rb"from[ \t]+vllm[ \t]*\.[ \t]*engine[ \t]+import[^\n]*llm_engine\b"),
)


def _legacy_engine_import(data: bytes, path: Path) -> bool:
    """VLL501: ``vllm.engine.(async_)llm_engine``, imported as a module or from."""
    return b"llm_engine" in data and any(pattern.search(data) for pattern in _LEGACY_ENGINE)


_RETURN = _re(rb"return[ \t]")


def _returns_a_tuple(code: bytes) -> bool:
    """A ``return a, b`` or ``return (a, b)`` statement somewhere (strings already blanked)."""
    for match in _word_matches(_RETURN, code, allow_dot=False):
        index = match.end()
        while index < len(code) and code[index] in b" \t":
            index += 1
        if index < len(code) and code[index] == 0x28:  # "("
            arguments = _top_level_arguments(code, index)
            if arguments is None or len(arguments) > 1:
                return True
        depth = 0
        while index < len(code):
            byte = code[index]
            if byte in _OPEN:
                depth += 1
            elif byte in _CLOSE:
                depth -= 1
            elif byte == 0x2C and depth <= 0:  # ","
                return True
            elif byte in b"\n;" and depth <= 0 and code[index - 1] != 0x5C:  # end of statement
                break
            index += 1
    return False


def _fastapi_tuple_return(data: bytes, path: Path) -> bool:
    """VLL502 needs a FastAPI route handler that returns a tuple."""
    return b"fastapi" in data and b"return" in data and _may_have_handlers(data, path) and _returns_a_tuple(data)


def _startup_hook(data: bytes, path: Path) -> bool:
    """VLL503: a model load in an ``@app.on_event("startup")`` hook."""
    return b"on_event" in data and (b"transformers" in data or _mentions_vllm_engine(data, path))


@dataclass(frozen=True)
class _Condition:
    codes: frozenset[str]
    holds: Callable[[bytes, Path], bool]


_LAUNCH_CODES = frozenset({"VLL201", "VLL202", "VLL203", "VLL204", "VLL205", "VLL206", "VLL401", "VLL402", "VLL403", "VLL404"})
_CONDITIONS = (
    _Condition(frozenset({"VLL101", "VLL102", "VLL103", "VLL104"}), _serving_in_handler),
    _Condition(frozenset({"VLL103"}), _offline_llm_in_server),
    _Condition(frozenset({"VLL105"}), _multi_worker),
    _Condition(_LAUNCH_CODES | {"VLL303"}, _engine_launch),
    _Condition(frozenset({"VLL501"}), _legacy_engine_import),
    _Condition(frozenset({"VLL502"}), _fastapi_tuple_return),
    _Condition(frozenset({"VLL503"}), _startup_hook),
)
_SAMPLING_CODES = frozenset({"VLL301", "VLL302", "VLL303"})


def may_match(data: bytes, path: Path, enabled: frozenset[str], api_loader: ApiLoader) -> bool:
    # First on the raw bytes (fast, rules out most files), then once more on the code alone:
    # prose in docstrings and comments ("import vllm is called", "see the deployment") is not code.
    return _may_match(data, data, path, enabled, api_loader) and _may_match(
        _code_only(data), data, path, enabled, api_loader
    )


def _may_match(code: bytes, raw: bytes, path: Path, enabled: frozenset[str], api_loader: ApiLoader) -> bool:
    for condition in _CONDITIONS:
        if condition.codes & enabled and condition.holds(code, path):
            return True
    if _LAUNCH_CODES & enabled and _launch_in_command_line(raw):
        return True
    if _SAMPLING_CODES & enabled and _SAMPLING.may_be_called(code):
        if not _sampling_calls_fine(code, api_loader()):
            return True
    if "VLL303" in enabled and b"from_engine_args" in code:
        # VLL303 on attributes of engines built by ``from_engine_args`` (semantics.produced_by).
        if not _instance_reads_fine(code, _ENGINE_BINDING, _ENGINE_CLASSES, api_loader()):
            return True
    if "VLL303" in enabled and b"vllm" in code:
        return not _vllm_names_all_known(code, api_loader())
    return False


# Strings become one placeholder token (so brackets and quotes inside them cannot mislead the
# readers below); comments disappear. Leftmost-first matching keeps a "#" inside a string a string.
_STRING_OR_COMMENT = _re(
    rb"#[^\n]*|\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
)


def _code_only(data: bytes) -> bytes:
    return _STRING_OR_COMMENT.sub(lambda m: b"" if m.group(0).startswith(b"#") else b"S", data)


def code_only(data: bytes) -> bytes:
    """The file's bytes with every string one placeholder and no comments: code, not prose."""
    return _code_only(data)


# -- SamplingParams calls (python/rules/sampling.py, VLL303 on its instances) --------------------
_SAMPLING = _Callable(b"SamplingParams")
_KEYWORD = _re(rb"^\s*(\w+)\s*=(?!=)")
_OPEN, _CLOSE = b"([{", b")]}"


def _top_level_arguments(data: bytes, start: int) -> list[bytes] | None:
    """The arguments of the call whose ``(`` is at ``start``, split at top-level commas; None if unsure."""
    depth, index, piece_start, pieces = 0, start, start + 1, []
    end = min(len(data), start + 20_000)
    while index < end:
        byte = data[index]
        if byte in _OPEN:
            depth += 1
        elif byte in _CLOSE:
            depth -= 1
            if depth == 0:
                pieces.append(data[piece_start:index])
                return pieces
        elif byte == 0x2C and depth == 1:  # ","
            pieces.append(data[piece_start:index])
            piece_start = index + 1
        elif byte in b"\"'#\\":
            return None  # strings and comments can hide brackets: let the parser decide
        index += 1
    return None


def _sampling_calls_fine(data: bytes, api: VllmApi) -> bool:
    """True when no SamplingParams call can give VLL301/302, and no instance of one can give VLL303."""
    if _SAMPLING.aliased(data):
        return False
    known = api.sampling_params
    for match in _SAMPLING.calls(data):
        arguments = _top_level_arguments(data, match.end() - 1)
        if arguments is None:
            return False
        keywords = set()
        spread = False
        for argument in arguments:
            stripped = argument.strip()
            if stripped.startswith(b"*"):
                spread = True
                continue
            keyword = _KEYWORD.match(argument)
            if keyword:
                keywords.add(keyword.group(1).decode("ascii"))
        if keywords - known:
            return False  # VLL301
        if not spread and not keywords & {"max_tokens", "max_new_tokens"}:
            return False  # VLL302
    return _instance_reads_fine(data, _SAMPLING_BINDING, ("vllm.SamplingParams",), api)


class _Binding:
    """``name = [await] [x.]producer(`` (model.py records these as the name's bindings)."""

    _TARGET = _re(rb"^[ \t]*([\w.]+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:await[ \t]+)?(?:[\w.]+\.)?$")

    def __init__(self, producer: bytes) -> None:
        self._call = _re(producer + rb"[ \t]*\(")

    def names(self, code: bytes) -> Iterator[bytes | None]:
        """Each name bound to a produced object; None where the cheap reader cannot tell."""
        for match in self._call.finditer(code):
            line_start = code.rfind(b"\n", 0, match.start()) + 1
            before = code[line_start:match.start()]
            if b"=" not in before:
                continue  # not assigned: no name holds it
            target = self._TARGET.match(before)
            yield target.group(1) if target else None


_SAMPLING_BINDING = _Binding(b"SamplingParams")
_ENGINE_BINDING = _Binding(b"from_engine_args")
_ENGINE_CLASSES = ("vllm.AsyncLLMEngine", "vllm.LLMEngine")


_attribute_sets: dict[tuple[int, tuple[str, ...]], frozenset[str] | None] = {}


def _shared_attributes(api: VllmApi, classes: tuple[str, ...]) -> frozenset[str] | None:
    """The attributes every one of ``classes`` has (None when the snapshot lacks one of them)."""
    key = (id(api), classes)
    if key not in _attribute_sets:
        sets = [api.class_attributes(klass) for klass in classes]
        _attribute_sets[key] = None if any(s is None for s in sets) else frozenset.intersection(*sets)
    return _attribute_sets[key]


def _instance_reads_fine(code: bytes, binding: _Binding, classes: tuple[str, ...], api: VllmApi) -> bool:
    """Every ``name.attr`` read on a name bound to an instance of ``classes`` is an attribute all of them have."""
    attributes = _shared_attributes(api, classes)
    if attributes is None:
        return False
    for name in binding.names(code):
        if name is None:
            return False  # chained or unusual assignment: let the parser decide
        reads = re.compile(re.escape(name) + rb"[ \t]*\.[ \t]*(\w+)")
        for read in _word_matches(reads, code, allow_dot=False):
            if read.group(1).decode("ascii") not in attributes:
                return False
    return True


# -- VLL303 on imports and the names they bind (python/rules/api.py) -----------------------------
# ``from vllm.a import b [as c], (d, e)`` and ``import x, vllm.a.b [as c]``.
_FROM_IMPORT = _re(
    rb"from[ \t]+(vllm(?:[ \t]*\.[ \t]*\w+)*)[ \t]+import[ \t]+"
    rb"(\((?:[^)#]|#[^\n]*)*\)|[^\n;#]*(?:\\\r?\n[^\n;#]*)*)"
)
_IMPORT = _re(rb"import[ \t]+((?:[\w. \t]+,[ \t]*(?:\\\r?\n[ \t]*)?)*vllm\b[^\n;#]*)")
_IMPORT_ITEM = _re(rb"^\s*(\w+(?:\s*\.\s*\w+)*)(?:\s+as\s+(\w+))?\s*$")
_SPACE = _re(rb"\s+")
_COMMENT = _re(rb"#[^\n]*")


def _import_items(names: bytes) -> list[tuple[str, str | None]] | None:
    """``a as b, c`` -> [("a", "b"), ("c", None)]; None when the cheap reader does not understand it."""
    if names.startswith(b"("):
        names = names[1:-1]
    names = _COMMENT.sub(b"", names).replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    items = []
    for item in names.split(b","):
        if not item.strip() or item.strip() == b"*":
            continue
        match = _IMPORT_ITEM.match(item)
        if match is None:
            return None
        dotted = _SPACE.sub(b"", match.group(1)).decode("ascii", "replace")
        alias = match.group(2).decode("ascii", "replace") if match.group(2) else None
        items.append((dotted, alias))
    return items


class _Reader:
    """Answers "does vLLM have this dotted name?" once per name, across all files of a run."""

    def __init__(self, api: VllmApi) -> None:
        from vllm_lint.python.vllm_names import class_names, missing_in_path

        self._api = api
        self._missing_in_path = missing_in_path
        self._classes = class_names(api)
        self._known: dict[str, bool] = {}
        # Import statements already read, with the namespaces they bind (None: not understood or missing).
        self.statements: dict[object, tuple[tuple[str, str], ...] | None] = {}

    def known(self, dotted: str) -> bool:
        answer = self._known.get(dotted)
        if answer is None:
            answer = self._known[dotted] = self._missing_in_path(self._api, dotted) is None
        return answer

    def binds_namespace(self, dotted: str) -> bool:
        """Whether attribute reads on the name are checked too: a module, or one of the engine classes."""
        return dotted in self._api.modules or dotted in self._classes

    def from_import(self, module: bytes, names: bytes) -> tuple[tuple[str, str], ...] | None:
        key = (module, names)
        if key not in self.statements:
            self.statements[key] = self._read_from_import(module, names)
        return self.statements[key]

    def _read_from_import(self, raw_module: bytes, names: bytes) -> tuple[tuple[str, str], ...] | None:
        module = _SPACE.sub(b"", raw_module).decode("ascii", "replace")
        items = _import_items(names)
        if items is None or not self.known(module):
            return None
        bound = []
        for name, alias in items:
            dotted = f"{module}.{name}"
            if not self.known(dotted):
                return None
            if self.binds_namespace(dotted):
                bound.append((alias or name, dotted))
        return tuple(bound)

    def import_(self, names: bytes) -> tuple[tuple[str, str], ...] | None:
        if names not in self.statements:
            self.statements[names] = self._read_import(names)
        return self.statements[names]

    def _read_import(self, names: bytes) -> tuple[tuple[str, str], ...] | None:
        items = _import_items(names)
        if items is None:
            return None
        bound = []
        for name, alias in items:
            if name != "vllm" and not name.startswith("vllm."):
                continue
            if not self.known(name):
                return None
            # ``import vllm.a.b`` binds ``vllm``; ``import vllm.a.b as c`` binds ``c``.
            bound.append((alias, name) if alias else ("vllm", "vllm"))
        return tuple(bound)


_readers: dict[int, _Reader] = {}


def _reader(api: VllmApi) -> _Reader:
    reader = _readers.get(id(api))
    if reader is None:
        reader = _readers[id(api)] = _Reader(api)
    return reader


def _vllm_names_all_known(data: bytes, api: VllmApi) -> bool:
    reader = _reader(api)
    namespaces: dict[str, str] = {}  # local name -> the vLLM module or class it holds
    # findall, not finditer: these run over every import of every file, and per-match Python costs add up.
    for module, names in _FROM_IMPORT.findall(data):
        bound = reader.from_import(module, names)
        if bound is None:
            return False  # a missing name, or a statement the cheap reader does not understand
        namespaces.update(bound)
    for names in _IMPORT.findall(data):
        bound = reader.import_(names)
        if bound is None:
            return False
        namespaces.update(bound)
    return all(_reads_known(data, local, target, reader) for local, target in namespaces.items())


def _reads_known(data: bytes, local: str, target: str, reader: _Reader) -> bool:
    """Every ``local.a.b`` read in the file names something ``target`` has."""
    encoded = local.encode("ascii")
    if encoded + b"." not in data and encoded + b" ." not in data:
        return True
    reads = re.compile(re.escape(encoded) + rb"((?:[ \t]*\.[ \t]*\w+)+)")
    for match in _word_matches(reads, data, allow_dot=False):
        start = match.start()
        if start and data[start - 1] in b"\"'/":
            continue  # inside a string: a URL or a dotted name in prose, not an attribute read
        rest = _SPACE.sub(b"", match.group(1)).decode("ascii", "replace")
        if not reader.known(target + rest):
            return False
    return True
