"""Decide from the raw bytes whether a Python file could produce any finding.

Most files in a repository (and nearly every file of vLLM's own source, which
mentions ``vllm``, ``SamplingParams`` and ``pipeline`` everywhere) cannot
match. Proving that with substring tests and a few regular expressions costs
microseconds; parsing with LibCST costs milliseconds and importing LibCST
~170 ms.

Each rule declares its conditions beside its checker (``<family>_prefilter.py``
in ``vllm_lint.python.rules``, read through ``vllm_lint.registry``). A
``Condition`` is a *necessary* condition of the rule, derived from how the
checker decides, so the filter never skips a file the rule would report; when
the cheap reader meets something it does not understand it answers "may
match" and lets the parser decide. This module holds the readers several rules
share (request handlers, engine constructions, launches in command lines,
calls and the names bound to their results) and runs the enabled codes'
conditions, cheapest first.

Speed matters here more than anywhere. A substring test asks ``present`` (``prefilter_words``), which finds every
word the conditions ask about in one scan of the file, not one scan a word. Every expression starts with a literal
(``re`` then scans for it with a fast substring search) and word boundaries
are checked by hand afterwards, because a leading ``\\b`` or lookbehind makes
``re`` try every byte of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.prefilter_words import occurrences, present

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from vllm_lint.python.tree_facts import TreeFacts
    from vllm_lint.vllm_api import VllmApi

    from typing import TypeVar

    ApiLoader = Callable[[], VllmApi]
    T = TypeVar("T")


class FileBytes:
    """What a condition reads. ``code`` is the file's bytes on the first pass and, on the second, the same with
    strings blanked and comments dropped (prose in docstrings and comments is not code); ``raw`` is always the
    file's bytes (a command line is in a string). On the last pass, ``facts()``: its ``ast`` tree's."""

    __slots__ = ("code", "raw", "path", "_api_loader", "_facts")

    def __init__(self, code: bytes, raw: bytes, path: Path, api_loader: ApiLoader) -> None:
        self.code, self.raw, self.path, self._api_loader = code, raw, path, api_loader
        self._facts: TreeFacts | None = None

    def api(self) -> VllmApi:
        return self._api_loader()

    def facts(self) -> TreeFacts:
        if self._facts is None:
            self._facts = _tree_facts_of(self.raw)
            if self._facts is None:
                raise _Unparsable
        return self._facts


class _Unparsable(Exception):
    """``ast`` cannot parse the file: LibCST decides (and reports the syntax error)."""


class Condition:
    """A necessary condition of one or more rules: ``holds`` is True for every file they would report, and so is
    ``tree_holds`` (when given), asked only of files whose bytes passed, with ``FileBytes.facts()`` to read.

    ``cost`` orders the conditions of a run, cheapest first: 1 for substring and regular expression tests, 2 for
    those that read strings too, 3 and more for those that look names up in the vLLM API snapshot."""

    __slots__ = ("name", "holds", "cost", "tree_holds")

    def __init__(
        self, name: str, holds: Callable[[FileBytes], bool], cost: int = 1, tree_holds: Callable[[FileBytes], bool] | None = None
    ) -> None:
        self.name, self.holds, self.cost, self.tree_holds = name, holds, cost, tree_holds

    def __repr__(self) -> str:
        return f"Condition({self.name!r})"


def contains(*words: bytes) -> Condition:
    """The file's code holds every one of ``words``: the simplest necessary condition of a rule that reads them."""
    return Condition(" and ".join(repr(word) for word in words), lambda file: all(present(file.code, word) for word in words))


# The items of an ``import`` before the one a pattern looks for: ``a.b as c, d,``. Unambiguous (a name cannot
# hold a blank), so a long list costs one pass, not a backtracking search.
IMPORTED_ITEMS = rb"(?:\w+(?:[ \t]*\.[ \t]*\w+)*(?:[ \t]+as[ \t]+\w+)?[ \t]*,[ \t]*)*"

def words_of(names: tuple[bytes, ...]) -> bytes:
    """A pattern for any one of ``names`` as a whole word (no word character after it)."""
    return rb"(?:" + b"|".join(re.escape(name) for name in names) + rb")\b"


_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def word_matches(pattern: re.Pattern[bytes], data: bytes, allow_dot: bool = True) -> Iterator[re.Match[bytes]]:
    """Matches of ``pattern`` that start a word (not inside ``xLLM``; not ``.x`` unless ``allow_dot``)."""
    for match in pattern.finditer(data):
        start = match.start()
        if start == 0:
            yield match
            continue
        before = data[start - 1]
        if before not in _WORD_BYTES and (allow_dot or before != 0x2E):
            yield match


