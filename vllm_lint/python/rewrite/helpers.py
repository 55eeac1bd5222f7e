"""Helpers between a FastAPI handler and the model: which become ``async def``, and which calls get ``await``.

A model call awaited in a helper makes the helper a coroutine function, so each of its calls must await it,
and the function holding each call becomes async in turn, up to the handlers. That is safe only when every
caller is a request handler the rewrite makes async, or another such helper: a coroutine handed to any other
code (a start-up hook, a worker, a script under ``__main__``) would never run. A sync framework's helpers
stay as they are: they submit to the bridge's thread like its handlers do.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.model import FunctionInfo, dotted_name
from vllm_lint.python.rewrite.callers import Callers, HelperCall
from vllm_lint.python.rewrite.calls import ModelCalls
from vllm_lint.python.rewrite.names import occurrences
from vllm_lint.python.rewrite.plan import AwaitedCall, CallMode, Refusal
from vllm_lint.python.rewrite.prompts import module_bindings, rebound_names
from vllm_lint.python.rewrite.script import script_block
from vllm_lint.python.rewrite.shapes import is_none, snippet, yields
from vllm_lint.python.walk import walk

# What a plain ``def`` may do in a worker thread but an ``async def`` must not.
_BLOCKING_CALLS = frozenset({"time.sleep", "os.system", "os.popen", "socket.create_connection"})
_BLOCKING_MODULES = ("requests.", "urllib.request.", "subprocess.", "httpx.Client", "sqlite3.", "psycopg2.", "pymysql.", "smtplib.")
_BLOCKING_BUILTINS = frozenset({"open", "input"})
_OFFLOAD_DEPTH = 4  # module functions followed, call by call, to a blocking call
_NESTED_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True, slots=True)
class AsyncChain:
    """The helpers the rewrite makes async, and the calls that await them."""
    helpers: tuple[cst.FunctionDef, ...]  # made async
    awaited: tuple[AwaitedCall, ...]
    handlers: tuple[FunctionInfo, ...]  # the registered handlers whose calls of a helper are awaited
    # ``if __name__ == "__main__":`` blocks that call a helper made async, as a demo: each runs as a coroutine
    # (script.py), with the helper's name
    scripts: tuple[tuple[cst.If, str], ...] = ()
    # ``loop = asyncio.get_running_loop()`` lines whose ``loop`` only the replaced executor calls read: unused after
    removed_lines: tuple[cst.SimpleStatementLine, ...] = ()


class AsyncHelpers(ModelCalls):
    def chain(self, functions: list[cst.FunctionDef], what: str) -> AsyncChain:
        """From the functions that await the engine: the helpers among them, their callers up to the handlers."""
        by_node = {id(f.node): f for f in self.model.functions}
        callers = Callers(self.ctx)
        pending = [f for node in functions if not self._registered(f := by_node[id(node)])]
        helpers: dict[int, FunctionInfo] = {}
        awaited: list[AwaitedCall] = []
        handlers: dict[int, FunctionInfo] = {}
        scripts: dict[int, tuple[cst.If, str]] = {}
        executors: dict[int, tuple[cst.FunctionDef, list[cst.Call]]] = {}
        while pending:
            helper = pending.pop()
            if id(helper.node) in helpers:
                continue
            helpers[id(helper.node)] = helper
            if helper.is_async:
                continue  # its callers await it already
            self.check_made_async(helper.node, f"{helper.name}()", "helper")
            if helper.node.decorators:
                shown = snippet(self.module, helper.node.decorators[0].decorator)
                raise Refusal(f"{helper.name}() is decorated with @{shown}, which would wrap the coroutine it becomes once async; remove the decorator or make {helper.name}() async by hand")
            for c in callers.calls_of(helper):
                caller = c.site.function
                shown = f"`{snippet(self.module, c.call)}`"
                script = script_block(self.module, c.site.statement) if caller is None and c.site.in_main_guard else None
                if script is not None and not c.in_nested_scope and not isinstance(c.parent, cst.Await):
                    awaited.append(AwaitedCall(c.call, _is_taken_in(c.parent, c.call)))
                    scripts[id(script)] = (script, helper.name)
                    continue
                if caller is None or c.site.in_main_guard:
                    where = "under `if __name__ == \"__main__\":`" if c.site.in_main_guard else "at module level"
                    raise Refusal(
                        f"{helper.name}() is also called {where} ({shown}), outside a request handler; as an async def it "
                        f"would hand that call a coroutine; call the model there another way, or await {helper.name}() in an async function"
                    )
                handler = self.semantics.handlers.get(caller)
                if handler is None:
                    raise Refusal(
                        f"{helper.name}() is also called from {caller.name}() ({shown}), which is not a request handler; as "
                        f"an async def {helper.name}() would hand it a coroutine; make {caller.name}() async and await it, or "
                        "give it a sync copy of the helper"
                    )
                executor = _executor_call(caller.node, c) if c.in_nested_scope else None
                if executor is not None:
                    awaited.append(AwaitedCall(c.call, False, executor))
                    executors.setdefault(id(caller.node), (caller.node, []))[1].append(executor)
                elif c.in_nested_scope:
                    raise Refusal(f"{shown} is inside a lambda or comprehension of {caller.name}(), where it could not be awaited in place")
                elif isinstance(c.parent, cst.Await):
                    raise Refusal(f"{shown} is awaited, but {helper.name}() returns no awaitable")
                else:
                    awaited.append(AwaitedCall(c.call, _is_taken_in(c.parent, c.call)))
                if self._registered(caller):
                    if self.mode_of(caller, what) is not CallMode.AWAITED:
                        raise Refusal(f"{caller.name}() calls {helper.name}() from a framework that cannot await it")
                    handlers[id(caller.node)] = caller
                else:
                    pending.append(caller)
        made_async = tuple(h.node for h in helpers.values() if not h.is_async)
        unused = [line for function, calls in executors.values() if (line := _unused_loop(function, calls)) is not None]
        return AsyncChain(made_async, tuple(awaited), tuple(handlers.values()), tuple(scripts.values()), tuple(unused))

    def check_bridged(self, functions: list[cst.FunctionDef]) -> None:
        """A sync helper that submits to the bridge must not run while the module is imported: vLLM's engine
        process imports the script again, and the bridge starts no engine in there."""
        by_node = {id(f.node): f for f in self.model.functions}
        callers = Callers(self.ctx)
        for helper in (f for node in functions if not self._registered(f := by_node[id(node)])):
            for c in callers.calls_of(helper):
                if c.site.function is None and not c.site.in_main_guard:
                    raise Refusal(
                        f"{helper.name}() is also called at module level (`{snippet(self.module, c.call)}`), as the module is "
                        "imported, where the engine's thread may have no engine (vLLM's engine process imports the script "
                        f"again); call {helper.name}() from a handler or under `if __name__ == \"__main__\":`"
                    )

    def _registered(self, function: FunctionInfo) -> bool:
        handler = self.semantics.handlers.get(function)
        return handler is not None and handler.direct

    def check_made_async(self, function: cst.FunctionDef, name: str, kind: str) -> None:
        """What an ``async def`` must not be: a generator, or code that blocks its thread."""
        if yields(function):
            raise Refusal(f"{name} is a generator; making it async would change what it returns")
        blocking = self.blocking_call_in(function)
        if blocking is not None:
            raise Refusal(
                f"{name} also calls `{snippet(self.module, blocking)}`, which would block the event loop once the "
                f"{kind} is async (FastAPI runs a plain def handler in a thread)"
            )

    def offloaded_calls(self, functions: list[cst.FunctionDef]) -> tuple[AwaitedCall, ...]:
        """The calls, in the ``functions`` made async, of the module's plain functions that block their thread
        (``_decode_image(ref)``, which calls ``requests.get``, or calls a function that does): each runs in a
        worker thread, ``await asyncio.to_thread(f, ...)``, as the framework ran the whole sync function in one
        before; Refusal where such a call cannot be awaited in place (a lambda or comprehension)."""
        made_async = {id(f) for f in functions}
        bindings = module_bindings(self.module)
        blocking = {
            info.name for info in self.model.module_functions.values()
            if not info.is_async and not info.is_method and info.parent is None and id(info.node) not in made_async
            and len(bindings.get(info.name, [])) == 1 and not yields(info.node) and self._blocks(info, _OFFLOAD_DEPTH)
        }
        found: list[AwaitedCall] = []
        for function in functions:
            own = rebound_names(function)
            for name, uses in occurrences(function, sorted(blocking - own)).items():
                for o in uses:
                    call = o.parent
                    if not (isinstance(call, cst.Call) and call.func is o.name) or any(isinstance(p, cst.FunctionDef) for p in o.parents[1:]):
                        continue  # not a call, or one in a function nested in this one
                    if any(isinstance(p, _NESTED_SCOPES) for p in o.parents):
                        raise Refusal(
                            f"`{snippet(self.module, call)}` blocks its thread (through {name}()), inside a lambda or "
                            f"comprehension of {function.name.value}(), where it could not be awaited in a worker thread "
                            "once that is async; call it in a statement of its own"
                        )
                    found.append(AwaitedCall(call, _is_taken_in(o.ancestor(2) or call, call)))
        return tuple(found)

    def _blocks(self, function: FunctionInfo, depth: int) -> bool:
        """``function`` makes a blocking call, or calls a module function that does (``depth`` calls down)."""
        if self.blocking_call_in(function.node) is not None:
            return True
        if depth == 0:
            return False
        for site in self.model.calls:
            if site.function is function and isinstance(site.node.func, cst.Name):
                callee = self.model.module_functions.get(site.node.func.value)
                if callee is not None and callee is not function and not callee.is_async and self._blocks(callee, depth - 1):
                    return True
        return False

    def blocking_call_in(self, function: cst.FunctionDef) -> cst.Call | None:
        """A call written in ``function`` that blocks its thread (sleep, file, network or process I/O)."""
        for site in self.model.calls:
            if site.function is None or site.function.node is not function:
                continue
            callee = self.semantics.callee(site.node) or ""
            plain = dotted_name(site.node.func)
            if callee in _BLOCKING_CALLS or callee.startswith(_BLOCKING_MODULES) or (
                plain in _BLOCKING_BUILTINS and plain not in self.model.aliases and plain not in self.model.module_functions
            ):
                return site.node
        return None


def _executor_call(function: cst.FunctionDef, c: HelperCall) -> cst.Call | None:
    """``loop.run_in_executor(None, lambda: helper(...))`` awaited where it is written, ``c`` the helper's call
    as the lambda's whole body: the executor ran the helper in a worker thread for the value the ``await`` gets;
    once the helper is async, awaiting its call gives that value (its arguments are read at the same point)."""
    lambda_ = c.parent
    if not (isinstance(lambda_, cst.Lambda) and lambda_.body is c.call and not _has_params(lambda_)):
        return None
    found: list[cst.Call] = []

    class _Find(cst.CSTVisitor):
        def visit_Await(self, node: cst.Await) -> None:
            call = node.expression
            if (
                isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "run_in_executor"
                and len(call.args) == 2 and all(arg.keyword is None and not arg.star for arg in call.args)
                and is_none(call.args[0].value) and call.args[1].value is lambda_
            ):
                found.append(call)

    walk(function, _Find())
    return found[0] if found else None


# What binds the loop an executor call is made on
_LOOP_GETTERS = frozenset({"asyncio.get_running_loop", "asyncio.get_event_loop"})


def _unused_loop(function: cst.FunctionDef, calls: list[cst.Call]) -> cst.SimpleStatementLine | None:
    """``loop = asyncio.get_running_loop()`` in ``function`` when the replaced executor calls ``calls`` were the
    only reads of ``loop`` (ruff's F841 would flag the line left behind): a statement of its own, directly in the
    function's body, with no comment of its own to lose."""
    receivers = {id(c.func.value) for c in calls if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)}
    names = {c.func.value.value for c in calls if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)}
    if len(names) != 1:
        return None
    name = names.pop()
    assert isinstance(function.body, cst.IndentedBlock)
    bindings = [
        s for s in function.body.body
        if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(assign := s.body[0], cst.Assign)
        and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == name
        and isinstance(assign.value, cst.Call) and not assign.value.args and dotted_name(assign.value.func) in _LOOP_GETTERS
    ]
    if len(bindings) != 1:
        return None
    line = bindings[0]
    target = cst.ensure_type(line.body[0], cst.Assign).targets[0].target
    others = [o for o in occurrences(function, [name])[name] if o.name is not target and id(o.name) not in receivers]
    commented = line.trailing_whitespace.comment is not None or any(empty.comment is not None for empty in line.leading_lines)
    return None if others or commented else line


def _has_params(lambda_: cst.Lambda) -> bool:
    params = lambda_.params
    return bool(params.params or params.posonly_params or params.kwonly_params or isinstance(params.star_arg, cst.Param) or params.star_kwarg)


def _is_taken_in(parent: cst.CSTNode, call: cst.Call) -> bool:
    """Whether ``call`` is the object of ``parent`` (``f(x)[0]``, ``f(x).text``, ``f(x)()``), which ``await f(x)``
    would take in: ``await f(x)[0]`` awaits the item."""
    if isinstance(parent, cst.Attribute | cst.Subscript):
        return parent.value is call
    return isinstance(parent, cst.Call) and parent.func is call
