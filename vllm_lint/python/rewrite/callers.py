"""Every call of a helper the handlers use: a module-level function, or a method of a class the module builds
one object of (or of a class its framework instantiates, whose methods only ``self`` reaches).

Making a helper ``async def`` is safe only when each of its calls is known (each then gets ``await``), and a
helper's parameter is one string only when every call passes one: both read the calls found here. A use
that is not a call (``submit(helper, ...)``), a second object of the class, or the object handed elsewhere
refuses, since a call the rewrite cannot see could then get a coroutine.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import CallSite, ClassInfo, FunctionInfo
from vllm_lint.python.rewrite.facts import ModuleFacts, method_and_class
from vllm_lint.python.rewrite.names import Occurrence, attribute_occurrences, occurrences
from vllm_lint.python.rewrite.plan import Refusal
from vllm_lint.python.rewrite.served import served_class_kind
from vllm_lint.python.rewrite.shapes import compares_with_none, is_none, snippet

# Scopes inside a function in which an ``await`` would not run where the call ran.
_NESTED_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True, slots=True)
class HelperCall:
    """One call of a helper: ``generate_text(req.prompt)`` or ``generator.generate(req.prompt)``."""

    call: cst.Call
    site: CallSite
    parent: cst.CSTNode  # what the call's value goes into
    in_nested_scope: bool  # inside a lambda or a comprehension of its function
    is_method: bool  # the call's first argument is the method's second parameter (``self`` comes first)


@dataclass(frozen=True, slots=True)
class Instance:
    """``generator = Generator(...)``: the one object of a plain class that the module builds."""

    name: str
    call: cst.Call
    site: CallSite
    statement: cst.SimpleStatementLine
    uses: tuple[Occurrence, ...]  # every use of the variable, the binding included

    @property
    def construction(self) -> HelperCall:
        """``Generator(...)`` as a call of ``Generator.__init__`` (``self`` comes first)."""
        return HelperCall(self.call, self.site, self.statement.body[0], in_nested_scope=False, is_method=True)


class Callers(ModuleFacts):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._instances: dict[int, Instance] = {}

    def framework_owned(self, klass: ClassInfo) -> bool:
        """A class its framework instantiates (a deployment, a servicer, a class-based view): one of its
        methods is a registered handler or it is served by a decorator; nothing in the module calls it."""
        handlers = self.semantics.handlers
        for method in klass.methods.values():
            if served_class_kind(self.semantics, method) is not None:
                return True
            handler = handlers.get(method)
            if handler is not None and handler.direct:
                return True
        return False

    def instance(self, klass: ClassInfo) -> Instance:
        """The one object of ``klass`` the module builds, held in one variable used only for its attributes."""
        found = self._instances.get(id(klass.node))
        if found is not None:
            return found
        name = klass.name
        if klass.function is not None or klass.in_main_guard:
            raise Refusal(f"{name} is not defined at module level")
        built = []
        for o in occurrences(self.module, [name])[name]:
            call = o.parent
            if not (isinstance(call, cst.Call) and call.func is o.name):
                raise Refusal(
                    f"`{snippet(self.module, o.parent)}` uses {name} other than by building it; the rewrite must "
                    f"see the one {name} object and every call of its methods"
                )
            built.append(call)
        if len(built) != 1:
            raise Refusal(
                f"{name} is built {len(built)} times; the rewrite builds the engine where {name} builds the model, "
                f"so it needs exactly one {name}(...) in the module"
            )
        call = built[0]
        site = self.sites[id(call)]
        statement = site.statement
        if not (
            isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign) and statement.body[0].value is call
            and len(statement.body[0].targets) == 1 and isinstance(statement.body[0].targets[0].target, cst.Name)
        ):
            raise Refusal(
                f"`{snippet(self.module, statement)}` does not assign the {name} object to one plain variable; build "
                f"it once as `name = {name}(...)` at module level or in a start-up hook"
            )
        variable = statement.body[0].targets[0].target.value
        uses = occurrences(self.module, [variable])[variable]
        for o in uses:
            if not _plain_object_use(o, statement.body[0]):
                raise Refusal(
                    f"`{snippet(self.module, _expression_around(o))}` uses the {name} object other than by its attributes; the "
                    "rewrite must see every call of its methods"
                )
        found = self._instances[id(klass.node)] = Instance(variable, call, site, statement, tuple(uses))
        return found

    def calls_of(self, function: FunctionInfo) -> list[HelperCall]:
        """Every call of a helper; Refusal when it is used some other way, or its calls cannot all be seen."""
        if function.parent is not None:
            raise Refusal(f"{function.name}() is a nested function; only handlers and helpers defined at module or class level are rewritten")
        if not function.is_method:
            name = function.name
            found = occurrences(self.module, [name])[name]
            return [self._call(o, f"{name}()", is_method=False) for o in found]
        _, klass = method_and_class(function)
        method = function.name
        found = attribute_occurrences(klass.node, "self", method)
        if not self.framework_owned(klass):
            found += attribute_occurrences(self.module, self.instance(klass).name, method)
        return [self._call(o, f"{klass.name}.{method}()", is_method=True) for o in found]

    def _call(self, o: Occurrence, shown: str, is_method: bool) -> HelperCall:
        call = o.parent
        if not (isinstance(call, cst.Call) and call.func is o.name):
            raise Refusal(f"`{snippet(self.module, _expression_around(o))}` uses {shown} other than by calling it; the rewrite must see each of its calls")
        parents = o.parents[:-1]  # the call's own parents
        nested = False
        for parent in reversed(parents):
            if isinstance(parent, cst.FunctionDef):
                break
            nested = nested or isinstance(parent, _NESTED_SCOPES)
        return HelperCall(call, self.sites[id(call)], parents[-1], nested, is_method)


def _expression_around(o: Occurrence) -> cst.CSTNode:
    """The expression a use is part of, for a message: ``pool.submit(run, p)`` rather than the argument ``run,``."""
    for parent in reversed(o.parents):
        if isinstance(parent, cst.BaseExpression):
            return parent
    return o.parent


def _plain_object_use(o: Occurrence, binding: cst.Assign) -> bool:
    """The binding, ``global x``, ``x = None`` before start-up, ``x is None``, ``if x`` / ``not x``, or ``x.attr``."""
    parent = o.parent
    if isinstance(parent, cst.AssignTarget):
        assign = o.ancestor(2)
        return assign is binding or (isinstance(assign, cst.Assign) and is_none(assign.value))
    if isinstance(parent, cst.NameItem):
        return True
    if isinstance(parent, cst.Comparison) and compares_with_none(parent):
        return True
    if isinstance(parent, (cst.If, cst.While)) and parent.test is o.name:
        return True
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return True
    return isinstance(parent, cst.Attribute) and parent.value is o.name


def argument_for(call: HelperCall, function: FunctionInfo, param: cst.Param) -> tuple[bool, cst.BaseExpression | None]:
    """(known, the expression) the call passes for ``param``: (True, None) when it passes none (the
    parameter's default applies); (False, None) when it cannot be told (``*args``/``**kwargs``)."""
    if any(arg.star for arg in call.call.args):
        return False, None
    params = [*function.node.params.posonly_params, *function.node.params.params]
    if call.is_method:
        params = params[1:]
    for arg in call.call.args:
        if arg.keyword is not None and arg.keyword.value == param.name.value:
            return True, arg.value
    positional = [arg for arg in call.call.args if arg.keyword is None]
    index = next((i for i, p in enumerate(params) if p is param), None)
    if index is not None and index < len(positional):
        return True, positional[index].value
    return True, None