def has_word(pattern: re.Pattern[bytes], data: bytes) -> bool:
    return next(word_matches(pattern, data), None) is not None


def remembered(function: Callable[[bytes, Path], bool]) -> Callable[[bytes, Path], bool]:
    """Answer again for the same file without the work: several conditions ask the same question."""
    last: list[object] = [None, None, False]

    def remembered(data: bytes, path: Path) -> bool:
        if last[0] is data and last[1] is path:  # identity, and the reference keeps ``id`` from being reused
            return bool(last[2])
        last[:] = [data, path, function(data, path)]
        return bool(last[2])

    return remembered


def remembered_bytes(function: Callable[[bytes], T]) -> Callable[[bytes], T]:
    """``remembered`` for a question about the bytes alone (its answer a bool or anything else)."""
    last: list = [None, None]

    def remembered(data: bytes) -> T:
        if last[0] is not data:  # identity, and the reference keeps ``id`` from being reused
            last[:] = [data, function(data)]
        return last[1]

    return remembered


@remembered_bytes
def _tree_facts_of(raw: bytes) -> TreeFacts | None:
    """The facts of the file's tree, read once for the conditions of may_match and then handlers_in_tree."""
    from vllm_lint.python.tree_facts import tree_facts

    return tree_facts(raw)


# -- request handlers (python/handlers.py) ---------------------------------------------------------
# A route decorator ``@<expr>.<verb>(``, a registration call, a gRPC servicer, a class-based
# view, a Ray Serve deployment, Django's views.py, or the import of a framework found by its own names.
_ROUTE_DECORATOR = lazy_compile(
    rb"@[^\n]*\.[ \t]*(?:get|post|put|patch|delete|options|head|api_route|websocket|route|view)[ \t]*\("
)


def _route_decorator(data: bytes) -> bool:
    """A route decorator: one that starts its line (``a @ b.view(...)`` is a matrix product)."""
    for match in _ROUTE_DECORATOR.finditer(data):
        line_start = data.rfind(b"\n", 0, match.start()) + 1
        if not data[line_start:match.start()].strip(b" \t"):
            return True
    return False


# What handler_table.ROUTE_VERBS holds, written out: importing the table costs every run's start.
_ROUTE_VERBS = rb"get|post|put|patch|delete|options|head|trace|api_route|websocket|route|view"
# Each clue: a substring that gates it (one fast scan), then the expression that confirms it.
# No word boundary at the start: ``FooServicer``, ``APIView``, ``WebSocketRoute(`` all count.
_HANDLER_CLUES = (
    (b"add_", lazy_compile(rb"add_(?:api_route|api_websocket_route|route|websocket_route|url_rule|get|post|put|patch|delete|head|view)[ \t]*\(")),
    (b"Route", lazy_compile(rb"Route\b")),  # called, or imported under another name (``Route as R``)
    (b"Servicer", lazy_compile(rb"Servicer\b")),
    (b"View", lazy_compile(rb"View(?:Set)?\b")),
    # ``app.post("/chat")(chat)``, ``app.get(path)(self.chat)``, ``app.post("/")(partial(chat, x))``: a route
    # decorator called by hand on anything (python/handlers.py resolves its one argument; the tree stage reads it)
    (b")(", lazy_compile(rb"\.\s*(?:" + _ROUTE_VERBS + rb")\s*\((?:[^()]|\([^()]*\))*\)\s*\(")),
    # ``web.post("/chat", chat)`` (aiohttp), ``path("chat/", chat)`` (Django): handler_table.ROUTE_CONSTRUCTORS
    (b"web.", lazy_compile(rb"web\.(?:get|post|put|patch|delete|head|view|route)[ \t]*\(")),
    (b"django.urls", lazy_compile(rb"django\.urls")),
)
# Frameworks whose handlers are found only through their own names: importing one is necessary. Also those
# whose route constructors (handler_table.ROUTE_CONSTRUCTORS) may be called under names the clues above do not
# read (``from aiohttp import web as w; w.post("/", h)``, ``from django import urls; urls.path(...)``); starlette's
# and FastAPI's all end in "Route".
_FRAMEWORK_NAMES = (b"gradio", b"bentoml", b"litserve", b"litestar", b"modal", b"tornado", b"rest_framework", b"bottle",
                    b"aiohttp", b"django", b"falcon", b"chainlit")
_IMPORT_STATEMENT = lazy_compile(rb"(?:^|;)[ \t]*(?:from[ \t]+|import[ \t]+" + IMPORTED_ITEMS + rb")$")


