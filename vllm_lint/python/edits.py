"""Small LibCST edits that keep the surrounding code's own layout.

A new keyword argument follows the call's style: on one line it is appended
after ``, ``; in a call laid out one argument per line it gets its own line with
the same indentation and trailing-comma habit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from vllm_lint.python.context import NodeEdit

_NO_SPACE = cst.SimpleWhitespace("")


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def new_keyword(name: str, value_code: str, comma: cst.Comma | cst.MaybeSentinel = cst.MaybeSentinel.DEFAULT) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=cst.parse_expression(value_code),
        equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
        comma=comma,
    )


def with_keyword(call: cst.Call, name: str, value_code: str) -> cst.Call:
    """``call`` with ``name=value`` appended, in the call's own layout."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_keyword(name, value_code)])
    last = args[-1]
    # Keywords must come before **kwargs; insert before the first ** argument.
    insert_at = next((i for i, a in enumerate(args) if a.star == "**"), len(args))
    if insert_at < len(args):
        anchor = args[insert_at]
        comma = anchor.comma if isinstance(anchor.comma, cst.Comma) and _multiline(anchor.comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        previous = args[insert_at - 1].comma if insert_at > 0 else None
        if isinstance(previous, cst.Comma):
            comma = previous
        args.insert(insert_at, new_keyword(name, value_code, comma))
        return call.with_changes(args=args)
    if isinstance(last.comma, cst.Comma):
        # Trailing-comma style: the new argument takes the last one's comma (and
        # so the closing layout); the old last one takes its predecessor's comma.
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
            between = args[-2].comma
        elif _multiline(last.comma):
            between = cst.Comma(whitespace_after=call.whitespace_before_args)
        else:
            between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args[-1] = last.with_changes(comma=between)
        args.append(new_keyword(name, value_code, last.comma))
    else:
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
            between = args[-2].comma
        else:
            between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        # The space before ``)`` belongs to the last argument: hand it to the new one.
        args[-1] = last.with_changes(comma=between, whitespace_after_arg=_NO_SPACE)
        args.append(new_keyword(name, value_code).with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def without_argument(call: cst.Call, doomed: cst.Arg) -> cst.Call:
    """``call`` without one argument; when it was the last, the new last one takes its comma and the
    space before ``)``, so a trailing-comma or one-line layout stays as it was."""
    args = [arg for arg in call.args if arg is not doomed]
    if args and call.args[-1] is doomed:
        args[-1] = args[-1].with_changes(comma=doomed.comma, whitespace_after_arg=doomed.whitespace_after_arg)
    return call.with_changes(args=args)


def _multiline(comma: cst.Comma) -> bool:
    return isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)


def add_keyword(call: cst.Call, name: str, value_code: str) -> NodeEdit:
    from vllm_lint.python.context import NodeEdit

    return NodeEdit(call, with_keyword(call, name, value_code))
