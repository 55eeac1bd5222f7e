"""One traversal of a module that records what the rules ask about.

The visitor collects imports, module constants, functions, classes, calls,
assignments, returns and attribute reads, each with its enclosing function and
statement. Rules then query this model; none of them walks the tree again, and
no LibCST metadata provider runs unless a finding needs a position.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def subscript_key(node: cst.BaseExpression) -> tuple[str, str] | None:
    """(``MODELS``, ``llm``) for ``MODELS["llm"]``: a variable's item at one plain string key, else None."""
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1):
        return None
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and index.star is None and isinstance(index.value, cst.SimpleString)):
        return None
    key = index.value.evaluated_value
    return (node.value.value, key) if isinstance(key, str) else None


def decorator_parts(decorator: cst.Decorator) -> tuple[cst.BaseExpression, cst.Call | None]:
    """What a decorator names, and its call when it has one: (``app.get``, the call) for ``@app.get("/")``."""
    expr = decorator.decorator
    call = expr if isinstance(expr, cst.Call) else None
    return (call.func if call is not None else expr), call


def module_path(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return dotted_name(node) or ""


@dataclass(eq=False, slots=True)
class FunctionInfo:
    """A function of the module and where it sits."""
    node: cst.FunctionDef
    name: str
    is_async: bool
    parent: FunctionInfo | None
    class_info: ClassInfo | None  # the class whose ``self`` is in scope (methods and their closures)
    is_method: bool
    in_main_guard: bool
    params: tuple[str, ...]
    global_names: set[str] = field(default_factory=set)
    called_names: set[str] = field(default_factory=set)  # plain names and self.method names called inside
    bound_names: set[str] = field(default_factory=set)  # local names assigned inside (=, for, with ... as, :=)
    returns: list[cst.Return] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class ClassInfo:
    """A class of the module and its methods."""
    node: cst.ClassDef
    name: str
    bases: tuple[cst.BaseExpression, ...]
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    in_main_guard: bool = False
    function: FunctionInfo | None = None  # the function the class is defined in (None: module level)


@dataclass(eq=False, slots=True)
class CallSite:
    """A call of the module and where it runs."""
    node: cst.Call
    function: FunctionInfo | None  # innermost enclosing function
    statement: cst.CSTNode  # the statement that holds the call (for noqa on its first line)
    in_main_guard: bool
    assigned_to: tuple[str, ...] = ()  # targets when the call is the value of an assignment
    in_lambda: bool = False  # inside a lambda: run whenever that callable is (a thread pool, a callback)


@dataclass(eq=False, slots=True)
class ImportInfo:
    """An import statement of the module and the names it binds."""
    node: cst.Import | cst.ImportFrom
    statement: cst.CSTNode
    module: str  # the module named by the statement (for ``import a.b``: each alias is its own entry)
    names: tuple[tuple[str, str | None, cst.ImportAlias], ...]  # (imported name, as-name, alias node)
    relative: int = 0
    function: FunctionInfo | None = None


@dataclass(eq=False, slots=True)
class AttributeRead:
    """An attribute read of the module and where it is."""
    node: cst.Attribute
    function: FunctionInfo | None
    statement: cst.CSTNode


@dataclass(eq=False, slots=True)
class Binding:
    """``target = <call>``: what a name may hold."""

    call: cst.Call
    function: FunctionInfo | None  # where the assignment happens
    scope: object  # None: module; FunctionInfo; ClassInfo (self.x)


class ModuleModel(cst.CSTVisitor):
    """Collects the facts of one module in a single pass."""

    def __init__(self) -> None:
        super().__init__()
        self.imports: list[ImportInfo] = []
        self.aliases: dict[str, str] = {}  # local name -> qualified name
        self.constants: dict[str, cst.BaseExpression | None] = {}  # module level; None when reassigned
        self.functions: list[FunctionInfo] = []
        self.module_functions: dict[str, FunctionInfo] = {}
        self.classes: list[ClassInfo] = []
        self.calls: list[CallSite] = []
        self.attribute_reads: list[AttributeRead] = []
        self.bindings: dict[tuple[object, str], list[Binding]] = {}
        # Calls stored in a dict's item at a plain string key (``MODELS["llm"] = LLM(...)``, and each such item of a
        # ``MODELS = {"llm": LLM(...)}``), by (the dict's variable, the key); the scope is the variable's as read.
        self.item_bindings: dict[tuple[str, str], list[Binding]] = {}
        # ``args.max_model_len = ...`` anywhere in the module: the dotted target, with the Attribute nodes written.
        self.attribute_targets: dict[str, list[cst.Attribute]] = {}
        # Every value stored in a name, by (scope, name) as for bindings, with the function that stores it;
        # None for a store whose value is not one expression (a for target, ``+=``, unpacking, with-as, ...).
        # A class body's ``X = ...`` is stored as ``self.X``.
        self.values: dict[tuple[object, str], list[tuple[cst.BaseExpression | None, FunctionInfo | None]]] = {}
        # Names whose object is changed in place somewhere (``cfg["k"] = v``, ``del cfg["k"]``, ``cfg.update(...)``).
        self.mutated: set[str] = set()
        # ``x.attr = value`` statements: the attribute nodes written, so that rules that read attributes skip them.
        self.attribute_writes: set[int] = set()  # ids of cst.Attribute nodes
        self._function_stack: list[FunctionInfo] = []
        self._class_stack: list[ClassInfo] = []
        self._statement_stack: list[cst.CSTNode] = []
        self._main_guard_depth = 0
        self._lambda_depth = 0
        self._assign_targets: list[tuple[cst.BaseExpression, tuple[str, ...]]] = []
        self._saved_functions: list[list[FunctionInfo]] = []

    # -- context -------------------------------------------------------------

    @property
    def current_function(self) -> FunctionInfo | None:
        return self._function_stack[-1] if self._function_stack else None

    @property
    def current_statement(self) -> cst.CSTNode:
        return self._statement_stack[-1]

    def _push_statement(self, node: cst.CSTNode) -> None:
        self._statement_stack.append(node)

    def _pop_statement(self, original_node: cst.CSTNode) -> None:  # named as LibCST's leave_* methods name it
        self._statement_stack.pop()

    visit_SimpleStatementLine = _push_statement
    leave_SimpleStatementLine = _pop_statement

    def visit_If(self, node: cst.If) -> None:
        self._push_statement(node)
        if _is_main_guard(node.test):
            self._main_guard_depth += 1

    def leave_If(self, node: cst.If) -> None:
        self._pop_statement(node)
        if _is_main_guard(node.test):
            self._main_guard_depth -= 1

    def visit_Module(self, node: cst.Module) -> None:
        self._statement_stack.append(node)

    for _compound in ("With", "While", "Try", "TryStar", "Match"):
        locals()[f"visit_{_compound}"] = _push_statement
        locals()[f"leave_{_compound}"] = _pop_statement
    del _compound

    # -- definitions ---------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = tuple(p.name.value for p in (*node.params.posonly_params, *node.params.params))
        parent = self.current_function
        is_method = bool(self._class_stack) and parent is None
        info = FunctionInfo(
            node=node,
            name=node.name.value,
            is_async=node.asynchronous is not None,
            parent=parent,
            class_info=self._class_stack[-1] if is_method else (parent.class_info if parent else None),
            is_method=is_method,
            in_main_guard=self._main_guard_depth > 0,
            params=params,
        )
        self.functions.append(info)
        if is_method and info.class_info is not None:
            info.class_info.methods[info.name] = info
        elif info.parent is None:
            self.module_functions[info.name] = info
        self._function_stack.append(info)
        self._statement_stack.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function_stack.pop()
        self._statement_stack.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        info = ClassInfo(
            node=node,
            name=node.name.value,
            bases=tuple(arg.value for arg in node.bases if arg.keyword is None),
            in_main_guard=self._main_guard_depth > 0,
            function=self.current_function,
        )
        self.classes.append(info)
        self._class_stack.append(info)
        self._statement_stack.append(node)
        # A class body starts a fresh function context: its defs are methods.
        self._saved_functions.append(self._function_stack)
        self._function_stack = []

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_stack.pop()
        self._statement_stack.pop()
        self._function_stack = self._saved_functions.pop()

    def visit_Global(self, node: cst.Global) -> None:
        if self.current_function is not None:
            self.current_function.global_names.update(item.name.value for item in node.names)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._lambda_depth += 1

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._lambda_depth -= 1

    def _bind(self, target: cst.BaseExpression | None) -> None:
        """Record the plain names a target binds in the current function."""
        if self.current_function is None or target is None:
            return
        if isinstance(target, cst.Name):
            self.current_function.bound_names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_Return(self, node: cst.Return) -> None:
        if self.current_function is not None:
            self.current_function.returns.append(node)

    # -- imports -------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = module_path(alias.name)
            asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
            self.imports.append(
                ImportInfo(node, self.current_statement, name, ((name, asname, alias),), function=self.current_function)
            )
            if asname:
                self.aliases[asname] = name
            else:
                head = name.split(".")[0]
                self.aliases.setdefault(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = module_path(node.module)
        relative = len(node.relative)
        names: list[tuple[str, str | None, cst.ImportAlias]] = []
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = module_path(alias.name)
                asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                names.append((name, asname, alias))
                if not relative:
                    self.aliases[asname or name] = f"{module}.{name}"
        self.imports.append(ImportInfo(node, self.current_statement, module, tuple(names), relative, self.current_function))

    # -- assignments ---------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._note_written(target.target)
            self._bind(target.target)
        targets = tuple(t for t in (_target_name(target.target) for target in node.targets) if t)
        self._record_assignment(targets, node.value)
        self._record_items(node)
        for target in node.targets:
            if _target_name(target.target) is None:
                self._record_unknown_stores(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note_written(node.target)
        self._bind(node.target)
        target = _target_name(node.target)
        if target and node.value is not None:
            self._record_assignment((target,), node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._note_written(node.target)
        self._bind(node.target)
        target = _target_name(node.target)
        if target:
            self.mutated.add(target)
        self._record_unknown_stores(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._push_statement(node)
        self._record_unknown_stores(node.target)
        self._bind(node.target)

    leave_For = _pop_statement

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._record_unknown_stores(node.asname.name)
            self._bind(node.asname.name)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._record_unknown_stores(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._record_unknown_stores(node.target)
        self._bind(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._record_unknown_stores(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._record_unknown_stores(node.name.name)

    def _note_written(self, target: cst.BaseExpression) -> None:
        """Attributes and subscripts assigned to: not reads, and an in-place change of what they hang on."""
        if isinstance(target, cst.Attribute):
            self.attribute_writes.add(id(target))
            name = dotted_name(target)
            if name is not None:
                self.attribute_targets.setdefault(name, []).append(target)
        elif isinstance(target, cst.Subscript):
            owner = dotted_name(target.value)
            if owner:
                self.mutated.add(owner)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._note_written(element.value)

    def _scope_of(self, target: str) -> object:
        function = self.current_function
        if target.startswith("self.") and function is not None and function.class_info is not None:
            return function.class_info
        if function is None and self._class_stack and "." not in target:
            return self._class_stack[-1]
        if function is None or target in function.global_names:
            return None
        return function

    def _store(self, target: str, value: cst.BaseExpression | None) -> None:
        scope = self._scope_of(target)
        key = target if not isinstance(scope, ClassInfo) or target.startswith("self.") else f"self.{target}"
        self.values.setdefault((scope, key), []).append((value, self.current_function))

    def _record_unknown_stores(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._record_unknown_stores(element.value)
        elif isinstance(target, cst.StarredElement):
            self._record_unknown_stores(target.value)
        elif isinstance(target, cst.Subscript):
            owner = dotted_name(target.value)
            if owner:
                self.mutated.add(owner)
        else:
            name = dotted_name(target)
            if name is not None:
                self._store(name, None)

    def _record_assignment(self, targets: tuple[str, ...], value: cst.BaseExpression) -> None:
        function = self.current_function
        for target in targets:
            if "." not in target or target.startswith("self."):
                self._store(target, value)
        if function is None and not self._class_stack:
            for target in targets:
                if "." in target:
                    continue
                self.constants[target] = None if target in self.constants else value
                resolved = dotted_name(value)
                if resolved and not isinstance(value, cst.Call):
                    head = resolved.split(".")[0]
                    if head in self.aliases:
                        self.aliases[target] = self.aliases[head] + resolved[len(head):]
        call = _unwrap_await(value)
        if isinstance(call, cst.Call):
            self._assign_targets.append((call, targets))
            for target in targets:
                scope: object
                if target.startswith("self.") and function is not None and function.class_info is not None:
                    scope = function.class_info
                elif function is None or target in function.global_names:
                    scope = None
                else:
                    scope = function
                self.bindings.setdefault((scope, target), []).append(Binding(call, function, scope))

    def _record_items(self, node: cst.Assign) -> None:
        """``MODELS["llm"] = <call>`` and ``MODELS = {"llm": <call>}``: what the dict's items hold."""
        function = self.current_function
        call = _unwrap_await(node.value)
        for target in node.targets:
            item = subscript_key(target.target)
            if item is not None and isinstance(call, cst.Call):
                self.item_bindings.setdefault(item, []).append(Binding(call, function, None))
            if isinstance(target.target, cst.Name) and isinstance(node.value, cst.Dict):
                for element in node.value.elements:
                    value = _unwrap_await(element.value)
                    if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                            and isinstance(value, cst.Call) and isinstance(key := element.key.evaluated_value, str):
                        self.item_bindings.setdefault((target.target.value, key), []).append(Binding(value, function, None))

    # -- uses ----------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        targets: tuple[str, ...] = ()
        if self._assign_targets and self._assign_targets[-1][0] is node:
            targets = self._assign_targets.pop()[1]
        function = self.current_function
        self.calls.append(CallSite(node, function, self.current_statement, self._main_guard_depth > 0, targets, self._lambda_depth > 0))
        name = dotted_name(node.func)
        if function is not None and name:
            function.called_names.add(name)
        if name and "." in name and name.rsplit(".", 1)[1] in _MUTATING_METHODS:
            self.mutated.add(name.rsplit(".", 1)[0])

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attribute_reads.append(AttributeRead(node, self.current_function, self.current_statement))


_MUTATING_METHODS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"})


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left = test.left
    right = test.comparisons[0].comparator
    names = {dotted_name(left), dotted_name(right)}
    strings = {
        side.evaluated_value
        for side in (left, right)
        if isinstance(side, cst.SimpleString)
    }
    return "__name__" in names and "__main__" in strings


def _target_name(target: cst.BaseExpression) -> str | None:
    return dotted_name(target)


def _unwrap_await(value: cst.BaseExpression) -> cst.BaseExpression:
    return value.expression if isinstance(value, cst.Await) else value


def build_model(module: cst.Module) -> ModuleModel:
    from vllm_lint.python.walk import walk

    model = ModuleModel()
    walk(module, model)  # module.visit(model), without rebuilding every node
    return model