def _imports_a_framework(data: bytes) -> bool:
    """``import gradio as gr``, ``from bentoml import ...``, ``import os,modal``, continued with a backslash: a
    statement that imports one of them (the name as a word, after ``from`` or in an ``import`` list)."""
    if not may_import_one_of(data, _FRAMEWORK_NAMES):
        return False
    for name in _FRAMEWORK_NAMES:
        start = data.find(name)
        while start != -1:
            end = start + len(name)
            if (end >= len(data) or data[end] not in _WORD_BYTES) and (start == 0 or data[start - 1] not in _WORD_BYTES):
                if _IMPORT_STATEMENT.search(_statement_before(data, start)):
                    return True
            start = data.find(name, end)
    return False


# Where a statement may import a name: the word after ``from`` (a backslash-newline is a blank), and the text after
# each ``import`` to the end of its line and of the lines a backslash continues it onto. The "from" is looked ahead
# of, not consumed with its word, so that ``from from x`` cannot hide the ``from x`` inside it.
_FROM_WORD = lazy_compile(rb"from(?=(?:[ \t]|\\\r?\n)+(\w+))")
_IMPORTED_TEXT = lazy_compile(rb"import((?:[^\n\\]|\\\r?\n|\\)*)")


@remembered_bytes
def _import_index(data: bytes) -> tuple[frozenset[bytes], bytes]:
    return frozenset(_FROM_WORD.findall(data)), b"\n".join(_IMPORTED_TEXT.findall(data))


def may_import_one_of(data: bytes, names: tuple[bytes, ...]) -> bool:
    """Whether some statement of ``data`` may import one of ``names`` (a necessary condition of each import reader
    here: the name is the word after ``from``, or in the text after an ``import`` on its joined line). Two scans
    of the file for all the names, shared by the readers that ask of the same bytes, instead of one scan a name."""
    if not any(present(data, name) for name in names):  # each reading below finds a name in the bytes
        return False
    from_words, imported = _import_index(data)
    return any(name in from_words or name in imported for name in names)


def _statement_before(data: bytes, index: int) -> bytes:
    """The text from the start of the (backslash-continued) line that holds ``index`` up to it, on one line."""
    line_start = data.rfind(b"\n", 0, index) + 1
    while line_start >= 2:
        end = line_start - 1  # the line break ending the line above
        if data[end - 1] == 0x0D:
            end -= 1
        if end < 1 or data[end - 1] != 0x5C:  # no backslash: the statement starts here
            break
        line_start = data.rfind(b"\n", 0, end - 1) + 1
    return data[line_start:index].replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")


# Web app factories (semantics.APP_FACTORIES) come from importing a framework.
_WEB_FRAMEWORK_NAMES = (b"fastapi", b"starlette", b"flask", b"quart", b"sanic", b"aiohttp", b"litestar", b"django", b"ray",
                        b"gradio", b"bottle", b"tornado", b"grpc", b"falcon")
_WEB_IMPORTS = (
    lazy_compile(rb"from[ \t]+" + words_of(_WEB_FRAMEWORK_NAMES)),
    lazy_compile(rb"import[ \t]+" + IMPORTED_ITEMS + words_of(_WEB_FRAMEWORK_NAMES)),
)
# Model loads and model calls: vocabulary.is_model_load, VLL102's generate, VLL103's LLM methods.
_VLLM_ENGINE_WORD = lazy_compile(rb"LLM(?:Engine)?\b")
_RAY_DEPLOYMENT = lazy_compile(rb"@[^\n]*deployment\b")


def may_have_handlers(data: bytes, path: Path) -> bool:
    """Whether the module may define a request handler or a start-up hook (a necessary condition of
    handlers.py finding one), in its code, not its prose."""
    if not (_startup_event(data) or handler_clue(data, path)):
        return False
    code = code_only(data)
    return _startup_event(code) or handler_clue(code, path)


_ON_EVENT = lazy_compile(rb"@[^\n]*on_event[ \t]*\(")


def _startup_event(data: bytes) -> bool:
    return present(data, b"on_event") and _ON_EVENT.search(data) is not None


@remembered
def handler_clue(data: bytes, path: Path) -> bool:
    """A clue of a request handler in ``data`` (a file's bytes, or its code only)."""
    if present(data, b"@") and (_route_decorator(data) or (present(data, b"deployment") and _RAY_DEPLOYMENT.search(data))):
        return True
    for gate, pattern in _HANDLER_CLUES:
        if present(data, gate) and pattern.search(data):
            return True
    return (path.name == "views.py" and present(data, b"django")) or _imports_a_framework(data)


