"""When VLL303 and VLL501 (api.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

import re

from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.prefilter import (
    ENGINE_CONSTRUCTION,
    SAMPLING_PARAMS,
    Binding,
    Condition,
    FileBytes,
    shared_attributes,
    instance_reads_fine,
    present,
    word_matches,
)

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from vllm_lint.vllm_api import VllmApi

_LEGACY_ENGINE = (
    lazy_compile(rb"vllm[ \t]*\.[ \t]*engine[ \t]*\.[ \t]*(?:async_)?llm_engine\b"),
    lazy_compile(rb"from[ \t]+vllm[ \t]*\.[ \t]*engine[ \t]+import[^\n]*llm_engine\b"),
)


def _legacy_engine_import(file: FileBytes) -> bool:
    """``vllm.engine.(async_)llm_engine``, imported as a module or from."""
    return present(file.code, b"llm_engine") and any(pattern.search(file.code) for pattern in _LEGACY_ENGINE)


# -- VLL303 on attributes of SamplingParams and engine instances ------------------------------------
_SAMPLING_BINDING = Binding(b"SamplingParams")
_ENGINE_BINDING = Binding(b"from_engine_args")
_ENGINE_CLASSES = ("vllm.AsyncLLMEngine", "vllm.LLMEngine")


def _sampling_params_read_wrong(file: FileBytes) -> bool:
    code = file.code
    if not SAMPLING_PARAMS.may_be_called(code):
        return False
    return SAMPLING_PARAMS.aliased(code) or not instance_reads_fine(code, _SAMPLING_BINDING, ("vllm.SamplingParams",), file.api())


def _reads_fine_in_tree(file: FileBytes, bound: set[str] | None, classes: tuple[str, ...]) -> bool:
    attributes = shared_attributes(file.api(), classes)
    if bound is None or attributes is None:
        return False
    facts = file.facts()
    return all(facts.reads.get(name, frozenset()) <= attributes for name in bound)


def _sampling_params_read_wrong_in_tree(file: FileBytes) -> bool:
    facts = file.facts()
    if len(facts.names_for(("SamplingParams",))) > 1:
        return True  # aliased: the parser follows the alias
    return not _reads_fine_in_tree(file, facts.bound_to_calls({"SamplingParams"}), ("vllm.SamplingParams",))


# What semantics.canonical turns into vllm.AsyncLLMEngine or vllm.LLMEngine, by their last names.
_ENGINE_CLASS_NAMES = ("AsyncLLMEngine", "LLMEngine", "AsyncLLM")


def _engine_read_wrong_in_tree(file: FileBytes) -> bool:
    """Only ``<engine class>.from_engine_args`` makes an engine (``LLM.from_engine_args`` makes an LLM)."""
    facts = file.facts()
    bound = facts.bound_to_calls({"from_engine_args"}, facts.names_for(_ENGINE_CLASS_NAMES))
    return not _reads_fine_in_tree(file, bound, _ENGINE_CLASSES)


def _engine_read_wrong(file: FileBytes) -> bool:
    """Attributes of engines built by ``from_engine_args`` (semantics.produced_by)."""
    return present(file.code, b"from_engine_args") and not instance_reads_fine(file.code, _ENGINE_BINDING, _ENGINE_CLASSES, file.api())


# -- VLL303 on imports and the names they bind --------------------------------------------------------
# In brackets a comment runs to its line's end, newline included: a ")" in it closes nothing, and ``#[^\n]*`` alone
# could end at any "#" of the comment, which an unclosed list (``(a,  # # # ...``) makes ``re`` try both ways each.
_FROM_IMPORT = lazy_compile(
    rb"from(?:[ \t]|\\\r?\n)+(vllm(?:\s*\.\s*\w+)*)(?:[ \t]|\\\r?\n)+import(?:[ \t]|\\\r?\n)+"
    rb"(\((?:[^)#]|#[^\n]*\n)*\)|[^\n;#]*(?:\\\r?\n[^\n;#]*)*)"
)
# The items before ``vllm``: words split by blanks (or none), each blank run matched one way only: an item that
# could take or leave the blanks around its comma made a continued import list of 40 names take 2**40 steps
# (h2ogpt's src/gen.py).
_IMPORT = lazy_compile(
    rb"import[ \t]+((?:(?:[\w.]+(?:[ \t]+[\w.]+)*[ \t]*)?,[ \t]*(?:\\\r?\n[ \t]*)?)*vllm\b[^\n;#]*)"
)
_IMPORT_ITEM = lazy_compile(rb"^\s*(\w+(?:\s*\.\s*\w+)*)(?:\s+as\s+(\w+))?\s*$")
_SPACE = lazy_compile(rb"\s+")
_COMMENT = lazy_compile(rb"#[^\n]*")


def _import_items(names: bytes) -> list[tuple[str, str | None]] | None:
    """``a as b, c`` -> [("a", "b"), ("c", None)]; None when the cheap reader does not understand it."""
    if names.startswith(b"("):
        names = names[1:-1]
    if b"#" not in names and b"\\" not in names:
        simple = _simple_import_items(names)
        if simple is not None:
            return simple
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


def _is_word(word: bytes) -> bool:
    """``\\w+`` of a bytes expression: ASCII letters, digits and underscores."""
    return word.replace(b"_", b"a").isalnum()


def _simple_import_items(names: bytes) -> list[tuple[str, str | None]] | None:
    """``_import_items`` of the common statement, undotted names and ``as`` aliases split by blanks, without a regular
    expression per item; None for any other (the expressions read it)."""
    items: list[tuple[str, str | None]] = []
    for item in names.split(b","):
        words = item.split()
        if not words or words == [b"*"]:
            continue
        if len(words) == 1 and _is_word(words[0]):
            items.append((words[0].decode("ascii"), None))
        elif len(words) == 3 and words[1] == b"as" and _is_word(words[0]) and _is_word(words[2]):
            items.append((words[0].decode("ascii"), words[2].decode("ascii")))
        else:
            return None
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
    # \s: inside brackets an attribute read may run over lines
    reads = re.compile(re.escape(encoded) + rb"((?:\s*\.\s*\w+)+)")
    for match in word_matches(reads, data, allow_dot=False):
        start = match.start()
        if start and data[start - 1] in b"\"'/":
            continue  # inside a string: a URL or a dotted name in prose, not an attribute read
        rest = _SPACE.sub(b"", match.group(1)).decode("ascii", "replace")
        if not reader.known(target + rest):
            return False
    return True


def _vllm_name_missing(file: FileBytes) -> bool:
    return present(file.code, b"vllm") and not _vllm_names_all_known(file.code, file.api())


PREFILTER = {
    "VLL303": (
        # attributes of LLM, EngineArgs and AsyncEngineArgs instances
        ENGINE_CONSTRUCTION,
        Condition("an attribute of a SamplingParams vLLM lacks", _sampling_params_read_wrong, cost=3, tree_holds=_sampling_params_read_wrong_in_tree),
        Condition("an attribute of an engine vLLM lacks", _engine_read_wrong, cost=4, tree_holds=_engine_read_wrong_in_tree),
        Condition("a vLLM name the snapshot lacks", _vllm_name_missing, cost=5),
    ),
    "VLL501": (Condition("a legacy engine module imported", _legacy_engine_import),),
}
