"""A read-only traversal of a LibCST tree, several times faster than ``module.visit``.

``CSTNode.visit`` is built for transformers: it rebuilds (and re-validates)
every node on the way back up, even when nothing changed, and looks up the
``visit_<Class>`` method by name for each node. The module model only reads, so
this walker calls the same ``visit_``/``leave_`` methods, in the same order
(LibCST's own child order, learned from ``_visit_and_replace_children`` once per
node shape), without rebuilding anything. Whitespace and comment nodes are
skipped: no rule reads them, and they are a third of a typical tree.
"""

from __future__ import annotations

from collections import abc
from collections.abc import Callable
from dataclasses import fields
from typing import Literal, Union, get_args, get_origin

import libcst as cst
from libcst import MaybeSentinel

_TRIVIA = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
)
_Handlers = tuple[Callable[[cst.CSTNode], object] | None, Callable[[cst.CSTNode], object] | None]


class _Recorder(cst.CSTVisitor):
    """Records a node's direct children in the order LibCST visits them."""

    def __init__(self) -> None:
        super().__init__()
        self.children: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.children.append(node)
        return False


# class -> names of its fields that may hold child nodes, in declaration order
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
# (class, the child fields present) -> those fields in LibCST's visiting order
_ORDERS: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}

# Both are the same in every process with this LibCST: kept in the user's cache (usercache.py), they are learned
# once, not again by every parser process (~2 ms of its first file). Classes are kept by module and name.
_LEARNED_STORE = f"walk-orders-libcst-{cst.LIBCST_VERSION}"
_learned_loaded = False


def _load_learned() -> None:
    global _learned_loaded
    _learned_loaded = True
    from vllm_lint.usercache import store

    kept = store(_LEARNED_STORE).get("learned")
    if not (isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], dict) and isinstance(kept[1], dict)):
        return
    classes = {(cls.__module__, cls.__qualname__): cls for cls in _node_classes()}
    for key, names in kept[0].items():
        cls = classes.get(key)
        if cls is not None and all(name in getattr(cls, "__dataclass_fields__", ()) for name in names):
            _CHILD_FIELDS.setdefault(cls, names)
    for (module, name, present), order in kept[1].items():
        cls = classes.get((module, name))
        if cls is not None and sorted(order) == sorted(present):
            _ORDERS.setdefault((cls, present), order)


def _save_learned() -> None:
    from vllm_lint.usercache import store

    kept = store(_LEARNED_STORE)
    kept.put("learned", (
        {(cls.__module__, cls.__qualname__): names for cls, names in _CHILD_FIELDS.items()},
        {(cls.__module__, cls.__qualname__, present): order for (cls, present), order in _ORDERS.items()},
    ))
    kept.save()


def _node_classes() -> list[type]:
    found, stack = [], [cst.CSTNode]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in fields(cls) if not _never_walked(f.type))
    return names


def _never_walked(declared: object) -> bool:
    """Whether a field's declared type admits only trivia, strings, None and MaybeSentinel: values the walk never
    visits, so it need not look at them (a node's whitespace fields are half its fields). Anything else, a
    forward reference included, is looked at."""
    if declared is str or declared is type(None) or declared is MaybeSentinel:
        return True
    if isinstance(declared, type):
        return issubclass(declared, _TRIVIA)
    origin = get_origin(declared)
    if origin is Literal:
        return all(isinstance(value, str) for value in get_args(declared))
    if origin is Union or origin is abc.Sequence:
        return all(_never_walked(argument) for argument in get_args(declared))
    return False


# What a value of a class is to the walk, worked out once per class. isinstance against CSTNode and the
# trivia classes goes through ABCMeta.__instancecheck__, a Python call each time (tens of thousands per
# file, a third of a walk), and the first "no" for a class scans all ~300 subclasses of CSTNode. LibCST's
# node classes are real subclasses (none is registered), so the class's MRO answers the same.
_NODE, _TRIVIUM, _OTHER = 1, 2, 3
_KINDS: dict[type, int] = {}


def _kind(cls: type) -> int:
    kind = _KINDS.get(cls)
    if kind is None:
        mro = cls.__mro__
        if cst.CSTNode in mro:
            kind = _TRIVIUM if any(trivium in mro for trivium in _TRIVIA) else _NODE
        else:
            kind = _OTHER
        _KINDS[cls] = kind
    return kind


def _present(node: cst.CSTNode) -> tuple[str, ...]:
    present = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        kind = _KINDS.get(type(value)) or _kind(type(value))
        if kind == _NODE:
            present.append(name)
        elif kind == _OTHER and isinstance(value, (list, tuple)) and value and _kind(type(value[0])) != _OTHER:
            present.append(name)
    return tuple(present)


def _learn(node: cst.CSTNode, present: tuple[str, ...]) -> tuple[str, ...]:
    recorder = _Recorder()
    node._visit_and_replace_children(recorder)
    owner: dict[int, str] = {}
    for name in present:
        value = getattr(node, name)
        for child in value if isinstance(value, (list, tuple)) else (value,):
            owner[id(child)] = name
    order: list[str] = []
    for child in recorder.children:
        field = owner.get(id(child))
        if field is not None and field not in order:
            order.append(field)
    # A field LibCST did not visit (should not happen) is still walked, last.
    order += [name for name in present if name not in order]
    return tuple(order)


def walk(root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    if not _learned_loaded:
        _load_learned()
    known = len(_ORDERS) + len(_CHILD_FIELDS)
    handlers: dict[type, _Handlers] = {}

    # A visitor that overrides on_visit/on_leave gets those called, like CSTNode.visit does;
    # otherwise the visit_<Class>/leave_<Class> lookup is done once per class, not once per node.
    generic = type(visitor).on_visit is not cst.CSTVisitor.on_visit or type(visitor).on_leave is not cst.CSTVisitor.on_leave

    def handlers_for(cls: type) -> _Handlers:
        found = handlers.get(cls)
        if found is None:
            name = cls.__name__
            if generic:
                found = (visitor.on_visit, visitor.on_leave)
            else:
                found = (getattr(visitor, f"visit_{name}", None), getattr(visitor, f"leave_{name}", None))
            handlers[cls] = found
        return found

    def visit(node: cst.CSTNode) -> None:
        cls = type(node)
        on_visit, on_leave = handlers_for(cls)
        if on_visit is None or on_visit(node) is not False:
            present = _present(node)
            order = _ORDERS.get((cls, present))
            if order is None:
                order = _ORDERS[(cls, present)] = _learn(node, present)
            for name in order:
                value = getattr(node, name)
                if isinstance(value, (list, tuple)):
                    for child in value:
                        if (_KINDS.get(type(child)) or _kind(type(child))) != _TRIVIUM:
                            visit(child)
                else:
                    visit(value)
        if on_leave is not None:
            on_leave(node)

    visit(root)
    if len(_ORDERS) + len(_CHILD_FIELDS) != known:
        _save_learned()