def handlers_in_tree(data: bytes, path: Path, api_loader: ApiLoader) -> bool:
    """The tree's reading of ``may_have_handlers`` (asked after it): a request handler or a start-up hook in the
    module's ``ast`` tree; True when ``ast`` cannot parse it."""
    file = FileBytes(data, data, path, api_loader)  # only its tree is read: no need of the code without strings
    try:
        return handler_in_tree(file) or startup_hook_in_tree(file)
    except _Unparsable:
        return True


def handler_in_tree(file: FileBytes) -> bool:
    """A shape python/handlers.py finds a request handler by (its direct handlers; the rest are reached from
    them), read off the tree by last names from the tables of python/handler_table.py: a decorator that names
    a handler decorator, or ``@<app>.<route verb>(...)`` where handlers.py may read a route (_may_route); a call
    that registers a handler or builds a route, or ``app.post("/x")(fn)``; a class whose base is a handler base or
    a gRPC servicer; a Falcon responder; Django's views.py. A name
    the tables give qualified (``aiohttp.web.get``) counts only where its package is imported, and a call of one
    only through an imported name: semantics qualifies a name only through the module's imports. Gradio's
    listeners count only where gradio is imported."""
    import ast

    from vllm_lint.python import handler_table as table
    from vllm_lint.python.tree_facts import final_name

    facts = file.facts()
    imported = facts.identifiers
    if file.path.name == "views.py" and not imported.isdisjoint(("django", "rest_framework")):
        return True
    gradio = table.GRADIO_LISTENERS if "gradio" in imported else frozenset()
    decorators = _imported_last_names((*table.FUNCTION_DECORATORS, *table.CLASS_DECORATORS), imported) | gradio
    if not facts.decorators.isdisjoint(facts.names_for(decorators)) or table.MODAL_CLASS_DECORATOR in facts.called_attribute_decorators:
        return True
    if any(verb in table.ROUTE_VERBS and _may_route(facts, owner, path) for verb, owner, path in facts.attribute_decorator_calls):
        return True
    if any(base.endswith("Servicer") for base in facts.bases) or not facts.bases.isdisjoint(
        facts.names_for(_imported_last_names(table.CLASS_BASES, imported))
    ):
        return True
    # Falcon serves the on_<verb> methods of any class of a module that imports it (no base, no decorator)
    if facts.imports_any(("falcon",)) and any(table.is_falcon_responder(name) for name in facts.bound_otherwise):
        return True
    # A constructor is named as semantics.callee qualifies it: its first part imported (TreeFacts.calls_of).
    if facts.calls_of(_imported_last_names((*table.ROUTE_CONSTRUCTORS, *table.CALLBACK_CONSTRUCTORS), imported)):
        return True
    registering = facts.names_for(gradio) | frozenset(table.REGISTRATION_METHODS)
    for call in facts.calls:
        func = call.func
        if final_name(func) in registering:
            return True
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr in table.ROUTE_VERBS:
            return True
    return False


def startup_hook_in_tree(file: FileBytes) -> bool:
    """A shape python/handlers.py finds a start-up hook by (_explicit_startup_hooks), read off the tree by last
    names: a function named as one, a start-up decorator, an app factory's ``lifespan=``/``on_startup=``,
    ``add_event_handler(...)`` or ``<x>.on_startup.append(...)``. (The methods of a serving class count only in a
    module handler_in_tree already lets through.)"""
    import ast

    from vllm_lint.python import handler_table as table

    facts = file.facts()
    if not facts.bound_otherwise.isdisjoint(table.STARTUP_FUNCTION_NAMES):
        return True
    decorators = table.STARTUP_DECORATOR_NAMES | facts.names_for(name.rpartition(".")[2] for name in table.STARTUP_DECORATORS)
    if not facts.decorators.isdisjoint(decorators):
        return True
    for call in facts.calls:
        func = call.func
        if any(keyword.arg in table.STARTUP_KEYWORDS for keyword in call.keywords):
            return True
        if isinstance(func, ast.Attribute) and (
            func.attr == "add_event_handler"
            or func.attr in ("append", "insert") and isinstance(func.value, ast.Attribute) and func.value.attr in table.STARTUP_LISTS
        ):
            return True
    return False


def _may_route(facts: TreeFacts, owner: str | None, path: str | None) -> bool:
    """Whether handlers.py may read ``@<owner...>.<verb>(path, ...)`` as a route (its _route_framework): the owner
    may hold an app (a name bound otherwise than by ``import``: semantics.app_framework follows calls and
    ``from`` imports only), a framework with route decorators is imported, or the first argument is a URL path.
    ``@torch._dynamo.config.patch(...)`` in a module that imports no web framework is none."""
    from vllm_lint.python import handler_table as table

    if owner is not None and owner in facts.bound_otherwise:
        return True
    if path is not None and path.startswith("/"):
        return True
    return any(framework.route_decorators and facts.imports_any(framework.modules) for framework in table.FRAMEWORKS)


