"""Validate over Gradio apps: which files are Gradio's own servers, the event found from what gradio_client
describes, and the launcher serving a real Gradio app (no model) called through Gradio's HTTP API.

The API descriptions below are what ``gradio_client.Client.view_api(return_format="dict")`` returned for
apps of these shapes under gradio 6.31 / gradio_client 2.7.2, with the JSON schemas (``type``) and
``example_input`` that discovery does not read left out.
"""

from __future__ import annotations

import asyncio

import pytest

from vllm_lint.reference.gradio_apps import is_gradio_app
from vllm_lint.reference.validate.errors import ValidationError
from vllm_lint.reference.validate.gradio_endpoint import GradioEndpoint, endpoint_from_api
from vllm_lint.reference.validate.prepare import make_runnable, unservable

from .conftest import require_modules


def _param(name, component="Textbox", python_type="str", label=None, default=None, has_default=False):
    return {"label": label if label is not None else name, "parameter_name": name, "parameter_has_default": has_default,
            "parameter_default": default, "python_type": {"type": python_type, "description": ""}, "component": component}


def _returns(component="Textbox", python_type="str", label="Answer"):
    return [{"label": label, "python_type": {"type": python_type, "description": ""}, "component": component}]


# VLL101's example 11 (a Textbox and a Slider into `respond`), with a "Clear" button beside it.
BLOCKS_API = {"named_endpoints": {
    "/respond": {"parameters": [_param("prompt", label="Prompt"),
                                _param("max_new_tokens", "Slider", "float", "New tokens", 128, True)],
                 "returns": _returns(), "description": ""},
    "/lambda": {"parameters": [], "returns": _returns(), "description": ""}},
    "unnamed_endpoints": {}}


def test_the_event_of_a_blocks_app_takes_the_prompt_and_the_sliders_starting_value():
    endpoint = endpoint_from_api(BLOCKS_API)
    assert endpoint == GradioEndpoint("/respond", "prompt", ("prompt", "max_new_tokens"), (None, 128), 0)
    assert endpoint.inputs("hi") == ["hi", 128]
    assert endpoint.describe() == "Gradio event /respond with the prompt in its Textbox 'prompt'; max_new_tokens=128 as the page starts"
    assert endpoint.stream_field is None


def test_a_chat_interface_takes_its_message_beside_a_system_textbox():
    api = {"named_endpoints": {"/chat": {
        "parameters": [_param("message", label=""), _param("system", label="System", default="You are helpful.", has_default=True)],
        "returns": _returns("Json", "str | float | bool | list | dict", "Response")}}}
    endpoint = endpoint_from_api(api)
    assert (endpoint.api_name, endpoint.field, endpoint.inputs("hi")) == ("/chat", "message", ["hi", "You are helpful."])


def test_inputs_without_a_starting_value_get_what_the_page_sends():
    api = {"named_endpoints": {"/lambda": {
        "parameters": [_param("text"), _param("n", "Number", "float"), _param("style", label="Style")],
        "returns": _returns(label="output")}}}
    # Two Textboxes, one named like a prompt; the Number left empty sends None, the other Textbox "".
    assert endpoint_from_api(api).inputs("hi") == ["hi", None, ""]


def test_a_function_bound_to_two_triggers_is_one_event():
    """``msg.submit(respond, ...)`` and ``btn.click(respond, ...)``: Gradio names the second /respond_1."""
    chat = [_param("message", label="parameter_2"), _param("history", "Chatbot", "list[dict]", "parameter_1", [], True)]
    returns = _returns(label="value_2") + _returns("Chatbot", "list[dict]", "value_1")
    api = {"named_endpoints": {"/respond": {"parameters": chat, "returns": returns},
                               "/respond_1": {"parameters": chat, "returns": returns},
                               "/lambda": {"parameters": [], "returns": returns[1:]}}}
    assert endpoint_from_api(api) == GradioEndpoint("/respond", "message", ("message", "history"), (None, []), 0)


def test_no_event_that_takes_a_prompt_is_refused_saying_why():
    api = {"named_endpoints": {"/lambda": {"parameters": [], "returns": _returns()},
                               "/pick": {"parameters": [_param("a"), _param("b")], "returns": _returns()},
                               "/log": {"parameters": [_param("prompt")], "returns": []}}}
    with pytest.raises(ValidationError) as raised:
        endpoint_from_api(api)
    assert str(raised.value) == (
        "no event of the Gradio app takes the prompt in a Textbox and answers with an output (/lambda (no Textbox input);"
        " /pick (2 Textbox inputs, none named like a prompt); /log (no output)): validate sends each prompt to one")
    with pytest.raises(ValidationError, match=r"\(it has no named event\)"):
        endpoint_from_api({"named_endpoints": {}, "unnamed_endpoints": {}})


