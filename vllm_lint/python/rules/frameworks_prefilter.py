"""When VLL502 and VLL503 (frameworks.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.prefilter import (
    CLOSE,
    OPEN,
    Condition,
    FileBytes,
    handler_clue,
    handler_in_tree,
    has_word,
    mentions_vllm_engine,
    present,
    top_level_arguments,
    word_matches,
)

_RETURN = lazy_compile(rb"return[ \t]")


def _returns_a_tuple(code: bytes) -> bool:
    """A ``return a, b`` or ``return (a, b)`` statement somewhere (strings already blanked)."""
    for match in word_matches(_RETURN, code, allow_dot=False):
        index = match.end()
        while index < len(code) and code[index] in b" \t":
            index += 1
        if index < len(code) and code[index] == 0x28:  # "("
            arguments = top_level_arguments(code, index)
            if arguments is None or len(arguments) > 1:
                return True
        depth = 0
        while index < len(code):
            byte = code[index]
            if byte in OPEN:
                depth += 1
            elif byte in CLOSE:
                depth -= 1
            elif byte == 0x2C and depth <= 0:  # ","
                return True
            elif byte in b"\n;" and depth <= 0 and code[index - 1] != 0x5C:  # end of statement
                break
            index += 1
    return False


def _fastapi_handler_returns_tuple(file: FileBytes) -> bool:
    code = file.code
    return present(code, b"fastapi") and present(code, b"return") and handler_clue(code, file.path) and _returns_a_tuple(code)


def _returns_a_pair_in_tree(file: FileBytes) -> bool:
    """VLL502 reads only ``return`` statements whose value is a tuple of two elements (``return body, 503``), in
    functions registered as request handlers."""
    return file.facts().registrable_function_returns_pair() and handler_in_tree(file)


# The decorator VLL503 reads is ``<app>.on_event(...)``: on_event is a whole name there, not a part of one
# (``projection_events`` holds it too).
_ON_EVENT_NAME = lazy_compile(rb"on_event\b")


def _model_load_in_startup_hook(file: FileBytes) -> bool:
    code = file.code
    return (
        present(code, b"on_event")
        and (present(code, b"transformers") or mentions_vllm_engine(code, file.path))
        and has_word(_ON_EVENT_NAME, code)
    )


PREFILTER = {
    "VLL502": (Condition("a FastAPI handler returns a tuple", _fastapi_handler_returns_tuple, tree_holds=_returns_a_pair_in_tree),),
    "VLL503": (Condition("an on_event hook and a model", _model_load_in_startup_hook),),
}
