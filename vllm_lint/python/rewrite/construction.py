"""How the engine is built from what built the model: a pipeline's arguments as AsyncEngineArgs keywords, an
LLM's checked against AsyncEngineArgs' fields, and whether a model argument is a name or path."""

from __future__ import annotations

import libcst as cst

from vllm_lint.launch.defaults import SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.python.context import PyContext
from vllm_lint.python.model import FunctionInfo, dotted_name
from vllm_lint.python.rewrite.callers import Callers, argument_for
from vllm_lint.python.rewrite.facts import ModuleFacts
from vllm_lint.python.rewrite.generation import GENERATION_KEYWORDS, OUTPUT_OPTIONS
from vllm_lint.python.rewrite.hf_generate import model_name_of
from vllm_lint.python.rewrite.names import names_in, occurrences
from vllm_lint.python.rewrite.plan import Refusal
from vllm_lint.python.rewrite.prompts import bound_names, local_bindings, module_bindings, rebound_names
from vllm_lint.python.rewrite.shapes import Assignments, keyword_args, literal_flag, named_params, positional_args, snippet, top_level_index_of
from vllm_lint.python.vocabulary import ENCODER_DECODER_MODEL, HF_GENERATIVE_MODEL, is_processor_load, is_tokenizer_load
from vllm_lint.python.walk import walk

_TORCH_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32", "float": "float32"}
_DTYPE_STRINGS = frozenset({"auto", "float16", "half", "bfloat16", "float32", "float"})
_PIPELINE_PLACEMENT = frozenset({"device", "device_map"})  # vLLM places the model on the GPU(s) itself
_PIPELINE_ENGINE_KEYWORDS = ("tokenizer", "revision", "trust_remote_code")
# AutoTokenizer.from_pretrained options that leave the tokenizer as the engine's own load of the same name
# makes it: which files (revision), whose code, and where the download is cached (cache_dir: the same files).
# Tokenizer options that load the same tokenizer the engine loads: where the files are, which revision, and the
# Hugging Face credentials they are downloaded with (the model's own token reaches the engine as hf_token)
_TOKENIZER_SAME_FILES = frozenset({
    "pretrained_model_name_or_path", "revision", "trust_remote_code", "use_fast", "cache_dir", "token", "use_auth_token",
})
# from_pretrained's placement and loading options: the engine places and loads the weights itself.
_HF_PLACEMENT = frozenset({"device_map", "device", "low_cpu_mem_usage", "attn_implementation", "use_safetensors", "local_files_only"})


# What to change by hand where vLLM does not serve the model: the handler kinds need different things.
_UNSERVED_ADVICE = (
    "to batch requests on the engine, serve {model}, which the rewrite then moves onto it; until then an `async def` "
    "handler should run the call in a worker thread (`await asyncio.to_thread(...)`), and a plain `def` handler already "
    "runs in the framework's worker threads"
)


def _parameter_names(function: cst.FunctionDef) -> set[str]:
    star = [p for p in (function.params.star_arg, function.params.star_kwarg) if isinstance(p, cst.Param)]
    return {p.name.value for p in (*named_params(function), *star)}


