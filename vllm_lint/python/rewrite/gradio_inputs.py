"""Which parameters of a Gradio callback Gradio fills with text.

Gradio passes the value of each input component to the callback's parameter in the same position, and a
text box (``"text"``, ``"textbox"``, ``"textarea"``, ``gr.Textbox(...)``, ``gr.TextArea(...)``) passes a
str. A parameter counts only when every registration of the callback in the module (``gr.Interface(fn,
inputs, ...)``, ``component.click(fn, inputs, ...)`` and the other listeners) gives it a text box that can
be read from the source (``gr.ChatInterface(fn)`` gives its first parameter the chat box's text): a component bound to a name once, at module level, counts; anything else does not.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.handler_table import GRADIO_LISTENERS
from vllm_lint.python.model import FunctionInfo
from vllm_lint.python.rewrite.facts import ModuleFacts
from vllm_lint.python.rewrite.prompts import module_bindings

_TEXT_SHORTCUTS = frozenset({"text", "textbox", "textarea"})
_TEXT_COMPONENTS = frozenset({"gradio.Textbox", "gradio.TextArea", "gradio.components.Textbox", "gradio.components.TextArea"})


class GradioInputs(ModuleFacts):
    _bindings: dict[str, list[cst.BaseExpression | None]] | None = None

    def text_params(self, function: FunctionInfo) -> frozenset[str]:
        """The names of ``function``'s parameters that every registration fills from a text box."""
        node = function.node
        if function.parent is not None or node.params.posonly_params or node.params.star_arg is not cst.MaybeSentinel.DEFAULT:
            return frozenset()
        names = [param.name.value for param in node.params.params]
        text: set[int] | None = None
        for inputs in self._registrations(function.name):
            found = {i for i, component in enumerate(inputs) if component is not None and self._is_text_box(component)}
            text = found if text is None else text & found
        return frozenset(names[i] for i in (text or ()) if i < len(names))

    def registrations(self, name: str) -> list[cst.Call]:
        """Each Gradio registration of the module function ``name``: ``gr.Interface(fn)``, ``gr.ChatInterface(fn)``,
        ``component.click(fn, ...)`` and the other listeners."""
        found = []
        for site in self.model.calls:
            call = site.node
            listener = isinstance(call.func, cst.Attribute) and call.func.attr.value in GRADIO_LISTENERS
            if not listener and self.semantics.callee(call) not in ("gradio.Interface", "gradio.ChatInterface"):
                continue
            positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            fn = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "fn"), positional[0] if positional else None)
            if isinstance(fn, cst.Name) and fn.value == name:
                found.append(call)
        return found

    def _registrations(self, name: str) -> list[list[cst.BaseExpression | None]]:
        """The input components of each Gradio registration of the module function ``name``."""
        found: list[list[cst.BaseExpression | None]] = []
        for site in self.model.calls:
            call = site.node
            listener = isinstance(call.func, cst.Attribute) and call.func.attr.value in GRADIO_LISTENERS
            callee = self.semantics.callee(call)
            if not listener and callee not in ("gradio.Interface", "gradio.ChatInterface"):
                continue
            positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
            fn = keywords.get("fn", positional[0] if positional else None)
            if not (isinstance(fn, cst.Name) and fn.value == name):
                continue
            if callee == "gradio.ChatInterface":
                # fn(message, history, ...): the message is the chat box's text unless multimodal=True.
                multimodal = keywords.get("multimodal")
                text = multimodal is None or (isinstance(multimodal, cst.Name) and multimodal.value == "False")
                found.append([cst.SimpleString('"text"') if text else None])
                continue
            inputs = keywords.get("inputs", positional[1] if len(positional) > 1 else None)
            if isinstance(inputs, (cst.List, cst.Tuple)):
                found.append([e.value if isinstance(e, cst.Element) else None for e in inputs.elements])
            else:
                found.append([inputs])
        return found

    def _is_text_box(self, component: cst.BaseExpression) -> bool:
        if isinstance(component, cst.SimpleString):
            return component.evaluated_value in _TEXT_SHORTCUTS if isinstance(component.evaluated_value, str) else False
        if isinstance(component, cst.Call):
            return self.semantics.callee(component) in _TEXT_COMPONENTS
        if isinstance(component, cst.Name):
            value = self._module_binding(component.value)
            return isinstance(value, cst.Call) and self.semantics.callee(value) in _TEXT_COMPONENTS
        return False

    def _module_binding(self, name: str) -> cst.BaseExpression | None:
        """The one value the module binds to ``name`` at its top level, when that is its only binding."""
        if self._bindings is None:
            self._bindings = module_bindings(self.module)
        values = self._bindings.get(name, [])
        return values[0] if len(values) == 1 else None
