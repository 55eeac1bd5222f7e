"""What the pre-filter's last stage reads: facts of a module's standard-library ``ast`` tree, gathered in one walk.

A file that the byte tests let through is parsed by ``ast`` (in C, several times cheaper than LibCST) before
LibCST parses it for the checkers. The tree knows nothing of formatting: a list written one item per line, a
string in other quotes, a comment between two arguments give the same facts, so a condition read off them
holds or fails whatever the layout. Conditions ask only for what rules read: identifiers, string contents,
the names bound to a call's result and the attributes read on names.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable


# The nodes whose parent bound_to_calls looks up; and the load/store markers, which hold nothing.
_PARENTED = frozenset({ast.Call, ast.Await})
_CONTEXTS = frozenset({ast.Load, ast.Store, ast.Del})


# Per node class, the fields that can hold a node: a name's and a constant's hold none, and ``ctx`` holds only
# the load/store marker (each field is read once per node, so skipping these saves a third of the walk).
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {ast.Name: (), ast.Constant: ()}


def _child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    return tuple(field for field in cls._fields if field != "ctx")


class TreeFacts:
    """One walk over the module; each fact is a set or a list the conditions test membership in."""

    def __init__(self, tree: ast.Module) -> None:
        self.identifiers: set[str] = set()  # names, attribute names, imported names and modules (each part)
        self.strings: list[str] = []  # string constants (f-string parts too), bare string statements left out
        self.reads: dict[str, set[str]] = {}  # dotted name (``engine``, ``self.engine``) -> attributes read on it
        self.calls: list[ast.Call] = []
        self.aliases: list[tuple[str, str]] = []  # (bound name, final part of what it names): imports, assignments
        self.imported: set[str] = set()  # the names import statements bind (``import a.b`` binds ``a``)
        self.returns_pair = False  # some ``return`` gives a tuple of two (``return body, 503``)
        self.decorators: set[str] = set()  # last names of what decorators name (``post`` for ``@app.post("/")``)
        self.called_attribute_decorators: set[str] = set()  # the same, of ``@<expr>.<name>(...)`` only
        # Of each ``@<expr>.<name>(...)``: (name, the first name of ``<expr>`` when it is a dotted name, the first
        # positional argument when it is a string).
        self.attribute_decorator_calls: list[tuple[str, str | None, str | None]] = []
        self.imported_modules: set[str] = set()  # what absolute imports name (``a.b`` of ``import a.b``, ``from a.b import c``)
        # Names bound by anything but an ``import`` statement (assigned, a parameter, a def or class, ``from``-imported).
        self.bound_otherwise: set[str] = set()
        self.bases: set[str] = set()  # last names of classes' bases
        self._parents: dict[int, ast.AST] = {}  # of calls and awaits only: what bound_to_calls asks
        self._tree = tree
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        identifiers, strings, parents, calls = self.identifiers, self.strings, self._parents, self.calls
        docstrings: set[int] = set()  # bare string statements: prose, never a value
        stack: list[ast.AST] = [tree]
        pop, push = stack.pop, stack.append
        node_type, parented = ast.AST, _PARENTED
        fields_of = _CHILD_FIELDS
        while stack:  # one pass; each child is pushed by hand (ast.iter_child_nodes costs a generator per node)
            node = pop()
            fields = fields_of.get(type(node))
            if fields is None:
                fields = fields_of[type(node)] = _child_fields(type(node))
            for field in fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, node_type):
                            if type(item) in parented:
                                parents[id(item)] = node
                            push(item)
                elif isinstance(value, node_type) and type(value) not in _CONTEXTS:
                    if type(value) in parented:
                        parents[id(value)] = node
                    push(value)
            if isinstance(node, ast.Name):
                identifiers.add(node.id)
                if type(node.ctx) is ast.Store:
                    self.bound_otherwise.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound_otherwise.add(node.arg)
            elif isinstance(node, ast.Attribute):
                identifiers.add(node.attr)
                base = dotted(node.value)
                if base is not None:
                    self.reads.setdefault(base, set()).add(node.attr)
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, (str, bytes)) and id(node) not in docstrings:
                    strings.append(node.value if isinstance(node.value, str) else node.value.decode("latin-1"))
            elif isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, ast.Expr):
                if isinstance(node.value, ast.Constant):
                    docstrings.add(id(node.value))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound_otherwise.add(node.name)
                if not isinstance(node, ast.ClassDef):
                    self._functions.append(node)
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    name = final_name(target)
                    if name is not None:
                        self.decorators.add(name)
                        if isinstance(decorator, ast.Call) and isinstance(target, ast.Attribute):
                            self.called_attribute_decorators.add(name)
                            owner = dotted(target.value)
                            args = decorator.args
                            first = args[0] if args and not isinstance(args[0], ast.Starred) else None
                            path = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
                            self.attribute_decorator_calls.append((name, owner.partition(".")[0] if owner else None, path))
                if isinstance(node, ast.ClassDef):
                    self.bases.update(name for base in node.bases if (name := final_name(base)) is not None)
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
                if node.name:
                    self.bound_otherwise.add(node.name)
            elif isinstance(node, ast.MatchMapping):
                if node.rest:
                    self.bound_otherwise.add(node.rest)
            elif isinstance(node, ast.Return):
                if isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2:
                    self.returns_pair = True
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                from_import = isinstance(node, ast.ImportFrom)
                if isinstance(node, ast.ImportFrom) and node.module:
                    identifiers.update(node.module.split("."))
                    if not node.level:
                        self.imported_modules.add(node.module)
                for alias in node.names:
                    identifiers.update(alias.name.split("."))
                    self.imported.add(alias.asname or (alias.name if from_import else alias.name.split(".")[0]))
                    if from_import:
                        self.bound_otherwise.add(alias.asname or alias.name)
                    else:
                        self.imported_modules.add(alias.name)
                    if alias.asname:
                        identifiers.add(alias.asname)
                        self.aliases.append((alias.asname, alias.name.rpartition(".")[2]))
            elif isinstance(node, ast.Assign):
                if isinstance(node.value, (ast.Name, ast.Attribute)):
                    final = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
                    self.aliases.extend((name, final) for target in node.targets if (name := dotted(target)) is not None)
            elif isinstance(node, ast.AnnAssign):
                if isinstance(node.value, (ast.Name, ast.Attribute)):
                    # ``X: type = mod.Name``: python/model.py follows it as it follows a plain assignment
                    name = dotted(node.target)
                    if name is not None:
                        self.aliases.append((name, node.value.id if isinstance(node.value, ast.Name) else node.value.attr))

    def registrable_function_returns_pair(self) -> bool:
        """Whether a function whose own body (not a nested function's) returns a tuple of two may be registered as a
        request handler: it is decorated, or named anywhere but as the callee of a call (a handler is registered by
        a decorator, or passed by name: ``app.add_api_route(path, fn)``, ``app.post("/")(fn)``, ``partial(fn)``,
        ``APIRoute(path, endpoint=self.fn)``; python/handlers.py finds no other). Read only when asked."""
        if not self.returns_pair:
            return False
        candidates = [function for function in self._functions if _returns_pair_itself(function)]
        if any(function.decorator_list for function in candidates):
            return True
        names = {function.name for function in candidates}
        callees = {id(call.func) for call in self.calls}
        for node in ast.walk(self._tree):
            if type(node) is ast.Name:
                if node.id in names and id(node) not in callees:
                    return True
            elif type(node) is ast.Attribute and node.attr in names and id(node) not in callees:
                return True
        return False

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self._parents.get(id(node))

    def names_for(self, finals: Iterable[str]) -> set[str]:
        """``finals`` and every name bound to one of them (``import X as Y``, ``Y = mod.X``), through chains."""
        names = set(finals)
        changed = True
        while changed:
            changed = False
            for bound, final in self.aliases:
                if final in names and bound not in names:
                    names.add(bound)
                    changed = True
        return names

    def calls_of(self, finals: Iterable[str]) -> list[ast.Call]:
        """The calls whose callee semantics.callee may name as one of ``finals``: the callee's last part is one of
        them or a name bound to one, and its first part is a name an import or an assignment binds (python/model.py
        qualifies a callee only through those; a class the module defines itself is not the imported one)."""
        names = self.names_for(finals)
        heads = self.imported | {bound.partition(".")[0] for bound, _ in self.aliases}
        found = []
        for call in self.calls:
            name = dotted(call.func)
            if name is not None and final_name(call.func) in names and name.partition(".")[0] in heads:
                found.append(call)
        return found

    def imports_any(self, prefixes: tuple[str, ...]) -> bool:
        """semantics.imports_any, read off the tree: an absolute import of one of the modules or of one under it."""
        return any(m == p or m.startswith(p + ".") for m in self.imported_modules for p in prefixes)

    def any_string_has(self, words: Iterable[str]) -> bool:
        return any(word in text for text in self.strings for word in words)

    def bound_to_calls(self, callee_finals: set[str], receiver_finals: set[str] | None = None) -> set[str] | None:
        """The dotted names bound to the result of a call of one of ``callee_finals`` (a name, or an attribute
        whose own base ends in one of ``receiver_finals``); None where a result is bound to something that is
        not a dotted name (a tuple, a subscript), so the caller lets the parser decide."""
        bound: set[str] = set()
        for call in self.calls:
            func = call.func
            if isinstance(func, ast.Name):
                if receiver_finals is not None or func.id not in callee_finals:
                    continue
            elif isinstance(func, ast.Attribute):
                if func.attr not in callee_finals:
                    continue
                if receiver_finals is not None and final_name(func.value) not in receiver_finals:
                    continue
            else:
                continue
            holder: ast.AST | None = self.parent(call)
            if isinstance(holder, ast.Await):
                holder = self.parent(holder)
            if isinstance(holder, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.withitem)):
                targets = (
                    holder.targets if isinstance(holder, ast.Assign)
                    else [holder.optional_vars] if isinstance(holder, ast.withitem) else [holder.target]
                )
                for target in targets:
                    if target is None:
                        continue
                    name = dotted(target)
                    if name is None:
                        return None
                    bound.add(name)
            # Anything else (dropped, returned, passed on) binds no name, as python/model.py records bindings.
        return bound


def _returns_pair_itself(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``return a, b`` of the function itself: python/model.py gives a return to its innermost function."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            if isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2:
                return True
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def final_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def tree_facts(text: bytes) -> TreeFacts | None:
    """The facts of a module, None when ``ast`` cannot parse it (the full path reports the syntax error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence": the checkers' business, not this reader's
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return TreeFacts(tree)
