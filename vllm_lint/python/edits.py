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
        # so the closing layout); the old last one takes its predecessor's comma,
        # keeping its own end-of-line comment (the new line has none).
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
            between = _keeping_comment(args[-2].comma, last.comma.whitespace_after)
            args[-1] = last.with_changes(comma=between)
            args.append(new_keyword(name, value_code, last.comma.with_changes(whitespace_after=_without_comment(last.comma.whitespace_after))))
            return call.with_changes(args=args)
        elif _multiline(last.comma):
            between = cst.Comma(whitespace_after=call.whitespace_before_args)
        else:
            between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args[-1] = last.with_changes(comma=between)
        args.append(new_keyword(name, value_code, last.comma))
    else:
        if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
            between = _keeping_comment(args[-2].comma, last.whitespace_after_arg)
            if isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace):
                # ``last  # comment`` then ``)`` on its own line: the comment stays on the last one's line.
                args[-1] = last.with_changes(comma=between, whitespace_after_arg=_NO_SPACE)
                closing = _without_comment(last.whitespace_after_arg)
                args.append(new_keyword(name, value_code).with_changes(whitespace_after_arg=closing))
                return call.with_changes(args=args)
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


def _keeping_comment(comma: cst.Comma, own_line_end: cst.BaseParenthesizableWhitespace) -> cst.Comma:
    """``comma`` (a line break and the next line's indentation, as between two arguments) ending the line
    with the comment ``own_line_end`` carries, not its own: each argument keeps its comment."""
    if not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return comma
    first_line = own_line_end.first_line if isinstance(own_line_end, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
    return comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=first_line))


def _without_comment(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """``whitespace`` without the comment that ends its first line; the comment lines below it stay."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.with_changes(first_line=cst.TrailingWhitespace())
    return whitespace


def _multiline(comma: cst.Comma) -> bool:
    return isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)


def add_keyword(call: cst.Call, name: str, value_code: str) -> NodeEdit:
    from vllm_lint.python.context import NodeEdit

    return NodeEdit(call, with_keyword(call, name, value_code))