class EngineConstruction(ModuleFacts):
    """Reads what built the model: a pipeline's or an LLM's arguments."""

    def __init__(self, ctx: PyContext) -> None:
        super().__init__(ctx)
        self._resolving: set[str] = set()  # module variables whose bindings are being checked
        self._loaded_at: cst.CSTNode | None = None  # the statement of the load whose model name is checked

    def _model_name_at(self, expr: cst.BaseExpression, call: cst.Call) -> bool:
        """``expr`` is a model name where ``call`` loads it."""
        site = self.sites[id(call)]
        self._loaded_at = site.statement
        try:
            return self.is_model_name(expr, function=site.function)
        finally:
            self._loaded_at = None

    def pipeline_construction(self, call: cst.Call) -> tuple[tuple[tuple[str, str], ...], dict[str, cst.BaseExpression], bool]:
        """(AsyncEngineArgs keywords, generation defaults given to the pipeline, return_full_text)."""
        if any(arg.star for arg in call.args):
            raise Refusal("pipeline(...) gets *args/**kwargs whose keys are unknown")
        positional = positional_args(call)
        keywords = keyword_args(call)
        task_expr = positional[0].value if positional else (keywords["task"].value if "task" in keywords else None)
        task = self.semantics.fold(task_expr) if task_expr is not None else None
        model_given = keywords["model"].value if "model" in keywords else None
        loaded = self.loaded_model(model_given) if model_given is not None else None
        # With no task, the pipeline takes the model's: a causal LM's is text-generation.
        inferred = task_expr is None and loaded is not None and "CausalLM" in (self.semantics.callee(loaded) or "")
        if task is None and not inferred:
            raise Refusal(
                "the pipeline task is not given, so the model's Hub page (its pipeline_tag) picks it; name it as "
                "pipeline(\"text-generation\", model=...) where the model generates text (a causal LM), and the rewrite "
                "then applies (vLLM serves no other task through generate())"
            )
        if not inferred and task is not None and task.value != "text-generation":
            advice = _UNSERVED_ADVICE.format(model='a generative model with pipeline("text-generation", model=...)')
            raise Refusal(
                f"the pipeline task is {task.value!r}; only \"text-generation\" maps onto vLLM's generate() (vLLM does not "
                f"serve this task); {advice}"
            )
        model_expr = positional[1].value if len(positional) > 1 else model_given
        if len(positional) > 2:
            raise Refusal("pipeline(...) gets more positional arguments than task and model")
        if model_expr is None and "revision" in keywords:
            raise Refusal("the pipeline names no model but a revision= (of the task's default model); name the model with model=\"...\", which the engine then loads")
        code = self.module.code_for_node
        if model_expr is None:
            engine: list[tuple[str, str]] = []  # the default model's, read at start-up (plan.default_model)
        elif loaded is not None and model_expr is model_given:
            # A model object the module loaded by name: the engine loads that name.
            engine = list(self.hf_load_arguments(loaded))
            model_expr = self.model_name_given(loaded)
        elif not self._model_name_at(model_expr, call):
            raise Refusal(f"cannot tell that model=`{snippet(self.module, model_expr)}` is a model name or path (a model object loaded in Python cannot be handed to the engine)")
        else:
            engine = [("model", code(model_expr))]
        generation: dict[str, cst.BaseExpression] = {}
        full_text = True
        for name, arg in keywords.items():
            if name in ("task", "model") or name in _PIPELINE_PLACEMENT:
                continue
            value = arg.value
            if name == "tokenizer":
                tokenizer = self._tokenizer_source(value, model_expr) if loaded is not None and model_expr is not None else value
                if tokenizer is not None and not self._model_name_at(tokenizer, call):
                    raise Refusal("the pipeline's tokenizer= is an object, not a name or path")
                if tokenizer is not None:
                    engine.append((name, code(tokenizer)))
            elif name in _PIPELINE_ENGINE_KEYWORDS:
                engine.append((name, code(value)))
            elif name in ("torch_dtype", "dtype"):
                engine.append(("dtype", self._dtype(value)))
            elif name in OUTPUT_OPTIONS:
                flag = literal_flag(value)
                if flag is None:
                    raise Refusal(f"the pipeline's {name}= is not a literal True/False, so the response shape is unknown")
                full_text = flag
            elif name in GENERATION_KEYWORDS:
                if self.semantics.fold(value) is None:
                    raise Refusal(f"the pipeline's {name}= is not a constant, so it cannot move into the handler")
                generation[name] = value
            else:
                raise Refusal(f"the pipeline keyword {name}= has no AsyncEngineArgs equivalent")
        engine += [
            ("gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}"),
            *((("max_model_len", str(self._max_model_len(model_expr))),) if model_expr is not None else ()),
            ("enable_prefix_caching", "True"),
        ]
        return tuple(engine), generation, full_text

    def default_max_model_len(self) -> int:
        """The fix-max-model-len setting: the most a model known only at start-up gets."""
        return self._max_model_len(None)

    def _max_model_len(self, model_expr: cst.BaseExpression | None) -> int:
        """The fix-max-model-len setting, or the model's own limit where it is known and lower."""
        from vllm_lint.launch.model import fix_length

        folded = self.semantics.fold(model_expr) if model_expr is not None else None
        name = folded.value if folded is not None and isinstance(folded.value, str) else None
        return fix_length(name, self.ctx.settings, self.ctx.api)

    def hf_model_construction(self, call: cst.Call, calls) -> tuple[tuple[str, str], ...]:
        """AsyncEngineArgs keywords for ``AutoModelForCausalLM.from_pretrained(...)``, and the tokenizer its
        generate calls tokenise with, when it names another model than the model does."""
        engine = list(self.hf_load_arguments(call))
        model_expr = self.model_name_given(call)
        tokenizer = self._tokenizer_model(calls, model_expr)
        if tokenizer is not None:
            engine.insert(1, ("tokenizer", self.module.code_for_node(tokenizer)))
        engine += [
            ("gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}"),
            ("max_model_len", str(self._max_model_len(model_expr))),
            ("enable_prefix_caching", "True"),
        ]
        return tuple(engine)

    def model_name_given(self, call: cst.Call) -> cst.BaseExpression:
        """The model ``X.from_pretrained(...)`` loads; Refusal unless it is a name or path the engine can load too."""
        model_expr = model_name_of(call)
        if model_expr is None or not self._model_name_at(model_expr, call):
            shown = snippet(self.module, model_expr) if model_expr is not None else "nothing"
            raise Refusal(
                f"cannot tell that the model `{shown}` is a model name or path the engine can load too; name it by a "
                "string constant, an environment variable or a command-line option, bound once before the model is "
                "loaded (a local, or an attribute of the object set once in the method that loads it; the engine "
                "loads such a name as from_pretrained does), or build the engine by hand"
            )
        return model_expr

    def check_decoder_only(self, call: cst.Call) -> None:
        """Refusal when ``X.from_pretrained(...)`` loads an encoder-decoder model, which the engine cannot load."""
        loader = self.semantics.callee(call) or ""
        if ENCODER_DECODER_MODEL.match(loader):
            raise Refusal(
                f"`{loader.rsplit('.', 2)[-2]}` loads an encoder-decoder model (T5, BART, BlenderBot...), which vLLM itself "
                f"does not serve (BART only through its bart-plugin); {_UNSERVED_ADVICE.format(model='a decoder-only model (AutoModelForCausalLM)')}"
            )

    def hf_load_arguments(self, call: cst.Call) -> tuple[tuple[str, str], ...]:
        """AsyncEngineArgs keywords for what ``X.from_pretrained(...)`` loads: its model and how."""
        self.check_decoder_only(call)
        if any(arg.star for arg in call.args):
            raise Refusal("from_pretrained(...) gets *args/**kwargs whose keys are unknown")
        if len(positional_args(call)) > 1:
            raise Refusal("from_pretrained(...) gets positional arguments beyond the model")
        model_expr = self.model_name_given(call)
        code = self.module.code_for_node
        engine: list[tuple[str, str]] = [("model", code(model_expr))]
        for name, arg in keyword_args(call).items():
            value = arg.value
            if name == "pretrained_model_name_or_path" or name in _HF_PLACEMENT:
                continue
            if name in ("revision", "trust_remote_code"):
                engine.append((name, code(value)))
            elif name == "cache_dir":
                engine.append(("download_dir", code(value)))
            elif name in ("token", "use_auth_token"):  # the Hugging Face token (use_auth_token: its old name): hf_token
                engine.append(("hf_token", code(value)))
            elif name in ("torch_dtype", "dtype"):
                engine.append(("dtype", self._dtype(value)))
            else:
                raise Refusal(
                    f"from_pretrained(..., {name}=...) has no AsyncEngineArgs equivalent the rewrite knows "
                    "(a quantization or weights option: give the engine its own, e.g. quantization=, by hand)"
                )
        return tuple(engine)

    def loaded_model(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The ``X.from_pretrained(...)`` of a causal LM that the module-level name ``expr`` holds (placed with
        ``.to(...)``/``.eval()`` or not), when that is its one binding."""
        if not isinstance(expr, cst.Name):
            return None
        bindings = self.model.bindings.get((None, expr.value), [])
        if len(bindings) != 1:
            return None
        call = bindings[0].call
        while isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "eval", "cuda") and isinstance(call.func.value, cst.Call):
            call = call.func.value
        return call if HF_GENERATIVE_MODEL.match(self.semantics.callee(call) or "") else None

    def _tokenizer_source(self, value: cst.BaseExpression, model_expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """The name a tokenizer object was loaded from; None when that is the model's own."""
        if not isinstance(value, cst.Name):
            return value
        bindings = self.model.bindings.get((None, value.value), [])
        loads = [b.call for b in bindings if is_tokenizer_load(self.semantics.callee(b.call))]
        if len(bindings) != 1 or len(loads) != 1:
            raise Refusal(f"cannot tell which tokenizer `{value.value}` is (one AutoTokenizer.from_pretrained binding is what the rewrite follows)")
        source = model_name_of(loads[0])
        if source is None:
            raise Refusal(f"cannot tell what `{snippet(self.module, loads[0])}` loads")
        code = self.module.code_for_node
        same = code(source) == code(model_expr) or (
            (a := self.semantics.fold(source)) is not None and (b := self.semantics.fold(model_expr)) is not None and a.value == b.value
        )
        return None if same else source

    def _tokenizer_model(self, calls, model_expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """What the generate calls' tokenizer was loaded from, when that is not the model's own expression."""
        found: dict[str, cst.BaseExpression] = {}
        for c in calls:
            name = dotted_name(c.tokenizer)
            bindings = [b for (_, target), bs in self.model.bindings.items() if target == name for b in bs]
            loads = [b.call for b in bindings if is_tokenizer_load(callee := self.semantics.callee(b.call)) or is_processor_load(callee)]
            if name is None or len(bindings) != 1 or len(loads) != 1:
                raise Refusal(
                    f"cannot tell which tokenizer `{snippet(self.module, c.tokenizer)}` is (one AutoTokenizer.from_pretrained "
                    "binding is what the rewrite follows); the engine tokenises with its own"
                )
            source = model_name_of(loads[0])
            if source is None or not self._model_name_at(source, loads[0]):
                raise Refusal(f"cannot tell what `{snippet(self.module, loads[0])}` loads")
            if any(arg.keyword is not None and arg.keyword.value not in _TOKENIZER_SAME_FILES for arg in loads[0].args):
                raise Refusal(
                    f"`{snippet(self.module, loads[0])}` passes tokenizer options the engine's tokenizer would not have; "
                    "load the tokenizer with the model's name alone, or give the engine those options by hand"
                )
            found[self.module.code_for_node(source)] = source
        if len(found) > 1:
            raise Refusal("the handlers tokenise with more than one tokenizer; one engine has one")
        if not found:
            return None  # no generate call tokenises the prompt here (a thread's target=model.generate, refused later)
        code, source = next(iter(found.items()))
        same = code == self.module.code_for_node(model_expr) or (
            (a := self.semantics.fold(source)) is not None and (b := self.semantics.fold(model_expr)) is not None and a.value == b.value
        )
        return None if same else source

    def check_llm_construction(self, call: cst.Call) -> frozenset[str]:
        """Refusal unless every argument of ``LLM(...)`` is an AsyncEngineArgs field; the keys its ``**dict``
        arguments give (AsyncEngineArgs gets the same dicts)."""
        spread: list[str] = []
        for arg in call.args:
            if arg.star == "**":
                spread += self._spread_dict_keys(arg.value, call)
            elif arg.star:
                raise Refusal("LLM(...) gets *args whose values are unknown")
        if len(positional_args(call)) > 1:
            raise Refusal("LLM(...) gets positional arguments beyond the model")
        known = self.ctx.api.async_engine_args
        given = [*keyword_args(call), *spread]
        for name in given:
            if name not in known:
                # LLM.chat() renders with LLM's own chat_template when the call gives none (vllm/entrypoints/llm.py, 0.32)
                advice = "; pass the template's text to each llm.chat(..., chat_template=...) call instead" if name == "chat_template" else ""
                raise Refusal(f"LLM keyword {name}= is not an AsyncEngineArgs field{advice}")
        if len(set(given)) != len(given):
            raise Refusal("LLM(...) gets a keyword twice (in its call and in a **dict)")
        return frozenset(spread)

    def _spread_dict_keys(self, value: cst.BaseExpression, call: cst.Call) -> list[str]:
        """The keys of ``**params`` where ``params`` is bound once, in the scope that builds the model, to a dict
        literal with string keys, and read nowhere else: its keys are then known where the engine is built."""
        function = self.sites[id(call)].function
        scope: cst.CSTNode = function.node if function is not None else self.module
        bindings = (local_bindings(function.node) if function is not None else module_bindings(self.module)).get(
            value.value if isinstance(value, cst.Name) else "", [])
        literal = bindings[0] if len(bindings) == 1 else None
        shown = snippet(self.module, value)
        if not isinstance(value, cst.Name) or not isinstance(literal, cst.Dict):
            raise Refusal(
                f"LLM(**{shown}) gets a dict the rewrite cannot read; write it as a dict literal bound once where the "
                "LLM is built, or pass its keywords by name"
            )
        keys: list[str] = []
        for element in literal.elements:
            key = self.semantics.fold(element.key) if isinstance(element, cst.DictElement) else None
            if key is None or not isinstance(key.value, str):
                raise Refusal(f"LLM(**{shown}) gets a dict whose keys are not all string constants")
            keys.append(key.value)
        uses = occurrences(scope, [value.value])[value.value]
        if function is not None and value.value in function.global_names:
            uses = []
        if len(uses) != 2 or not any(isinstance(o.parent, cst.AssignTarget) for o in uses):
            raise Refusal(f"`{shown}` is used besides its binding and LLM(**{shown}); its keys could change before the LLM is built")
        return keys

    def is_model_name(self, expr: cst.BaseExpression, depth: int = 0, function: FunctionInfo | None = None) -> bool:
        """A string: a constant, an environment variable, a module variable bound once to one (or given a
        default, then an override), a local variable of ``function`` bound once to one, a command-line option
        parsed by argparse, or a parameter of the ``__init__`` of a plain class (that ``function`` is) that the
        module's one construction of it passes one of those."""
        if depth > 8:
            return False
        if isinstance(expr, cst.Name) and function is not None:
            passed = self._constructor_argument(function, expr.value)
            if passed is not None:
                return self.is_model_name(passed, depth + 1)
            local = local_bindings(function.node).get(expr.value)
            if local is not None:
                # ``model_id = "org/name"`` in the function that loads the model, which builds the engine in
                # its place: the engine reads the same local name.
                return len(local) == 1 and local[0] is not None and expr.value not in _parameter_names(function.node) \
                    and self.is_model_name(local[0], depth + 1, function)
        value = self.semantics.fold(expr)
        if value is not None:
            return isinstance(value.value, str)
        if isinstance(expr, cst.Call):
            return self.semantics.callee(expr) in ("os.getenv", "os.environ.get") or dotted_name(expr.func) in ("os.getenv", "os.environ.get")
        if isinstance(expr, cst.Subscript):
            return (self.semantics.qualify(expr.value) or dotted_name(expr.value)) == "os.environ"
        if isinstance(expr, cst.Name):
            bound = self.model.constants.get(expr.value)
            if bound is not None:
                return self.is_model_name(bound, depth + 1)
            return self._rebound_model_name(expr.value, depth, function)
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
            # ``os.getenv("MODEL") or "gpt2"``
            return self.is_model_name(expr.left, depth + 1) and self.is_model_name(expr.right, depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            if function is not None and function.is_method and expr.value.value in function.params[:1]:
                held = self._own_attribute(function, expr.attr.value)
                return held is not None and self.is_model_name(held, depth + 1, function)
            return self._is_string_option(expr.value.value, expr.attr.value) or self._is_dataclass_option(expr.value.value, expr.attr.value)
        return False

    def _own_attribute(self, method: FunctionInfo, attribute: str) -> cst.BaseExpression | None:
        """What ``self.<attribute> = value`` gives, where that is the only assignment to any ``.<attribute>`` in
        the class and a statement of ``method``'s own body before the load being checked: a name held on the
        object (``self.model_id = "org/name"``), read where the engine is built in the load's place."""
        klass = method.class_info
        if klass is None or self._loaded_at is None:
            return None
        found = Assignments(lambda target: isinstance(target, cst.Attribute) and target.attr.value == attribute)
        walk(klass.node, found)
        if len(found.lines) != 1 or found.other:
            return None
        statement, value = found.lines[0]
        body = list(method.node.body.body)
        if not any(line is statement for line in body) or not any(line is self._loaded_at for line in body):
            return None
        order = [id(line) for line in body]
        return value if order.index(id(statement)) < order.index(id(self._loaded_at)) else None

    def _is_dataclass_option(self, namespace: str, option: str) -> bool:
        """``model_args.model_name_or_path`` where ``model_args`` (alone or in a tuple) is bound once, at module
        level, to what a module function returns that builds transformers' HfArgumentParser (the command line, or
        the JSON/YAML file it names, parsed into dataclasses), and ``model_name_or_path`` is a ``str`` field of a
        module @dataclass: a command-line option, given as from_pretrained is given a name or path."""
        bound = [s for s in self.module.body if namespace in bound_names(s)]
        if len(bound) != 1 or any(namespace in f.global_names for f in self.model.functions):
            return False
        line = bound[0]
        assign = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Call)
                and isinstance(assign.value.func, cst.Name) and self._builds_hf_parser(assign.value.func.value, 0)):
            return False
        target = assign.targets[0].target
        names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
        if not any(isinstance(n, cst.Name) and n.value == namespace for n in names):
            return False
        return any(self._str_field(klass.node, option) for klass in self.model.classes)

    def _builds_hf_parser(self, function: str, depth: int) -> bool:
        """The module function ``function`` builds an HfArgumentParser, or calls one that does."""
        info = self.model.module_functions.get(function)
        if info is None or depth > 4:
            return False
        for site in self.model.calls:
            if site.function is None or site.function.node is not info.node:
                continue
            if self.semantics.callee(site.node) == "transformers.HfArgumentParser":
                return True
            if isinstance(site.node.func, cst.Name) and site.node.func.value != function and self._builds_hf_parser(site.node.func.value, depth + 1):
                return True
        return False

    def _str_field(self, klass: cst.ClassDef, field: str) -> bool:
        """``field: str = ...`` in a @dataclass class."""
        if not any((self.semantics.qualify(d.decorator) or dotted_name(d.decorator)) in ("dataclasses.dataclass", "dataclass") for d in klass.decorators):
            return False
        for statement in klass.body.body if isinstance(klass.body, cst.IndentedBlock) else []:
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == field:
                return isinstance(small.annotation.annotation, cst.Name) and small.annotation.annotation.value == "str"
        return False

    def _rebound_model_name(self, name: str, depth: int, function: FunctionInfo | None) -> bool:
        """A module variable given a default and then an override (``MODEL = "gpt2"``, ``MODEL =
        os.getenv("MODEL", MODEL)``): each value a model name, every one of them stored before the model is
        loaded (in a function, or after them at module level), none in a function (``global``)."""
        if name in self._resolving or any(name in f.global_names for f in self.model.functions):
            return name in self._resolving  # ``os.getenv("MODEL") or MODEL``: the earlier value, checked on its own
        values = module_bindings(self.module).get(name, [])
        if len(values) < 2 or any(v is None for v in values):
            return False
        if function is None:
            if self._loaded_at is None:
                return False
            load = top_level_index_of(self.module.body, self._loaded_at)
            if any(top_level_index_of(self.module.body, s) > load for s in self.module.body if name in bound_names(s)):
                return False
        self._resolving.add(name)
        try:
            return all(self.is_model_name(v, depth + 1) for v in values if v is not None)
        finally:
            self._resolving.discard(name)

    def _constructor_argument(self, init: FunctionInfo, name: str) -> cst.BaseExpression | None:
        """What ``Generator(...)`` passes for parameter ``name`` of ``Generator.__init__`` (its default when it
        passes none); None when ``name`` is no such parameter, is rebound, or the value cannot be told."""
        klass = init.class_info
        if not (init.is_method and init.name == "__init__" and klass is not None) or name in rebound_names(init.node):
            return None
        params = [*init.node.params.posonly_params, *init.node.params.params, *init.node.params.kwonly_params]
        param = next((p for p in params[1:] if p.name.value == name), None)
        callers = Callers(self.ctx)
        if param is None or callers.framework_owned(klass):
            return None
        instance = callers.instance(klass)
        known, value = argument_for(instance.construction, init, param)
        if not known:
            return None
        scope = instance.site.function
        if value is not None and scope is not None and set(names_in(value)) & rebound_names(scope.node):
            return None  # the function building the object computes it
        return value if value is not None else param.default

    def _is_string_option(self, namespace: str, option: str) -> bool:
        """``args.model`` where ``args = parser.parse_args()`` and ``parser.add_argument("--model")`` takes one string."""
        parsed = self.model.constants.get(namespace)
        if not (isinstance(parsed, cst.Call) and isinstance(parsed.func, cst.Attribute) and parsed.func.attr.value == "parse_args" and not parsed.args):
            return False
        parser = dotted_name(parsed.func.value)
        for site in self.model.calls:
            call = site.node
            if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument" and dotted_name(call.func.value) == parser):
                continue
            flags = [self.semantics.fold(a.value) for a in call.args if a.keyword is None]
            names = {f.value for f in flags if f is not None and isinstance(f.value, str)}
            keywords = keyword_args(call)
            dest = self.semantics.fold(keywords["dest"].value) if "dest" in keywords else None
            declared = dest.value if dest is not None else next(
                (n.lstrip("-").replace("-", "_") for n in sorted(names, key=lambda n: not n.startswith("--")) if n.startswith("-")), None
            )
            if declared != option:
                continue
            kind = keywords.get("type")
            return not ({"action", "nargs", "const"} & set(keywords)) and (kind is None or dotted_name(kind.value) == "str")
        return False

    def _dtype(self, expr: cst.BaseExpression) -> str:
        qualified = self.semantics.qualify(expr) or ""
        if qualified.startswith("torch.") and qualified[6:] in _TORCH_DTYPES:
            return repr(_TORCH_DTYPES[qualified[6:]]).replace("'", '"')
        value = self.semantics.fold(expr)
        if value is not None and value.value in _DTYPE_STRINGS:
            return self.module.code_for_node(expr)
        raise Refusal(f"the dtype `{snippet(self.module, expr)}` has no known vLLM dtype name")