def _imported_last_names(qualified: Iterable[str], imported: set[str]) -> frozenset[str]:
    """The last names of those of ``qualified`` whose package (first part) the module names in an import."""
    return frozenset(name.rpartition(".")[2] for name in qualified if name.partition(".")[0] in imported)


def may_be_web_app(data: bytes, path: Path) -> bool:
    if may_import_one_of(data, _WEB_FRAMEWORK_NAMES) and any(has_word(pattern, joined_lines(data)) for pattern in _WEB_IMPORTS):
        return True
    return handler_clue(data, path)


@remembered
def mentions_vllm_engine(data: bytes, path: Path) -> bool:
    if present(data, b"from_engine_args"):
        return True
    # "vLLM" is everywhere in prose; only when some "LLM" is not part of it is a closer look worth it.
    return occurrences(data, b"LLM") > occurrences(data, b"vLLM") and has_word(_VLLM_ENGINE_WORD, data)


class CallableName:
    """Where a vLLM class may be called: ``Name(``, an import alias ``Name as X``, or ``X = [mod.]Name``."""

    def __init__(self, name: bytes) -> None:
        self.name = name
        self._call = lazy_compile(name + rb"\s*(?:\(|\\\r?\n|as\s)")
        self._bare = lazy_compile(name + rb"[ \t]*(?:[#;\r\n)]|$)")
        self._last: tuple[bytes | None, bool] = (None, False)  # several rules ask about the same file

    def calls(self, data: bytes) -> Iterator[re.Match[bytes]]:
        """The places the name may be called (or imported under an alias), but not where a ``class`` or ``def``
        statement defines it (``class AsyncEngineArgs(EngineArgs):``, vLLM's own ``class SamplingParams(...)``)."""
        return (match for match in word_matches(self._call, data) if not _defined_at(data, match.start()))

    def may_be_called(self, data: bytes) -> bool:
        if not present(data, self.name):
            return False
        if self._last[0] is not data:  # identity, and the reference keeps ``id`` from being reused
            self._last = (data, next(self.calls(data), None) is not None or self.aliased(data))
        return self._last[1]

    def aliased(self, data: bytes) -> bool:
        """``X = [mod.]Name`` (model.py follows such module-level aliases) or ``import ... Name as X``."""
        for match in word_matches(self._bare, data):
            # ``X = Name``, ``X = (\n    mod.Name\n)``: an ``=`` before it, brackets and line breaks between
            if _ASSIGNED_NAME.search(data, max(0, match.start() - 200), match.start()):
                return True
        return any(m.group(0)[-3:-1] == b"as" for m in self.calls(data))


_ASSIGNED_NAME = lazy_compile(rb"=(?:[\s(]|\\)*(?:[\w.]+\.)?$")


def _defined_at(data: bytes, start: int) -> bool:
    """Whether the name at ``start`` follows the keyword ``class`` or ``def`` and blanks: the statement that defines
    it, which calls nothing of that name."""
    end = start
    while end and data[end - 1] in b" \t":
        end -= 1
    if end == start:
        return False
    for keyword in (b"class", b"def"):
        keyword_start = end - len(keyword)
        if keyword_start >= 0 and data.startswith(keyword, keyword_start):
            return keyword_start == 0 or data[keyword_start - 1] not in _WORD_BYTES and data[keyword_start - 1] != 0x2E
    return False


SAMPLING_PARAMS = CallableName(b"SamplingParams")