def test_two_events_that_take_a_prompt_are_refused():
    api = {"named_endpoints": {"/generate": {"parameters": [_param("prompt")], "returns": _returns()},
                               "/summarise": {"parameters": [_param("text")], "returns": _returns()}}}
    with pytest.raises(ValidationError) as raised:
        endpoint_from_api(api)
    assert str(raised.value) == ("more than one event of the Gradio app takes a prompt in a Textbox "
                                 "(/generate, /summarise): validate loads one")


INTERFACE = "import gradio as gr\ngr.Interface(fn=f, inputs='text', outputs='text').launch()\n"
MOUNTED = ("import gradio as gr\nfrom fastapi import FastAPI\napp = FastAPI()\n"
           "app = gr.mount_gradio_app(app, gr.Interface(f, 'text', 'text'), path='/')\n")


def test_gradio_apps_are_served_and_mounted_ones_are_not():
    assert is_gradio_app(INTERFACE) and is_gradio_app("from gradio import Blocks\ndemo = Blocks()\n")
    assert not is_gradio_app(MOUNTED) and not is_gradio_app("import fastapi\n") and not is_gradio_app("def (")
    assert not is_gradio_app("import gradio as gr\nprint(gr.__version__)\n")  # builds no app
    assert unservable(INTERFACE) is None
    assert unservable(MOUNTED).startswith("Gradio code that mounts its app into another app (or builds none) and no POST route")
    assert make_runnable(INTERFACE) == (INTERFACE, [])  # Gradio serves it: no FastAPI app injected


INTERFACE_APP = '''import gradio as gr


def shout(text, times):
    return (text.upper() + "!") * int(times)


demo = gr.Interface(shout, [gr.Textbox(label="Text"), gr.Number(value=2, label="Times")], gr.Textbox(), api_name="shout")

if __name__ == "__main__":
    demo.launch(server_name="0.0.0.0", server_port=7860, share=True)
'''

NEVER_LAUNCHED = '''import gradio as gr

with gr.Blocks() as app:
    prompt = gr.Textbox(label="Prompt")
    out = gr.Textbox()
    prompt.submit(lambda p: p[::-1], prompt, out, api_name="reverse")
'''


@pytest.mark.parametrize(("source", "described", "answers"), [
    (INTERFACE_APP, "Gradio event /shout with the prompt in its Textbox 'text'; times=2 as the page starts",
     [["A!A!"], ["BC!BC!"]]),
    (NEVER_LAUNCHED, "Gradio event /reverse with the prompt in its Textbox 'p'", [["a"], ["cb"]]),
], ids=["Interface, launch() on its own port with a share link", "Blocks never launched"])
def test_the_launcher_serves_a_gradio_app_called_through_its_http_api(tmp_path, source, described, answers):
    """The file runs as __main__ on the launcher's port (no share link); gradio_client describes its event,
    the load goes through Gradio's queue, and the launcher's token-count route is there."""
    require_modules("gradio", "gradio_client", "httpx", what="the Gradio launcher test")
    import httpx

    from vllm_lint.reference.validate.gradio_endpoint import discover_gradio_endpoint

    from .conftest import launched

    (tmp_path / "app.py").write_text(source)
    with launched(tmp_path, "app.py", "/gradio_api/info", timeout=120) as base:
        endpoint = discover_gradio_endpoint(base)
        assert endpoint.describe() == described
        result = asyncio.run(endpoint.run_load(base, ["a", "bc"].__getitem__, requests=2, concurrency=2, timeout=30,
                                               max_seconds=60, count_tokens=None, progress=None))
        assert [(r.index, r.status, r.body, r.content_type, r.error) for r in result.records] == [
            (0, 200, answers[0], "application/json", None), (1, 200, answers[1], "application/json", None)]
        assert all(r.latency >= r.ttfb > 0 for r in result.records)
        assert httpx.get(base + "/__vllm_lint__/generated_tokens", trust_env=False).json() == {"generated_tokens": 0}
        assert "public URL" not in (tmp_path / "launch.log").read_text(errors="replace")


def test_a_messages_type_is_let_through_where_gradio_takes_no_type():
    """``ChatInterface(fn, type="messages")`` (Gradio 4.38-5) runs on a Gradio without ``type``, whose history is
    in that format; another type, or a component that still takes ``type``, is left to Gradio."""
    from types import SimpleNamespace

    from vllm_lint.reference.gradio_apps import accept_messages_type

    class ChatInterface:
        def __init__(self, fn, **kwargs):
            self.fn, self.kwargs = fn, kwargs

    class Chatbot:
        def __init__(self, type="tuples", **kwargs):
            self.type = type

    accept_messages_type(SimpleNamespace(ChatInterface=ChatInterface, Chatbot=Chatbot))
    assert ChatInterface(print, type="messages", title="t").kwargs == {"title": "t"}
    assert ChatInterface(print, type="tuples").kwargs == {"type": "tuples"}
    assert Chatbot(type="messages").type == "messages"