# -- launches: the byte tests of the Python launch extractors, for the rules over the launch record -------
# Engine constructions (python/launches.py).
_ENGINES = (CallableName(b"LLM"), CallableName(b"EngineArgs"), CallableName(b"AsyncEngineArgs"))
# Launches in subprocess lists (python/command_lines.py): ``subprocess.run(["vllm", "serve", ...])``,
# ``"vllm serve ..."``, ``"-m", "vllm.entrypoints.openai.api_server"``, wrapped (``"exec vllm serve"``,
# ``"docker run ... vllm/vllm-openai"``), ``-m vllm.X`` for a module vLLM lacks (VLL303). Between two items of a
# command list anything that separates tokens may stand (spaces, line breaks, commas, comments, a string
# prefix): the items may sit on one line or one per line, in either quotes.
# Within one string, words are apart by blanks (a backslash-newline in a string continues it). A comment runs to
# its line's end, newline included: ``#[^\n]*`` alone could end at any "#" of the comment and start another there,
# and a line like ``"vllm",  # # # # ...`` then costs ``re`` two tries per "#" (16 of them took 20 s).
_BETWEEN_ITEMS = rb"[\"'](?:[\s,]|#[^\n]*\n)*[fFrRbBuU]{0,2}[\"']"
_BETWEEN_WORDS = rb"(?:[ \t]|\\\r?\n)+"
# ``["']vllm`` then, between items or words, ``serve``: matched from the literal ``vllm`` (the quote before it is
# checked by hand, see _quoted_vllm_serve), since a pattern that starts with a set of bytes makes ``re`` try each byte.
_VLLM_THEN_SERVE = lazy_compile(rb"vllm(?:" + _BETWEEN_ITEMS + rb"|" + _BETWEEN_WORDS + rb")serve\b")
_VLLM_SERVE_WORDS = lazy_compile(rb"vllm" + _BETWEEN_WORDS + rb"serve\b")
# Each with a substring it needs (one fast scan before the expression).
_SERVE_COMMAND = (
    (b"api_server", lazy_compile(rb"vllm\.entrypoints\.(?:openai\.)?api_server")),
    (b"vllm/vllm", None),
    (b"vllm-openai", None),
    (b"-m", lazy_compile(rb"-m(?:" + _BETWEEN_ITEMS + rb"|" + _BETWEEN_WORDS + rb")?vllm\b")),
)


def _quoted_vllm_serve(raw: bytes) -> bool:
    """``["']vllm`` followed by ``_VLLM_THEN_SERVE``'s separator and ``serve``: one of the items or words
    ``vllm``, ``serve`` in a string."""
    for quoted in (b'"vllm', b"'vllm"):
        start = raw.find(quoted) if present(raw, quoted) else -1
        while start != -1:
            if _VLLM_THEN_SERVE.match(raw, start + 1):
                return True
            start = raw.find(quoted, start + 1)
    return False


def _serve_command(raw: bytes) -> bool:
    if present(raw, b"serve") and (_quoted_vllm_serve(raw) or _VLLM_SERVE_WORDS.search(raw) is not None):
        return True
    return any(present(raw, needed) and (pattern is None or pattern.search(raw) is not None) for needed, pattern in _SERVE_COMMAND)


# The same commands in the tree's strings: an image's name (in any word), or the words of a command line
# (cmdline/launches.py): ``serve`` as a word of its own, a ``-m`` module that starts a server or that vLLM lacks.
_IMAGE_WORDS = ("vllm/", "vllm-openai")
_COMMAND_WORD = re.compile(r"[\w./-]+")
# The callees python/command_lines.py reads (subprocess.*, os.exec*/posix_spawn*/system/popen,
# asyncio.create_subprocess_*), as written or imported (``from os import execvp``, ``o.system``).
_PROCESS_WORDS = (b"subprocess", b"exec", b"spawn", b"system", b"popen")
_PROCESS_IDENTIFIERS = frozenset({
    "subprocess", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "execl",
    "execlp", "execle", "execlpe", "create_subprocess_exec", "create_subprocess_shell", "getoutput", "getstatusoutput",
})


def _engine_constructed(file: FileBytes) -> bool:
    llm, engine_args, async_engine_args = _ENGINES
    if llm.may_be_called(file.code):
        return True
    # One scan for both: "AsyncEngineArgs" contains "EngineArgs".
    return present(file.code, b"EngineArgs") and (engine_args.may_be_called(file.code) or async_engine_args.may_be_called(file.code))


# What a constructor's callee may be named where the tree calls it: semantics.callee qualifies the callee's first
# part through the module's imports and aliases, and canonical() keeps these final names.
_ENGINE_CLASS_FINALS = ("LLM", "EngineArgs", "AsyncEngineArgs")


def _engine_constructed_in_tree(file: FileBytes) -> bool:
    """A call of one of the classes (``TreeFacts.calls_of``): python/launches.py reads a construction only where
    semantics.callee names the class."""
    return bool(file.facts().calls_of(_ENGINE_CLASS_FINALS))


def _launch_in_command_line(file: FileBytes) -> bool:
    """The command is in strings, so raw bytes; the callee is code."""
    raw = file.raw
    return (
        present(raw, b"vllm")
        and any(present(file.code, word) for word in _PROCESS_WORDS)
        and _serve_command(raw)
        and any(_whole_word(file.code, name) for name in _PROCESS_NAMES)
    )


# _launch_in_tree's callees as the words of the code they are (a name, an attribute, an imported name or module
# part): "exec" and "system" are also parts of other words ("execute", "filesystem").
_PROCESS_NAMES = tuple(sorted(name.encode("ascii") for name in _PROCESS_IDENTIFIERS))


def _whole_word(data: bytes, word: bytes) -> bool:
    """``word`` in ``data`` with no word character either side (a byte of a non-ASCII letter counts as none)."""
    if not present(data, word):
        return False
    start = data.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or data[start - 1] not in _WORD_BYTES) and (end >= len(data) or data[end] not in _WORD_BYTES):
            return True
        start = data.find(word, end)
    return False


def _launch_in_tree(file: FileBytes) -> bool:
    """A process-starting callee is named, a string names vLLM, and the strings hold a vLLM image or a word of
    a command that launches it (the same or another item of the list)."""
    facts = file.facts()
    if _PROCESS_IDENTIFIERS.isdisjoint(facts.identifiers) or not facts.any_string_has(("vllm",)):
        return False
    return facts.any_string_has(_IMAGE_WORDS) or any(
        _launching_word(word, file) for text in facts.strings for word in _COMMAND_WORD.findall(text)
    )


def _launching_word(word: str, file: FileBytes) -> bool:
    """``serve`` (``vllm serve``, ``... cli.main serve``), or the module of ``-m MODULE``/``-mMODULE`` that the
    command-line extractor reads as a launch: the API server, the CLI, or a vLLM module the snapshot lacks."""
    if word == "serve":
        return True
    module = word[2:] if word.startswith("-m") else word
    if module != "vllm" and not module.startswith("vllm."):
        return False
    from vllm_lint.cmdline.launches import API_SERVER_MODULE, CLI_MODULE, unknown_vllm_module

    return module in (API_SERVER_MODULE, CLI_MODULE) or unknown_vllm_module(module, file.api().modules)


ENGINE_CONSTRUCTION = Condition(
    "a vLLM engine (LLM, EngineArgs, AsyncEngineArgs) is constructed", _engine_constructed, tree_holds=_engine_constructed_in_tree
)
COMMAND_LINE_LAUNCH = Condition("a vLLM command line is started", _launch_in_command_line, cost=2, tree_holds=_launch_in_tree)


# An import of a client library (python/llm_clients.py): ``import openai``, ``from httpx import Client``.
_CLIENT_LIBRARIES = (b"openai", b"anthropic", b"huggingface_hub", b"litellm", b"httpx", b"aiohttp")
_CLIENT_IMPORTS = (
    lazy_compile(rb"from[ \t]+" + words_of(_CLIENT_LIBRARIES)),
    lazy_compile(rb"import[ \t]+" + IMPORTED_ITEMS + words_of(_CLIENT_LIBRARIES)),
)


@remembered_bytes
def imports_client_library(code: bytes) -> bool:
    if not may_import_one_of(code, _CLIENT_LIBRARIES):  # each pattern needs one
        return False
    code = joined_lines(code)
    return any(has_word(pattern, code) for pattern in _CLIENT_IMPORTS)


def joined_lines(code: bytes) -> bytes:
    """``code`` with each backslash-continued line joined to the next: a statement on one line, as the
    import patterns read it (one pattern with the continuation in it would backtrack on every line)."""
    if b"\\\n" not in code and b"\\\r\n" not in code:
        return code
    return code.replace(b"\\\r\n", b"  ").replace(b"\\\n", b" ")


# -- calls and what their results are bound to ---------------------------------------------------
OPEN, CLOSE = b"([{", b")]}"


def top_level_arguments(data: bytes, start: int) -> list[bytes] | None:
    """The arguments of the call whose ``(`` is at ``start``, split at top-level commas; None if unsure."""
    depth, index, piece_start, pieces = 0, start, start + 1, []
    end = min(len(data), start + 20_000)
    while index < end:
        byte = data[index]
        if byte in OPEN:
            depth += 1
        elif byte in CLOSE:
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


class Binding:
    """``name = [await] [x.]producer(`` (model.py records these as the name's bindings)."""

    _TARGET = lazy_compile(rb"^[ \t]*([\w.]+)[ \t]*(?::[^=\n]*)?=[ \t]*(?:await[ \t]+)?(?:[\w.]+\.)?$")

    def __init__(self, producer: bytes) -> None:
        self._call = lazy_compile(producer + rb"[ \t]*\(")

    def names(self, code: bytes) -> Iterator[bytes | None]:
        """Each name bound to a produced object; None where the cheap reader cannot tell."""
        for match in self._call.finditer(code):
            line_start = code.rfind(b"\n", 0, match.start()) + 1
            before = code[line_start:match.start()]
            if b"=" not in before:
                if not before.strip(b" \t([{"):
                    yield None  # the call starts its line: an assignment on the lines above may bind it
                continue  # not assigned: no name holds it
            target = self._TARGET.match(before)
            yield target.group(1) if target else None


_attribute_sets: dict[tuple[int, tuple[str, ...]], frozenset[str] | None] = {}


def shared_attributes(api: VllmApi, classes: tuple[str, ...]) -> frozenset[str] | None:
    """The attributes every one of ``classes`` has (None when the snapshot lacks one of them)."""
    key = (id(api), classes)
    if key not in _attribute_sets:
        sets = [api.class_attributes(klass) for klass in classes]
        known = [s for s in sets if s is not None]
        _attribute_sets[key] = frozenset.intersection(*known) if len(known) == len(sets) else None
    return _attribute_sets[key]


def instance_reads_fine(code: bytes, binding: Binding, classes: tuple[str, ...], api: VllmApi) -> bool:
    """Every ``name.attr`` read on a name bound to an instance of ``classes`` is an attribute all of them have."""
    attributes = shared_attributes(api, classes)
    if attributes is None:
        return False
    for name in binding.names(code):
        if name is None:
            return False  # chained or unusual assignment: let the parser decide
        reads = re.compile(re.escape(name) + rb"[ \t]*\.[ \t]*(\w+)")
        for read in word_matches(reads, code, allow_dot=False):
            if read.group(1).decode("ascii") not in attributes:
                return False
    return True


# -- running the enabled codes' conditions ---------------------------------------------------------
_UNDECLARED = Condition("no pre-filter declared: parse every file", lambda file: True, cost=0)
# The condition of a rule decided on a file's noqa comments, after its other rules: it runs on their findings
# whatever the pre-filter said of the file, and lets no file through to the parse on its own.
AFTER_THE_LINT = Condition("decided on the noqa comments after the other rules: lets no file through", lambda file: False, cost=0)


@lru_cache(maxsize=16)
def conditions_of(enabled: frozenset[str]) -> tuple[Condition, ...]:
    """The enabled codes' conditions, each once, cheapest first. A rule over the launch record gets the launch
    extractors' tests; a code with no declaration (a test says there is none) gets every file."""
    from vllm_lint.registry import LAUNCH, prefilter_table
    from vllm_lint.rulebook import PARSE_ERROR_CODE

    table = prefilter_table()
    found: dict[Condition, None] = {}
    for code in sorted(enabled - {PARSE_ERROR_CODE}):
        for condition in table.get(code, (_UNDECLARED,)):
            if condition is LAUNCH:
                found.update(dict.fromkeys((ENGINE_CONSTRUCTION, COMMAND_LINE_LAUNCH)))
            elif isinstance(condition, Condition):
                found[condition] = None
            else:
                raise TypeError(f"{code}: a pre-filter condition is a Condition or LAUNCH, not {condition!r}")
    return tuple(sorted(found, key=lambda condition: condition.cost))


@lru_cache(maxsize=16)
def _tests(enabled: frozenset[str]) -> tuple[tuple[Callable[[FileBytes], bool], Callable[[FileBytes], bool] | None], ...]:
    return tuple((condition.holds, condition.tree_holds) for condition in conditions_of(enabled))


def may_match(data: bytes, path: Path, enabled: frozenset[str], api_loader: ApiLoader) -> bool:
    tests = _tests(enabled)
    # First on the raw bytes (fast, rules out most files), then once more on the code alone:
    # prose in docstrings and comments ("import vllm is called", "see the deployment") is not code.
    first = FileBytes(data, data, path, api_loader)
    if not any(holds(first) for holds, _ in tests):
        return False
    from vllm_lint.python.focus import focused_bytes

    data = focused_bytes(data) or data  # a big module: what LibCST would parse of it
    file = FileBytes(code_only(data), data, path, api_loader)
    # A condition with a reading of the tree lets the file pass only if that holds too; the tree is read (an
    # ``ast`` parse) only when no condition without one holds already.
    tree_tests = []
    for holds, tree_holds in tests:
        if holds(file):
            if tree_holds is None:
                return True
            tree_tests.append(tree_holds)
    try:
        return any(tree_holds(file) for tree_holds in tree_tests)
    except _Unparsable:
        return True


# Strings become one placeholder token (so brackets and quotes inside them cannot mislead the
# readers below); comments disappear. Leftmost-first matching keeps a "#" inside a string a string.
_STRING_OR_COMMENT = lazy_compile(
    rb"#[^\n]*|\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
)


@remembered_bytes  # the second pass and several conditions ask for the same file's code
def code_only(data: bytes) -> bytes:
    """The file's bytes with every string one placeholder and no comments: code, not prose."""
    return _STRING_OR_COMMENT.sub(lambda m: b"" if m.group(0).startswith(b"#") else b"S", data)
