"""The AsyncLLMEngine rewrite (VLL101/VLL103's unsafe fix), the VLL502 fix and the shared import helpers.

The YAML examples (tests/test_rule_examples.py) pin whole fixed files; these tests pin the
edges: why a fix is refused, what survives byte for byte, and the import edits on their own.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.imports import NameTaken, ensure_imported, remove_unused_imports
from vllm_lint.rulebook import load_rules

from lintutil import lint_text

NO_FIX = "; no automatic fix: "
FALLBACK = "; the engine rewrite is refused ("  # offload.py's fix is offered instead (test_offload_fallback.py)


def says_why_refused(finding, reason: str) -> bool:
    """The finding says why the engine rewrite is refused: with no fix, or with offload.py's fallback (which of
    the two each case gets, its snapshot records)."""
    form = FALLBACK if finding.fix is not None else NO_FIX
    return form in finding.message and reason in finding.message


def fixed(tmp_path: Path, source: str, name: str = "server.py", **settings) -> tuple[str, dict[str, int]]:
    path = tmp_path / name
    path.write_bytes(source.encode())
    outcome = fix_file(path, settings=Settings(root=tmp_path, **settings))
    return outcome.fixed.decode(), dict(outcome.applied)


def findings(tmp_path: Path, source: str, code: str):
    return [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code == code]


APP = """\
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="gpt2")
"""

# A LitServe API whose setup() builds the pipeline; each case adds (or leaves out) how it is served.
LITSERVE_API = """\
        import litserve as ls
        from transformers import pipeline
        class A(ls.LitAPI):
            def setup(self, device):
                self.pipe = pipeline("text-generation", model="gpt2")
            def predict(self, prompt: str):
                return self.pipe(prompt)
"""

# A FastAPI handler streaming the pipeline through a TextIteratorStreamer fed by a thread.
STREAMER_HANDLER = APP.replace("from transformers import pipeline", "from threading import Thread\nfrom fastapi.responses import StreamingResponse\nfrom transformers import TextIteratorStreamer, pipeline") + """
@app.post("/g")
def g(prompt: str):
    streamer = TextIteratorStreamer(pipe.tokenizer, skip_prompt=True)
    thread = Thread(target=pipe, args=(prompt,), kwargs={"streamer": streamer, "max_new_tokens": 64})
    thread.start()
    return StreamingResponse(streamer, media_type="text/plain")
"""

# A `def` route that returns what the module's pipeline gives its prompt.
PIPE_IN_DEF_HANDLER = """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
"""

REFUSED = {
    "a text-generation pipeline around an encoder-decoder model": (
        """\
        from fastapi import FastAPI
        from transformers import T5ForConditionalGeneration, pipeline
        app = FastAPI()
        model = T5ForConditionalGeneration.from_pretrained("t5-small")
        pipe = pipeline("text-generation", model=model, tokenizer="t5-small")
        @app.post("/g")
        def g(prompt: str):
            return pipe(prompt)[0]["generated_text"]
        """,
        "`T5ForConditionalGeneration` loads an encoder-decoder model (T5, BART, BlenderBot...), which vLLM itself does not serve",
    ),
    "async flask view": (
        """\
        from flask import Flask, request
        from transformers import pipeline
        app = Flask(__name__)
        pipe = pipeline("text-generation", model="gpt2")
        @app.post("/g")
        async def g():
            return pipe(request.form["prompt"])[0]["generated_text"]
        """,
        "Flask runs each async view in an event loop of its own",
    ),
    "gradio input that is not a text box": (
        """\
        import gradio as gr
        from transformers import pipeline
        pipe = pipeline("text-generation", model="gpt2")
        def g(prompt):
            return pipe(prompt)[0]["generated_text"]
        with gr.Blocks() as demo:
            box = gr.Textbox()
            image = gr.Image()
            gr.Button("a").click(g, inputs=box, outputs=box)
            gr.Button("b").click(g, inputs=image, outputs=box)
        """,
        "is one string",
    ),
    "gradio text box rebound": (
        """\
        import gradio as gr
        from transformers import pipeline
        pipe = pipeline("text-generation", model="gpt2")
        def g(prompt):
            return pipe(prompt)[0]["generated_text"]
        with gr.Blocks() as demo:
            box = gr.Textbox()
            box = gr.Number()
            gr.Button("a").click(g, inputs=[box], outputs=box)
        """,
        "is one string",
    ),
    "escaping object": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt), pipe.tokenizer
""",
        "uses the pipeline object other than by calling it",
    ),
    "helper also called outside a handler": (
        APP + """
def run(prompt):
    return pipe(prompt)

def warm_up():
    run("hello")

@app.post("/g")
def g(prompt: str):
    return run(prompt)
""",
        "run() is also called from warm_up() (`run(\"hello\")`), which is not a request handler",
    ),
    "helper called at import": (
        APP + """
def run(prompt):
    return pipe(prompt)

run("warm-up")

@app.post("/g")
def g(prompt: str):
    return run(prompt)
""",
        "run() is also called at module level (`run(\"warm-up\")`), outside a request handler",
    ),
    "helper handed to a thread pool": (
        APP + """
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor()

def run(prompt: str):
    return pipe(prompt)

@app.post("/g")
def g(prompt: str):
    return run(prompt)

@app.post("/later")
def later(prompt: str):
    return {"queued": bool(pool.submit(run, prompt))}
""",
        "uses run() other than by calling it",
    ),
    "decorated helper": (
        APP + """
import functools

@functools.lru_cache
def run(prompt: str):
    return pipe(prompt)

@app.post("/g")
def g(prompt: str):
    return run(prompt)
""",
        "run() is decorated with @functools.lru_cache",
    ),
    "constructor argument of unknown type": (
        APP.replace('pipe = pipeline("text-generation", model="gpt2")\n', "import sys\n") + """
class Generator:
    def __init__(self, name):
        self.pipe = pipeline("text-generation", model=name)
    def generate(self, prompt: str):
        return self.pipe(prompt)

generator = Generator(sys.argv[1])

@app.post("/g")
def g(prompt: str):
    return generator.generate(prompt)
""",
        "cannot tell that model=`name` is a model name or path",
    ),
    "class built twice": (
        APP.replace('pipe = pipeline("text-generation", model="gpt2")\n', "") + """
class Generator:
    def __init__(self, name):
        self.pipe = pipeline("text-generation", model=name)
    def generate(self, prompt: str):
        return self.pipe(prompt)

small = Generator("gpt2")
large = Generator("gpt2-large")

@app.post("/g")
def g(prompt: str):
    return small.generate(prompt) + large.generate(prompt)
""",
        "Generator is built 2 times",
    ),
    "object handed elsewhere": (
        APP.replace('pipe = pipeline("text-generation", model="gpt2")\n', "") + """
class Generator:
    def __init__(self):
        self.pipe = pipeline("text-generation", model="gpt2")
    def generate(self, prompt: str):
        return self.pipe(prompt)

generator = Generator()
registry = {"default": generator}

@app.post("/g")
def g(prompt: str):
    return generator.generate(prompt)
""",
        "uses the Generator object other than by its attributes",
    ),
    "handler called directly": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt)

def cli():
    print(g("hello"))
""",
        "would hand that caller a coroutine",
    ),
    "blocking call in a sync handler": (
        APP + """
import time

@app.post("/g")
def g(prompt: str):
    time.sleep(0.1)
    return pipe(prompt)
""",
        "also calls `time.sleep(0.1)`, which would block the event loop",
    ),
    "streamer": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt, streamer=object())
""",
        "streamer= cannot be carried over",
    ),
    "a streamer that also sends the prompt": (
        STREAMER_HANDLER.replace(", skip_prompt=True", ""),
        "also sends the prompt's text (no skip_prompt=True); the engine's stream carries the new text only",
    ),
    "a streaming thread that is joined": (
        STREAMER_HANDLER.replace("    thread.start()\n", "    thread.start()\n    thread.join()\n"),
        "is not started right after it is made, or the thread is used again (joined, say)",
    ),
    "a streamer read in the handler": (
        STREAMER_HANDLER.replace(
            '    return StreamingResponse(streamer, media_type="text/plain")\n', '    return "".join(piece for piece in streamer)\n'
        ),
        "the streamer is used as `for piece in streamer`; only `return StreamingResponse(streamer, ...)` is rewritten",
    ),
    "a streamed thread fed tokenized inputs": (
        STREAMER_HANDLER.replace('kwargs={"streamer": streamer, "max_new_tokens": 64}', "kwargs=dict(inputs, streamer=streamer)"),
        "the thread's kwargs `dict(inputs, streamer=streamer)` are not a dict of literal keys",
    ),
    "non-text task": (
        APP.replace('"text-generation"', '"summarization"') + PIPE_IN_DEF_HANDLER,
        "task is 'summarization'",
    ),
    "no task": (
        APP.replace('pipeline("text-generation", ', 'pipeline(') + PIPE_IN_DEF_HANDLER,
        "the pipeline task is not given, so the model's Hub page (its pipeline_tag) picks it; name it as pipeline(\"text-generation\", model=...)",
    ),
    "no model but a revision": (
        APP.replace('model="gpt2"', 'revision="main"') + PIPE_IN_DEF_HANDLER,
        "the pipeline names no model but a revision= (of the task's default model); name the model with model=",
    ),
    "event hook registered by a call": (
        APP + """
def hello():
    print("hello")

app.add_event_handler("startup", hello)

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "FastAPI stops running once a lifespan handler is given",
    ),
    "evaluation order": (
        APP + """
import time

@app.post("/g")
def g(prompt: str):
    return {"t": time.time(), "out": pipe(prompt)}
""",
        "could change which of the two runs first",
    ),
    "conditional call": (
        APP + """
@app.post("/g")
def g(prompt: str, cached: str = ""):
    return cached or pipe(prompt)
""",
        "evaluated conditionally",
    ),
    "call outside a handler": (
        APP + """
pipe("warm up")

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "runs outside a request handler",
    ),
    "two models": (
        APP + """
other = pipeline("text-generation", model="gpt2")

@app.post("/g")
def g(prompt: str):
    return pipe(prompt), other(prompt)
""",
        "builds 2 models",
    ),
    "name taken": (
        APP + """
uuid4 = "not the function"

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "uuid4 is already used",
    ),
    "served by its import string under __main__": (
        """\
        import uvicorn
        from fastapi import FastAPI
        from transformers import pipeline
        app = FastAPI()
        @app.post("/g")
        def g(prompt: str):
            return pipe(prompt)
        if __name__ == "__main__":
            pipe = pipeline("text-generation", model="gpt2")
            uvicorn.run("server:app")
        """,
        "serves the app by its import string, which imports the module again",
    ),
    "built under __main__, never served there": (
        """\
        from fastapi import FastAPI
        from transformers import pipeline
        app = FastAPI()
        @app.post("/g")
        def g(prompt: str):
            return pipe(prompt)
        if __name__ == "__main__":
            pipe = pipeline("text-generation", model="gpt2")
        """,
        "that block does not then serve `app` with uvicorn.run(...)",
    ),
    "a shutdown hook that uses the model": (
        """\
        from fastapi import FastAPI
        from transformers import pipeline
        app = FastAPI()
        pipe = None
        @app.on_event("startup")
        def load():
            global pipe
            pipe = pipeline("text-generation", model="gpt2")
        @app.on_event("shutdown")
        def unload():
            if pipe is not None:
                print("unloading")
        @app.post("/g")
        async def g(prompt: str):
            return pipe(prompt)
        """,
        "the shutdown hook unload() uses `pipe`",
    ),
    "a Ray Serve deployment using a module-level pipeline": (
        """\
        from ray import serve
        from transformers import pipeline
        pipe = pipeline("text-generation", model="gpt2")
        @serve.deployment
        class D:
            async def __call__(self, prompt: str):
                return pipe(prompt)
        """,
        "outside the Ray Serve deployment that uses it; build it in the class's __init__ (one per replica)",
    ),
    "a BentoML service using a module-level pipeline": (
        """\
        import bentoml
        from transformers import pipeline
        pipe = pipeline("text-generation", model="gpt2")
        @bentoml.service
        class S:
            @bentoml.api
            def generate(self, prompt: str) -> str:
                return pipe(prompt)[0]["generated_text"]
        """,
        "outside the BentoML service that uses it; build it in the class's __init__ (one per replica)",
    ),
    "a BentoML service with several workers": (
        """\
        import bentoml
        from transformers import pipeline
        @bentoml.service(workers=4)
        class S:
            def __init__(self) -> None:
                self.pipe = pipeline("text-generation", model="gpt2")
            @bentoml.api
            def generate(self, prompt: str) -> str:
                return self.pipe(prompt)[0]["generated_text"]
        """,
        "starts several workers, each of which would build an engine taking most of the GPU's memory",
    ),
    "a BentoML task": (
        """\
        import bentoml
        from transformers import pipeline
        @bentoml.service
        class S:
            def __init__(self) -> None:
                self.pipe = pipeline("text-generation", model="gpt2")
            @bentoml.task
            def generate(self, prompt: str) -> str:
                return self.pipe(prompt)[0]["generated_text"]
        """,
        "generate() is not a @bentoml.api method; only BentoML's API methods are rewritten",
    ),
    "a LitServer that starts several workers": (
        LITSERVE_API + """\
        ls.LitServer(A(), accelerator="auto", devices=2).run()
        """,
        "starts several workers (devices= or workers_per_device= above 1), each of which would build an engine on GPU 0; pass devices=1",
    ),
    "a batching LitServe API": (
        LITSERVE_API + """\
        ls.LitServer(A(max_batch_size=8, batch_timeout=0.05), devices=1).run()
        """,
        "sets batch_timeout, max_batch_size; LitServe's async predict takes neither batching nor a stream of its own",
    ),
    "a LitServe API never instantiated here": (
        LITSERVE_API,
        "A is not instantiated in this module; the rewrite passes enable_async=True where it is",
    ),
    "a LitServe API with its own __init__": (
        LITSERVE_API.replace("    def setup", "    def __init__(self):\n                super().__init__()\n            def setup") + """\
        ls.LitServer(A(), devices=1).run()
        """,
        "A defines __init__; pass enable_async=True to LitAPI.__init__ there",
    ),
    "a LitServe API whose decode_request may return a dict": (
        LITSERVE_API.replace("predict(self, prompt: str)", "predict(self, prompt)").replace(
            "    def predict", "    def decode_request(self, request):\n                return request['prompt']\n            def predict"
        ) + """\
        ls.LitServer(A(), devices=1).run()
        """,
        "cannot tell that the pipeline input `prompt` is one string",
    ),
    "the model called in a LitServe API's decode_request": (
        LITSERVE_API.replace("def predict(self, prompt: str)", "def decode_request(self, prompt: str)") + """\
        ls.LitServer(A(), devices=1).run()
        """,
        "the pipeline is called in decode_request(); only a LitServe API's predict() is rewritten",
    ),
    "the model's attribute read from outside its class": (
        """\
        from ray import serve
        from transformers import pipeline
        @serve.deployment
        class D:
            def __init__(self):
                self.pipe = pipeline("text-generation", model="gpt2")
            async def __call__(self, prompt: str):
                return self.pipe(prompt)
        def tokenizer_of(d):
            return d.pipe.tokenizer
        """,
        "reads the model's attribute from outside D",
    ),
    "grpc async method without grpc.aio": (
        """\
        import grpc
        from transformers import pipeline
        import gen_pb2_grpc
        class S(gen_pb2_grpc.GenServicer):
            def __init__(self):
                self.pipe = pipeline("text-generation", model="gpt2")
            async def Generate(self, request, context):
                return self.pipe(str(request.prompt))
        server = grpc.server(None)
        """,
        "Generate() is an async servicer method, but the module does not serve it with grpc.aio.server() alone",
    ),
    "grpc.aio servicer of a module-level pipeline": (
        """\
        import grpc
        from transformers import pipeline
        import gen_pb2_grpc
        pipe = pipeline("text-generation", model="gpt2")
        class S(gen_pb2_grpc.GenServicer):
            async def Generate(self, request, context):
                return pipe(str(request.prompt))
        async def serve():
            server = grpc.aio.server()
        """,
        "the pipeline is built at module level, outside the grpc.aio servicer that uses it; build it in the servicer's __init__",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_rewrite_says_why(tmp_path, case, snapshots):
    source, reason = REFUSED[case]
    found = findings(tmp_path, source, "VLL101")
    assert len(found) == (2 if case == "two models" else 1)
    assert all(says_why_refused(d, reason) for d in found), [d.message for d in found]
    snapshots.assert_match(f"rewrite-refusals/VLL101 {case}", "".join(f"{d.start.line}:{d.start.column}: {d.message}\n" for d in found))


LLM_REFUSED = {
    "generate_async neither awaited nor streamed": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate_async(prompt)
        """,
        "is not awaited, so what it was meant to return is unknown",
    ),
    "LLM-only keyword": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m", chat_template="x")
        @app.post("/g")
        def g(prompt: str):
            return llm.generate(prompt)
        """,
        "chat_template= is not an AsyncEngineArgs field",
    ),
    "LLM.chat with a priority": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        def g(prompt: str):
            return llm.chat([{"role": "user", "content": prompt}], priority=1)[0].outputs[0].text
        """,
        "LLM.chat(..., priority=...) is not carried onto the engine",
    ),
    "LLM.chat with per-conversation sampling params": (
        """\
        from fastapi import FastAPI
        from vllm import LLM, SamplingParams
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        def g(prompt: str):
            return llm.chat([[{"role": "user", "content": prompt}]], [SamplingParams()])[0].outputs[0].text
        """,
        "a list of per-conversation SamplingParams",
    ),
    "generate_async stream outside an async for": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return list(llm.generate_async(prompt, stream=True))
        """,
        "is a stream that is not iterated by an `async for`",
    ),
    "lora_request through the bridge": (
        """\
        from flask import Flask, request
        from vllm import LLM
        app = Flask(__name__)
        llm = LLM(model="m")
        @app.post("/g")
        def g():
            return llm.generate(request.form["prompt"], lora_request=None)[0].outputs[0].text
        """,
        "lora_request=...) is not carried through the engine's thread",
    ),
    "bridged helper called at import": (
        """\
        from flask import Flask, request
        from vllm import LLM
        app = Flask(__name__)
        llm = LLM(model="m")
        def complete(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        complete("warm-up")
        @app.post("/g")
        def g():
            return complete(request.form["prompt"])
        """,
        "complete() is also called at module level (`complete(\"warm-up\")`), as the module is imported",
    ),
    "a load option that changes before the app runs": (
        """\
        import uvicorn
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        @app.post("/g")
        def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        if __name__ == "__main__":
            name = "gpt2"
            llm = LLM(model=name)
            name = "other"
            uvicorn.run(app)
        """,
        "`name` changes between the LLM's load and uvicorn.run(...)",
    ),
    "a spread dict changed after its literal": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        params = {"model": "m"}
        params["quantization"] = "awq"
        llm = LLM(**params)
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "`params` is used besides its binding and LLM(**params); its keys could change before the LLM is built",
    ),
    "a spread dict with a computed key": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        class Server:
            def __init__(self, key):
                params = {"model": "m", key: 1}
                self.llm = LLM(**params)
        server = Server("seed")
        @app.post("/g")
        async def g(prompt: str):
            return server.llm.generate(prompt)[0].outputs[0].text
        """,
        "LLM(**params) gets a dict whose keys are not all string constants",
    ),
    "a spread dict with a field AsyncEngineArgs lacks": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        params = {"model": "m", "chat_template": "t"}
        llm = LLM(**params)
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "chat_template= is not an AsyncEngineArgs field",
    ),
    "a loader method also called after __init__": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        class Server:
            def __init__(self):
                self.llm = None
                self.load_model()
            def load_model(self):
                self.llm = LLM(model="m")
        server = Server()
        @app.post("/reload")
        async def reload():
            server.load_model()
        @app.post("/g")
        async def g(prompt: str):
            return server.llm.generate(prompt)[0].outputs[0].text
        """,
        "the LLM is held on an object (`self.llm`)",
    ),
    "the LLM's variable assigned again after it": (
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        model = os.environ["MODEL"]
        model = LLM(model="m")
        model = os.environ["OTHER"]
        @app.post("/g")
        async def g(prompt: str):
            return model.generate(prompt)[0].outputs[0].text
        """,
        "`model = os.environ[\"OTHER\"]` assigns the LLM variable again",
    ),
    "the LLM's variable's earlier value read after it": (
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        model = os.environ["MODEL"]
        model = LLM(model="m")
        name = model.split("/")[-1]
        @app.post("/g")
        async def g(prompt: str):
            return model.generate(prompt)[0].outputs[0].text
        """,
        "`model.split(\"/\")` calls LLM.split(); only LLM.generate() and LLM.chat() map onto the engine",
    ),
    "the LLM built from its variable's earlier value": (
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        model = os.environ["MODEL"]
        model = LLM(model=model)
        @app.post("/g")
        async def g(prompt: str):
            return model.generate(prompt)[0].outputs[0].text
        """,
        "`model = LLM(model=model)` reads the earlier value of `model`, which the engine built at start-up could no longer see",
    ),
    "an earlier value read by a function": (
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        model = os.environ["MODEL"]
        def name():
            return model.split("/")[-1]
        model = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return model.generate(prompt)[0].outputs[0].text
        """,
        "`model.split(\"/\")` calls LLM.split(); only LLM.generate() and LLM.chat() map onto the engine",
    ),
    "a fallback LLM in a module-level try": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        try:
            llm = LLM(model="m", enable_lora=True)
        except Exception:
            llm = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "the LLM is built by the branches of an `if`/`try` at module level; move that block into a FastAPI lifespan handler",
    ),
    "an except that builds no fallback": (
        """\
        from contextlib import asynccontextmanager
        from fastapi import FastAPI
        from vllm import LLM
        llm = None
        @asynccontextmanager
        async def lifespan(app: FastAPI):
            global llm
            try:
                llm = LLM(model="m", enable_lora=True)
            except ValueError:
                llm = LLM(model="m")
            except Exception:
                pass
            yield
        app = FastAPI(lifespan=lifespan)
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "the module builds 2 models; one engine per GPU",
    ),
    "an if without an else building a second LLM": (
        """\
        import os
        from contextlib import asynccontextmanager
        from fastapi import FastAPI
        from vllm import LLM
        llm = None
        @asynccontextmanager
        async def lifespan(app: FastAPI):
            global llm
            llm = LLM(model="m")
            if os.environ.get("LORA"):
                llm = LLM(model="m", enable_lora=True)
            yield
        app = FastAPI(lifespan=lifespan)
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "the module builds 2 models; one engine per GPU",
    ),
    "an LLM built in a module-level if": (
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        if os.environ.get("SERVE"):
            llm = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return llm.generate(prompt)[0].outputs[0].text
        """,
        "the LLM is built inside an `if`/`try` block at module level; build it in a statement of the module's own",
    ),
    "a batch's lora_request from a parameter": (
        """\
        from typing import List
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m", enable_lora=True)
        adapters = {}
        @app.post("/g")
        async def g(prompts: List[str]):
            lora_request = adapters.get("default")
            outputs = llm.generate(prompts, lora_request=lora_request)
            return [o.outputs[0].text for o in outputs]
        """,
        "over a list of prompts may be one adapter for all or a list of one per prompt",
    ),
}


@pytest.mark.parametrize("case", sorted(LLM_REFUSED))
def test_refused_llm_rewrite_says_why(tmp_path, case, snapshots):
    source, reason = LLM_REFUSED[case]
    finding, *others = findings(tmp_path, source, "VLL103")  # one per LLM(...) where a module builds several
    assert all(other.message == finding.message for other in others)
    assert says_why_refused(finding, reason), finding.message
    snapshots.assert_match(f"rewrite-refusals/VLL103 {case}", f"{finding.start.line}:{finding.start.column}: {finding.message}\n")


# A transformers model's generate chain (VLL102): where its behaviour cannot be kept on the engine.
HF_MODEL = """\
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer
        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2")
"""
HF_REFUSED = {
    "a custom logits processor": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            out = model.generate(**inputs, logits_processor=[object()])
            return tokenizer.decode(out[0])
        """,
        "passes logits_processor=: a custom logits processor runs Python on the model's logits",
    ),
    "beam search": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            out = model.generate(**inputs, num_beams=4)
            return tokenizer.decode(out[0])
        """,
        "passes num_beams=: beam search is a separate API in vLLM",
    ),
    "hidden states": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            out = model.generate(**inputs, output_hidden_states=True, return_dict_in_generate=True)
            return tokenizer.decode(out.sequences[0])
        """,
        "passes output_hidden_states=: vLLM's generate does not return hidden states",
    ),
    "the output read as a tensor": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            out = model.generate(**inputs, max_new_tokens=8)
            return {"ids": out[0].tolist(), "shape": list(out.shape)}
        """,
        "`out.shape` reads the generate output as a tensor",
    ),
    "the output indexed as a 2-D tensor": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            input_ids = tokenizer.encode(prompt, return_tensors="pt")
            out = model.generate(input_ids, max_new_tokens=8)
            return tokenizer.batch_decode(out[:, input_ids.shape[-1]:], skip_special_tokens=True)[0]
        """,
        "`out[:, input_ids.shape[-1]:]` indexes the generate output as a 2-D tensor",
    ),
    "a tokenizer call that returns overflowing tokens": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt", return_overflowing_tokens=True)
            out = model.generate(**inputs, max_new_tokens=8)
            return tokenizer.decode(out[0])
        """,
        "the tokenizer call passes return_overflowing_tokens=, which the engine's own tokenisation of the prompt string would not do",
    ),
    "a model name held on the object and set again": (
        """\
        import bentoml
        from transformers import AutoModelForCausalLM, AutoTokenizer
        @bentoml.service
        class Service:
            def __init__(self):
                self.model_id = "gpt2"
                self.tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                self.model = AutoModelForCausalLM.from_pretrained(self.model_id)
            @bentoml.api
            def generate(self, prompt: str) -> str:
                self.model_id = prompt
                inputs = self.tokenizer(prompt, return_tensors="pt")
                return self.tokenizer.decode(self.model.generate(**inputs, max_new_tokens=8)[0])
        """,
        "cannot tell that the model `self.model_id` is a model name or path the engine can load too",
    ),
    "the model's head changed in Python": (
        HF_MODEL + """\
        model.lm_head = None
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            return tokenizer.decode(model.generate(**inputs)[0])
        """,
        "`model.lm_head` uses the model other than by model.generate(...)",
    ),
    "input ids taken from a tokenizer output read again": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            input_ids = inputs["input_ids"].to(model.device)
            out = model.generate(input_ids, attention_mask=inputs["attention_mask"], max_new_tokens=8)
            return tokenizer.decode(out[0])
        """,
        "`inputs` (the tokenizer's output) is read other than for the input ids given to generate()",
    ),
    "a thread running model.generate for a streamer": (
        """\
        from threading import Thread
        from fastapi import FastAPI
        from fastapi.responses import StreamingResponse
        from transformers import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer
        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            streamer = TextIteratorStreamer(tokenizer, skip_prompt=True)
            thread = Thread(target=model.generate, kwargs=dict(**inputs, streamer=streamer))
            thread.start()
            return StreamingResponse(streamer)
        """,
        "runs model.generate in a thread that feeds a TextIteratorStreamer; the rewrite streams it only in a LitServe predict()",
    ),
    "a model name set again after the model is loaded": (
        """\
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer
        MODEL = "gpt2"
        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained(MODEL)
        model = AutoModelForCausalLM.from_pretrained(MODEL)
        MODEL = "distilgpt2"
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            return tokenizer.decode(model.generate(**inputs)[0])
        """,
        "cannot tell that the model `MODEL` is a model name or path the engine can load too",
    ),
    "a local model name bound twice": (
        """\
        import litserve as ls
        from transformers import AutoModelForCausalLM, AutoTokenizer
        class API(ls.LitAPI):
            def setup(self, device):
                model_id = "gpt2"
                if device == "cpu":
                    model_id = load_name()
                self.tokenizer = AutoTokenizer.from_pretrained(model_id)
                self.model = AutoModelForCausalLM.from_pretrained(model_id)
            def predict(self, prompt: str):
                inputs = self.tokenizer(prompt, return_tensors="pt")
                return self.tokenizer.decode(self.model.generate(**inputs)[0])
        server = ls.LitServer(API(), devices=1)
        """,
        "cannot tell that the model `model_id` is a model name or path the engine can load too",
    ),
    "an encoder-decoder model": (
        """\
        from fastapi import FastAPI
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained("google/flan-t5-base")
        model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-base")
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, max_length=512, truncation=True, return_tensors="pt")
            return tokenizer.decode(model.generate(**inputs)[0], skip_special_tokens=True)
        """,
        "`AutoModelForSeq2SeqLM` loads an encoder-decoder model (T5, BART, BlenderBot...), which vLLM itself does not serve",
    ),
    "a print of the model's device that also calls something": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            print(str(model.device))
            inputs = tokenizer(prompt, return_tensors="pt")
            return tokenizer.decode(model.generate(**inputs)[0])
        """,
        "`model.device` uses the model other than by model.generate(...); the engine that replaces it has no such attribute",
    ),
    "an untyped prompt in a Bottle view": (
        """\
        import bottle
        from transformers import AutoModelForCausalLM, AutoTokenizer
        app = bottle.Bottle()
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        @app.post("/g")
        def generate():
            prompt = bottle.request.json["prompt"]
            inputs = tokenizer(prompt, return_tensors="pt")
            return {"text": tokenizer.decode(model.generate(**inputs)[0])}
        """,
        "or check it at run time (`if not isinstance(prompt, str):` answer the request with an error) by hand",
    ),
}


@pytest.mark.parametrize("case", sorted(HF_REFUSED))
def test_refused_hf_generate_rewrite_says_why(tmp_path, case, snapshots):
    source, reason = HF_REFUSED[case]
    [finding] = findings(tmp_path, source, "VLL102")
    assert says_why_refused(finding, reason), finding.message
    snapshots.assert_match(f"rewrite-refusals/VLL102 {case}", f"{finding.start.line}:{finding.start.column}: {finding.message}\n")


# Model names the engine loads the same way, and attributes named like the model on other objects.
HF_REWRITTEN = {
    "an environment override of a default model name, a tokenizer cached elsewhere, a gated model's token": """\
        import os
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer
        MODEL = "gpt2"
        MODEL = os.environ.get("MODEL") or MODEL
        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained(MODEL, cache_dir="/tmp/hf")
        model = AutoModelForCausalLM.from_pretrained(MODEL, token=os.environ.get("HF_TOKEN"))
        @app.post("/g")
        def g(prompt: str):
            inputs = tokenizer(prompt, return_tensors="pt")
            return tokenizer.decode(model.generate(**inputs, max_new_tokens=8)[0])
        """,
    "a request's own model field beside self.model": """\
        import litserve as ls
        from litserve.specs.openai import ChatCompletionRequest
        from transformers import AutoModelForCausalLM, AutoTokenizer
        class API(ls.LitAPI):
            def setup(self, device):
                self.tokenizer = AutoTokenizer.from_pretrained("gpt2")
                self.model = AutoModelForCausalLM.from_pretrained("gpt2")
            def decode_request(self, request: ChatCompletionRequest):
                print("asked for", request.model)
                return request.messages[-1].content
            def predict(self, prompt: str):
                inputs = self.tokenizer(prompt, return_tensors="pt")
                return self.tokenizer.decode(self.model.generate(**inputs, max_new_tokens=8)[0])
        server = ls.LitServer(API(), devices=1)
        """,
}


@pytest.mark.parametrize("case", sorted(HF_REWRITTEN))
def test_hf_model_names_and_other_objects_model_fields_are_rewritten(tmp_path, case):
    source = textwrap.dedent(HF_REWRITTEN[case])
    [finding] = findings(tmp_path, source, "VLL102")
    assert finding.fix is not None, finding.message
    result, applied = fixed(tmp_path, source)
    assert applied == {"VLL102": 1} and "AsyncEngineArgs(" in result, result
    assert ("token=" not in source) or 'hf_token=os.environ.get("HF_TOKEN")' in result, result
    compile(result, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code.startswith("VLL1")] == []
    assert fixed(tmp_path, result) == (result, {})


# Handler shapes of round three's servers, with the handler each one's fix writes.
HANDLER_REWRITES = {
    # `input_ids = inputs["input_ids"].to(model.device)`: both locals' lines go, and the engine gets the prompt
    # the tokenizer was given, with max_length= counted from that prompt's tokens.
    "input ids taken out of a tokenizer output local": (
        HF_MODEL + """\
        @app.post("/g")
        async def g(prompt: str, max_length: int = 100):
            # Tokenize the input prompt
            inputs = tokenizer(prompt, return_tensors="pt")
            input_ids = inputs["input_ids"].to(model.device)
            outputs = model.generate(input_ids, max_length=max_length)
            return tokenizer.decode(outputs[0], skip_special_tokens=True)
        """,
        '@app.post("/g")\n'
        "async def g(prompt: str, max_length: int = 100):\n"
        "    async for request_output in engine.generate(prompt, SamplingParams(max_tokens=max(1, max_length - "
        "len(tokenizer(prompt).input_ids)), **decode_as_transformers(engine, {})), request_id=uuid4().hex):\n"
        "        pass  # the stream is cumulative: its last output holds the whole completion\n"
        "    outputs = [[*request_output.prompt_token_ids, *completion.token_ids] for completion in request_output.outputs]\n"
        "    return tokenizer.decode(outputs[0], skip_special_tokens=True)\n",
    ),
    # max_length= on a prompt computed in the tokenizer call: the prompt goes into a local once, read by the engine
    # and by the count of its tokens; `out[:, n:][0]` (every row's new tokens, then the first row) reads the same
    # ids as `out[0][n:]`, which the engine's list of token-id lists answers.
    "computed prompt counted by max_length, output sliced then read at a row": (
        HF_MODEL + """\
        @app.post("/g")
        def g(text: str):
            input_ids = tokenizer.encode(text + tokenizer.eos_token, return_tensors="pt")
            out = model.generate(input_ids, max_length=1000, pad_token_id=tokenizer.eos_token_id)
            return tokenizer.decode(out[:, input_ids.shape[-1]:][0], skip_special_tokens=True)
        """,
        '@app.post("/g")\n'
        "async def g(text: str):\n"
        "    prompt = text + tokenizer.eos_token\n"
        "    async for request_output in engine.generate(prompt, SamplingParams(max_tokens=max(1, 1000 - "
        "len(tokenizer(prompt).input_ids)), **decode_as_transformers(engine, {})), request_id=uuid4().hex):\n"
        "        pass  # the stream is cumulative: its last output holds the whole completion\n"
        "    out = [[*request_output.prompt_token_ids, *completion.token_ids] for completion in request_output.outputs]\n"
        "    return tokenizer.decode(out[0][len(request_output.prompt_token_ids):], skip_special_tokens=True)\n",
    ),
    # A debug print of the model's device goes with the model, as model.eval() does: the engine places the model.
    "a print of the model's device": (
        HF_MODEL + """\
        @app.post("/g")
        def g(prompt: str):
            print(f"Model device {model.device}")  # test .to('cuda')
            inputs = tokenizer(prompt, return_tensors="pt").to(model.device)
            out = model.generate(**inputs, max_new_tokens=8)
            return tokenizer.decode(out[0])
        """,
        '@app.post("/g")\n'
        "async def g(prompt: str):\n"
        "    async for request_output in engine.generate(prompt, SamplingParams(max_tokens=8, "
        "**decode_as_transformers(engine, {})), request_id=uuid4().hex):\n"
        "        pass  # the stream is cumulative: its last output holds the whole completion\n"
        "    out = [[*request_output.prompt_token_ids, *completion.token_ids] for completion in request_output.outputs]\n"
        "    return tokenizer.decode(out[0])\n",
    ),
    "computed pipeline prompt counted by max_length": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe("Q: " + prompt, max_length=64)
""",
        '@app.post("/g")\n'
        "async def g(prompt: str):\n"
        '    prompt_2 = "Q: " + prompt\n'
        "    async for request_output in engine.generate(prompt_2, SamplingParams(max_tokens=max(1, 64 - "
        "len(engine.get_tokenizer().encode(prompt_2))), **decode_as_transformers(engine, {\"do_sample\": True, "
        '"temperature": 0.7})), request_id=uuid4().hex):\n'
        "        pass  # the stream is cumulative: its last output holds the whole completion\n"
        '    return [{"generated_text": request_output.prompt + completion.text} for completion in request_output.outputs]\n',
    ),
}


@pytest.mark.parametrize("case", sorted(HANDLER_REWRITES))
def test_the_handler_is_rewritten_onto_the_engine(tmp_path, case):
    source, handler = HANDLER_REWRITES[case]
    result, applied = fixed(tmp_path, textwrap.dedent(source))
    assert sum(applied.values()) == 1, result
    assert result[result.index('@app.post("/g")'):] == handler, result
    compile(result, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code.startswith("VLL1")] == []
    assert fixed(tmp_path, result) == (result, {})


def test_a_pipeline_that_names_no_model_gets_the_default_transformers_loads(tmp_path, monkeypatch):
    """pipeline("text-generation") alone loads the installed transformers' default model for the task: the engine
    loads the same, read at start-up by a helper, with a max_model_len the model's positions allow."""
    source = APP.replace('pipeline("text-generation", model="gpt2")', 'pipeline("text-generation")') + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt)[0]["generated_text"]
"""
    result, applied = fixed(tmp_path, source)
    assert applied == {"VLL101": 1}, result
    arguments = [line.strip() for line in result[result.index("AsyncEngineArgs(\n"):].splitlines()[1:4]]
    assert arguments == ['**pipeline_default_model("text-generation", 8192),', "gpu_memory_utilization=0.90,", "enable_prefix_caching=True,"]
    assert "def pipeline_default_model(task, longest):" in result and "max_model_len" not in result.split("def pipeline_default_model")[0]
    compile(result, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code.startswith("VLL")] == []
    assert fixed(tmp_path, result) == (result, {})
    # The helper answers what pipeline() itself resolves (transformers' get_default_model_and_revision).
    import transformers
    from transformers.pipelines import check_task
    from transformers.pipelines.base import get_default_model_and_revision

    from vllm_lint.python.rewrite.generation import PIPELINE_DEFAULT_HELPER

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda model, revision: type("C", (), {"max_position_embeddings": 1024})())
    scope: dict = {}
    exec(PIPELINE_DEFAULT_HELPER.format(name="helper"), scope)
    model, revision = get_default_model_and_revision(check_task("text-generation")[1], None)
    assert scope["helper"]("text-generation", 8192) == {"model": model, "revision": revision, "max_model_len": 1024}
    assert scope["helper"]("text-generation", 512)["max_model_len"] == 512


# Prompts of no stated type: checked at run time to be one string (the framework's bad-request answer otherwise).
CHECKED_PROMPTS = {
    "VLL101 untyped flask input": (
        """\
        from flask import Flask, request
        from transformers import pipeline
        app = Flask(__name__)
        pipe = pipeline("text-generation", model="gpt2")
        @app.post("/g")
        def g():
            return pipe(request.get_json()["prompt"])[0]["generated_text"]
        """,
        "abort(400",
    ),
    "VLL101 untyped input": (
        APP + """
@app.post("/g")
async def g(request):
    data = await request.json()
    return pipe(data["prompt"])
""",
        "raise HTTPException(status_code=422",
    ),
    "VLL101 helper of an untyped prompt": (
        APP + """
from fastapi import Request

def run(prompt):
    return pipe(prompt)

@app.post("/g")
async def g(request: Request):
    return run((await request.json())["prompt"])
""",
        "raise HTTPException(status_code=422",
    ),
    "VLL103 one-item batch of an untyped prompt": (
        """\
        from fastapi import FastAPI, Request
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        async def g(request: Request):
            prompt = (await request.json())["prompt"]
            return llm.generate([prompt])[0].outputs[0].text
        """,
        "raise HTTPException(status_code=422",
    ),
    "VLL102 gRPC request field with no .proto in reach": (
        """\
        import grpc
        from transformers import AutoModelForCausalLM, AutoTokenizer
        import gen_pb2_grpc
        class S(gen_pb2_grpc.GenServicer):
            def __init__(self):
                self.tokenizer = AutoTokenizer.from_pretrained("gpt2")
                self.model = AutoModelForCausalLM.from_pretrained("gpt2")
            def Generate(self, request, context):
                inputs = self.tokenizer(request.prompt, return_tensors="pt")
                out = self.model.generate(**inputs, max_new_tokens=16)
                return self.tokenizer.decode(out[0], skip_special_tokens=True)
        server = grpc.server(None)
        """,
        "context.abort(grpc.StatusCode.INVALID_ARGUMENT",
    ),
    "VLL101 Ray Serve body read by hand": (
        """\
        import json
        import os
        from ray import serve
        from transformers import pipeline
        @serve.deployment()
        class Gen:
            def __init__(self):
                self.pipe = pipeline("text-generation", model=os.environ["MODEL_PATH"])
            async def __call__(self, starlette_request):
                data = json.loads(await starlette_request.body())
                prompt = data["prompt"]
                output = self.pipe(prompt, max_new_tokens=data.get("max_new_tokens", 100), do_sample=True)
                return output[0]["generated_text"]
        deploy = Gen.bind()
        """,
        'raise TypeError("the prompt must be one string")',
    ),
}


@pytest.mark.parametrize("case", sorted(CHECKED_PROMPTS))
def test_untyped_prompts_are_checked_at_run_time(tmp_path, case, snapshots):
    source, check = CHECKED_PROMPTS[case]
    code = case.split()[0]
    [finding] = findings(tmp_path, source, code)
    assert finding.fix is not None, finding.message
    result, applied = fixed(tmp_path, textwrap.dedent(source))
    assert applied.get(code) == 1 and check in result and "if not isinstance(" in result, result
    compile(result, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code in ("VLL101", "VLL102", "VLL103")] == []
    snapshots.assert_match(f"checked-prompts/{case}", result)


BUILT_BATCH = """\
from fastapi import FastAPI
from vllm import LLM, SamplingParams

app = FastAPI()
llm = LLM(model="m")


@app.post("/g")
def g(items: list[dict]):
    prompts = [item["text"] for item in items]
    outputs = llm.generate(prompts, SamplingParams(max_tokens=8))
    return [o.outputs[0].text for o in outputs]
"""


def test_a_list_built_in_the_handler_is_gathered_with_random_ids_unless_ids_are_read(tmp_path):
    """A list comprehension is a batch of prompts whatever its items' type; the ids are random unless the
    handler reads them, and then numbered in the prompts' order (one counter, so never reused)."""
    result, applied = fixed(tmp_path, BUILT_BATCH)
    assert applied.get("VLL103") == 1, result
    assert "await asyncio.gather(*(final_output(prompt, SamplingParams(max_tokens=8)) for prompt in prompts))" in result
    assert "request_id=uuid4().hex" in result and "itertools" not in result
    numbered = BUILT_BATCH.replace("    return [o.outputs[0].text", "    outputs.sort(key=lambda o: int(o.request_id))\n    return [o.outputs[0].text")
    result, applied = fixed(tmp_path, numbered)
    assert applied.get("VLL103") == 1, result
    assert "request_numbers = itertools.count()" in result and "request_id=str(next(request_numbers))" in result
    assert "uuid" not in result
    compile(result, "server.py", "exec")


def test_a_list_from_a_call_is_not_taken_for_a_batch(tmp_path):
    """``prompts = make_batch(...)`` may return one string, which LLM.generate takes as one prompt: it is
    checked to be one at run time, not gathered."""
    source = "def make_batch(items):\n    return items\n" + BUILT_BATCH.replace('[item["text"] for item in items]', "make_batch(items)")
    result, applied = fixed(tmp_path, source)
    assert applied.get("VLL103") == 1 and "if not isinstance(prompts, str):" in result and "gather" not in result, result


def test_no_stale_refusal_snapshots(snapshots):
    snapshots.assert_only("rewrite-refusals", [*(f"VLL101 {c}" for c in REFUSED), *(f"VLL103 {c}" for c in LLM_REFUSED),
                                               *(f"VLL102 {c}" for c in HF_REFUSED)])


REWRITTEN = [
    pytest.param(example, id=f"{code}-{number}")
    for code in ("VLL101", "VLL102", "VLL103")
    for number, example in enumerate(load_rules()[code].examples, start=1)
    if example.fixed is not None
]


@pytest.mark.parametrize("example", REWRITTEN)
def test_every_rewritten_server_compiles_lints_clean_and_is_fixed_once(tmp_path, example):
    """Each shape's fixed server: it compiles, no VLL1xx error is left (the lock fallback leaves an info-level note
    that it does not batch), and a second --fix changes nothing."""
    name = example.filename or "server.py"
    compile(example.fixed, name, "exec")
    assert [d for d in lint_text(tmp_path, name, example.fixed) if d.code.startswith("VLL1") and d.severity.value != "info"] == []
    again, applied = fixed(tmp_path, example.fixed, name)
    assert (again, applied) == (example.fixed, {})


HELPER_SERVERS = {
    'object built in the app\'s own lifespan handler': '''\
from contextlib import asynccontextmanager

from fastapi import FastAPI
from vllm import LLM, SamplingParams

completer = None


class Completer:
    def __init__(self):
        self.llm = LLM(model="facebook/opt-125m")

    def complete(self, prompt: str):
        return self.llm.generate([prompt], SamplingParams(max_tokens=32))[0].outputs[0].text


@asynccontextmanager
async def lifespan(app: FastAPI):
    global completer
    completer = Completer()
    yield


app = FastAPI(lifespan=lifespan)


@app.get("/g")
def g(prompt: str):
    return completer.complete(prompt)
''',
    'method chain of an object a startup hook builds': '''\
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
generator = None


class Generator:
    def __init__(self):
        self.pipe = pipeline("text-generation", model="gpt2")

    def _run(self, prompt):
        return self.pipe(prompt)[0]["generated_text"]

    def generate(self, prompt: str):
        return self._run(prompt).strip()


@app.on_event("startup")
def load():
    global generator
    generator = Generator()


@app.get("/g")
async def g(prompt: str):
    return {"text": generator.generate(prompt)}
''',
    'object built under __main__': '''\
import uvicorn
from fastapi import FastAPI
from vllm import LLM

app = FastAPI()


class Completer:
    def __init__(self, model):
        self.llm = LLM(model=model)

    def complete(self, prompt: str):
        return self.llm.generate(prompt)[0].outputs[0].text


@app.get("/g")
def g(prompt: str):
    return completer.complete(prompt)


if __name__ == "__main__":
    completer = Completer("facebook/opt-125m")
    uvicorn.run(app)
''',
    'helper method of a Ray Serve deployment': '''\
from ray import serve
from transformers import pipeline


@serve.deployment
class Generator:
    def __init__(self):
        self.pipe = pipeline("text-generation", model="gpt2")

    def _generate(self, prompt: str):
        return self.pipe(prompt)[0]["generated_text"]

    async def __call__(self, request):
        return self._generate(str(request.query_params["prompt"]))


app = Generator.bind()
''',
    "Flask view through an object's method": '''\
from flask import Flask, request
from vllm import LLM, SamplingParams

app = Flask(__name__)


class Completer:
    def __init__(self):
        self.llm = LLM(model="facebook/opt-125m")

    def complete(self, prompt):
        return self.llm.generate(prompt, SamplingParams(max_tokens=32))[0].outputs[0].text


completer = Completer()


@app.post("/g")
def g():
    return {"text": completer.complete(request.form["prompt"])}
''',
}


@pytest.mark.parametrize("case", sorted(HELPER_SERVERS))
def test_rewrite_through_helpers(tmp_path, case, snapshots):
    """Helpers and an owned object's methods: awaited up to the handlers (parenthesised where the call's value is
    used further), the object's construction moved into the lifespan handler; on the bridge, left sync."""
    text, applied = fixed(tmp_path, HELPER_SERVERS[case])
    assert sum(applied.values()) == 1, applied
    compile(text, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", text) if d.code.startswith("VLL1")] == []
    snapshots.assert_match(f"rewrites/helpers {case}", text)


def test_untouched_code_and_crlf_survive_byte_for_byte(tmp_path, snapshots):
    source = (
        "import os\r\n"
        "from fastapi import FastAPI\r\n"
        "from transformers import pipeline\r\n"
        "\r\n"
        "app = FastAPI()\r\n"
        "pipe = pipeline('text-generation', model=os.getenv('MODEL', 'gpt2'))  # the model\r\n"
        "\r\n"
        "\r\n"
        "class Odd:   # spacing kept\r\n"
        "    x  =  1\r\n"
        "\r\n"
        "\r\n"
        "@app.get('/g')\r\n"
        "def g(q: str):\r\n"
        "    # a comment that stays\r\n"
        "    result = pipe('Q: ' + q, num_return_sequences=2, stop_strings=['\\n'])\r\n"
        "    return [r['generated_text'] for r in result]\r\n"
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL101": 1}
    assert "\n" not in text.replace("\r\n", "")
    snapshots.assert_match("rewrites/crlf pipeline server (CRLF shown as LF)", text.replace("\r\n", "\n"))
    lines = text.split("\r\n")
    for kept in ("class Odd:   # spacing kept", "    x  =  1", "    # a comment that stays", "    return [r['generated_text'] for r in result]"):
        assert kept in lines
    assert "    )  # the model" in lines  # the load's trailing comment moves with it
    assert "model=os.getenv('MODEL', 'gpt2')," in text
    assert "SamplingParams(n=2, stop=['\\n'], include_stop_str_in_output=True, max_tokens=512, **decode_as_transformers(" in text
    assert "async def g(q: str):" in text
    compile(text, "server.py", "exec")


def test_fix_max_model_len_setting_is_used(tmp_path):
    source = APP + '\n@app.post("/g")\ndef g(prompt: str):\n    return pipe(prompt)\n'
    text, _ = fixed(tmp_path, source, fix_max_model_len=1024)
    assert "max_model_len=1024," in text


def test_llm_rewrite_keeps_list_and_item_shapes(tmp_path, snapshots):
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI
        from vllm import LLM, SamplingParams

        app = FastAPI()
        llm = LLM("m", gpu_memory_utilization=0.8, max_model_len=2048)
        params = SamplingParams(max_tokens=32)


        @app.post("/one")
        def one(prompt: str):
            return llm.generate([prompt], params)[0].outputs[0].text


        @app.post("/all")
        async def all_outputs(prompt: str):
            outputs = llm.generate(prompt, sampling_params=params, use_tqdm=False)
            return [o.outputs[0].text for o in outputs]
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}
    snapshots.assert_match("rewrites/LLM server with list and item shapes", text)
    assert 'AsyncEngineArgs(model="m", gpu_memory_utilization=0.8, max_model_len=2048, enable_prefix_caching=True)' in text
    assert "    return request_output.outputs[0].text\n" in text
    assert "    outputs = [request_output]\n" in text
    assert text.count("async def") == 3  # lifespan + both handlers
    assert "use_tqdm" not in text and "from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams\n" in text
    assert lint_text(tmp_path, "again.py", text) == []


def test_vll502_keeps_body_and_status(tmp_path, snapshots):
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI, status

        app = FastAPI()


        @app.get("/x")
        async def x(flag: bool):
            if flag:
                return ({"error": "busy", "retry": [1, 2.5, None]}, status.HTTP_503_SERVICE_UNAVAILABLE)
            return {"ok": True}
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL502": 1}
    snapshots.assert_match("rewrites/VLL502 tuple with a status constant", text)
    assert 'return JSONResponse({"error": "busy", "retry": [1, 2.5, None]}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)' in text
    assert "from fastapi.responses import JSONResponse\n" in text and "jsonable_encoder" not in text


def test_fix_file_returns_the_fixed_source_without_writing(tmp_path):
    path = tmp_path / "server.py"
    source = APP + '\n@app.post("/g")\ndef g(prompt: str):\n    return pipe(prompt)\n'
    path.write_text(source)
    outcome = fix_file(path, settings=Settings(root=tmp_path))
    assert path.read_text() == source
    assert outcome.applied["VLL101"] == 1 and b"AsyncLLMEngine" in outcome.fixed
    assert fix_file(path, unsafe=False, settings=Settings(root=tmp_path)).fixed == source.encode()


# -- import helpers ---------------------------------------------------------------


def _module(source: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(source))


def test_ensure_imported_reuses_extends_and_adds():
    module = _module(
        """\
        import uuid
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import SamplingParams as SP
        x = 1
        """
    )
    module, local = ensure_imported(module, "uuid", "uuid4")
    assert local == "uuid.uuid4"
    module, local = ensure_imported(module, "vllm", "SamplingParams")
    assert local == "SamplingParams"
    module, local = ensure_imported(module, "vllm", "AsyncLLMEngine")
    assert local == "AsyncLLMEngine"
    module, local = ensure_imported(module, "contextlib", "asynccontextmanager")
    module, local = ensure_imported(module, "fastapi.responses", "JSONResponse")
    assert module.code == textwrap.dedent(
        """\
        import uuid
        from contextlib import asynccontextmanager
        from vllm import AsyncLLMEngine, LLM, SamplingParams
        from vllm.sampling_params import SamplingParams as SP
        from fastapi.responses import JSONResponse
        x = 1
        """
    )


def test_ensure_imported_keeps_a_parenthesised_layout_and_refuses_taken_names():
    module = _module(
        """\
        from vllm import (
            SamplingParams,  # why
            LLM
        )
        """
    )
    module, _ = ensure_imported(module, "vllm", "AsyncEngineArgs")
    assert module.code == "from vllm import (\n    SamplingParams,  # why\n    LLM,\n    AsyncEngineArgs\n)\n"
    both = _module("import vllm\nfrom vllm import LLM\n")
    both, local = ensure_imported(both, "vllm", "AsyncLLMEngine")
    assert local == "AsyncLLMEngine" and both.code == "import vllm\nfrom vllm import AsyncLLMEngine, LLM\n"
    with pytest.raises(NameTaken):
        ensure_imported(_module("JSONResponse = None\n"), "fastapi.responses", "JSONResponse")


def test_remove_unused_imports_touches_only_candidates():
    module = _module(
        """\
        # header
        import os, sys
        from vllm import LLM, SamplingParams
        # about transformers
        from transformers import pipeline
        params = SamplingParams()
        """
    )
    result = remove_unused_imports(module, {"LLM", "pipeline", "sys", "SamplingParams"})
    assert result.code == "# header\nimport os\nfrom vllm import SamplingParams\n# about transformers\nparams = SamplingParams()\n"
    exported = _module("from vllm import LLM\n__all__ = ['LLM']\n")
    assert remove_unused_imports(exported, {"LLM"}).code == exported.code


def test_streamer_handler_comments_move_above_the_response(tmp_path, snapshots):
    """A TextIteratorStreamer handler in another common layout (a kwargs dict made for the thread, the thread
    started where it is made, an async route): the comments on the removed lines stay, above the return."""
    source = textwrap.dedent(
        """\
        import threading

        from fastapi import FastAPI
        from fastapi.responses import StreamingResponse
        from pydantic import BaseModel
        from transformers import TextIteratorStreamer, pipeline

        app = FastAPI()
        generator = pipeline("text-generation", model="gpt2")


        class Request(BaseModel):
            prompt: str
            max_new_tokens: int = 128


        @app.post("/generate_stream")
        async def generate_stream(request: Request):
            # tokens are pushed to the streamer as the pipeline makes them
            streamer = TextIteratorStreamer(generator.tokenizer, skip_prompt=True)
            generation_kwargs = dict(text_inputs=request.prompt, streamer=streamer, max_new_tokens=request.max_new_tokens)
            threading.Thread(target=generator, kwargs=generation_kwargs, daemon=True).start()  # runs in the background
            return StreamingResponse(streamer, media_type="text/event-stream")
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL101": 1}
    snapshots.assert_match("rewrites/streamer handler with its comments", text)
    assert "import threading" not in text and "from transformers" not in text  # the imports only they used go


def test_an_llm_no_handler_calls_yet_becomes_the_engine_built_at_start_up(tmp_path):
    """A FastAPI server that builds its LLM and never calls it (a file that ends before the handler that would):
    the engine is built in a lifespan handler in its place, and nothing is imported for requests it never makes.
    A sync framework's server that never calls it has no thread to bridge to: refused as before."""
    source = textwrap.dedent(
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM

        model = os.environ.get("MODEL_NAME", "org/m")
        model_name = model.split("/")[-1]
        model = LLM(model=model_name, max_model_len=2048)
        app = FastAPI()


        @app.get("/")
        async def health():
            return {"model": model_name}
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}, text
    assert "model_name = model.split(\"/\")[-1]\n\nmodel = None\n" in text
    assert "    model = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=model_name, max_model_len=2048, " in text
    assert "app = FastAPI(lifespan=lifespan)" in text and "uuid" not in text and "asyncio" not in text
    compile(text, "server.py", "exec")
    flask = source.replace("from fastapi import FastAPI", "from flask import Flask").replace("app = FastAPI()", "app = Flask(__name__)")
    [finding] = findings(tmp_path, flask, "VLL103")
    assert finding.message.endswith(f"{NO_FIX}the model object is never called in a request handler"), finding.message


def test_llms_built_by_an_if_and_its_else_each_become_the_engine(tmp_path):
    """Every branch of an if/elif/else chain in a start-up hook builds the LLM into one variable: one model at run
    time, each construction the engine's; the hook is then called from the lifespan handler."""
    source = textwrap.dedent(
        """\
        import os
        from fastapi import FastAPI
        from vllm import LLM, SamplingParams

        app = FastAPI()
        llm = None


        @app.on_event("startup")
        def load():
            global llm
            if os.environ.get("QUANTIZED"):
                llm = LLM(model="m-awq", quantization="awq")
            elif os.environ.get("SMALL"):
                llm = LLM(model="m-small")
            else:
                llm = LLM(model="m", max_model_len=4096)


        @app.post("/g")
        def g(prompt: str):
            return llm.generate(prompt, SamplingParams(max_tokens=8))[0].outputs[0].text
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}, text
    assert text.count("llm = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(") == 3, text
    assert 'AsyncEngineArgs(model="m-awq", quantization="awq", ' in text and "LLM(" not in text
    assert "    load()\n    yield\n    llm.shutdown()\n" in text
    compile(text, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", text) if d.code.startswith("VLL1")] == []


# An LLM kept in a module-level dict under a constant key, read by the handler as that entry.
DICT_SERVER = """\
from fastapi import FastAPI
from vllm import LLM, SamplingParams

app = FastAPI()
MODELS = {}
MODELS["llm"] = LLM(model="m", max_model_len=2048)


@app.post("/g")
def g(prompt: str, name: str = "llm"):
    return MODELS["llm"].generate(prompt, SamplingParams(max_tokens=8))[0].outputs[0].text
"""


def test_an_llm_in_a_dict_literal_becomes_the_engine_in_its_entry(tmp_path):
    """``MODELS = {"llm": LLM(...)}``: the dict stays (empty until start-up) and the lifespan handler fills its
    entry with the engine; on a sync framework the entry holds the engine's thread, where the dict was built."""
    source = DICT_SERVER.replace('MODELS = {}\nMODELS["llm"] = LLM(model="m", max_model_len=2048)\n',
                                 '# the served models\nMODELS = {"llm": LLM(model="m", max_model_len=2048)}\n')
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}, text
    assert "\nMODELS = {}\n\n\n@asynccontextmanager\nasync def lifespan(app: FastAPI):\n    # the served models\n" \
           '    MODELS["llm"] = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model="m", max_model_len=2048, ' in text, text
    assert "global" not in text and '    yield\n    MODELS["llm"].shutdown()\n' in text
    assert 'async for request_output in MODELS["llm"].generate(prompt, SamplingParams(max_tokens=8), request_id=uuid4().hex):' in text
    compile(text, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", text) if d.code.startswith("VLL1")] == []
    flask = textwrap.dedent(
        """\
        from flask import Flask, request
        from vllm import LLM, SamplingParams

        app = Flask(__name__)
        models = {"llm": LLM("m")}


        @app.route("/g", methods=["POST"])
        def g():
            return models["llm"].generate(request.json["prompt"], SamplingParams(max_tokens=8))[0].outputs[0].text
        """
    )
    text, applied = fixed(tmp_path, flask)
    assert applied == {"VLL103": 1}, text
    assert '\nmodels = {}\nmodels["llm"] = EngineThread(AsyncEngineArgs(model="m", ' in text, text
    compile(text, "server.py", "exec")


def test_an_llm_put_in_a_dict_by_a_startup_hook_is_rewritten(tmp_path):
    """The hook fills the module's dict (no ``global``): it builds the engine there, called by the lifespan handler."""
    source = DICT_SERVER.replace('MODELS["llm"] = LLM(model="m", max_model_len=2048)\n',
                                 '\n\n@app.on_event("startup")\ndef load():\n    MODELS["llm"] = LLM(model="m", max_model_len=2048)\n')
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}, text
    assert 'def load():\n    MODELS["llm"] = AsyncLLMEngine.from_engine_args(' in text
    assert '    load()\n    yield\n    MODELS["llm"].shutdown()\n' in text
    compile(text, "server.py", "exec")


@pytest.mark.parametrize(("change", "why"), [
    (('MODELS["llm"].generate', "MODELS[name].generate"),
     '`MODELS[name]` reads the dict that holds the LLM with a key other than "llm"; the rewrite puts the engine in '
     'that one entry: read it as `MODELS["llm"]` (or keep the LLM in a variable)'),
    (("def g(", '@app.get("/models")\ndef models():\n    return {"models": list(MODELS)}\n\n\n@app.post("/g")\ndef g('),
     '`list(MODELS)` uses `MODELS`, the dict that holds the LLM, other than as `MODELS["llm"]` (iterated, passed '
     'whole or changed), where it would find the engine in the LLM\'s place; read the LLM only as `MODELS["llm"]` '
     "(or keep it in a variable)"),
    (('MODELS["llm"] = LLM(', 'MODELS = {}\nMODELS["llm"] = LLM('),
     "`MODELS`, the dict that holds the LLM, is bound more than once; bind it once at module level"),
    (('MODELS = {}\n', 'MODELS = {"name": "m"}\n'),
     '`MODELS = {"name": "m"}` starts the dict that holds the LLM with other entries; keep the LLM in a dict of its own'),
    (('MODELS = {}\nMODELS["llm"] = LLM(model="m", max_model_len=2048)', 'MODELS = {"llm": LLM(model="m"), "name": "m"}'),
     '`MODELS` holds other entries beside the LLM, which the rewrite would have to tell apart from its engine: keep '
     'the LLM in a dict of its own (`MODELS = {"llm": ...}`), or in a variable'),
    (('MODELS["llm"] = LLM(model="m", max_model_len=2048)\n', 'MODELS["llm"] = LLM(model="m", max_model_len=2048)\nMODELS["small"] = LLM(model="s")\n'),
     "the module builds 2 models; one engine per GPU is what the rewrite produces"),
])
def test_a_dict_the_rewrite_cannot_follow_is_refused(tmp_path, change, why):
    """The engine replaces the model in its one entry: any other use of the dict refuses, saying what to change."""
    old, new = change
    assert old in DICT_SERVER
    reports = findings(tmp_path, DICT_SERVER.replace(old, new, 1), "VLL103")
    assert reports and all(f"{NO_FIX}{why}" in d.message for d in reports), [d.message for d in reports]


def test_a_model_in_a_dicts_item_is_seen_where_the_item_is_called(tmp_path):
    """``PIPELINES["gen"](prompt)`` in a handler is the pipeline stored in that item (VLL101, and its rewrite); a
    function's own dict of the same name is another dict, whose items are not the module's."""
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI
        from transformers import pipeline

        app = FastAPI()
        PIPELINES = {}
        PIPELINES["gen"] = pipeline("text-generation", model="gpt2")


        @app.post("/g")
        def g(prompt: str):
            return PIPELINES["gen"](prompt, max_new_tokens=16)[0]["generated_text"]
        """
    )
    [finding] = findings(tmp_path, source, "VLL101")
    assert NO_FIX not in finding.message
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL101": 1}, text
    assert '    PIPELINES["gen"] = AsyncLLMEngine.from_engine_args(\n' in text and "\nPIPELINES = {}\n" in text
    assert ('async for request_output in PIPELINES["gen"].generate(prompt, SamplingParams(max_tokens=16, '
            '**decode_as_transformers(PIPELINES["gen"], {"do_sample": True, "temperature": 0.7})), ') in text
    compile(text, "server.py", "exec")
    shadowed = source.replace("def g(prompt: str):\n", 'def g(prompt: str):\n    PIPELINES = {"gen": str.upper}\n')
    assert findings(tmp_path, shadowed, "VLL101") == []


def test_hugging_face_credentials_reach_the_engine_as_hf_token(tmp_path):
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model_name = "meta-llama/Meta-Llama-3-8B-Instruct"
        model = AutoModelForCausalLM.from_pretrained(model_name, use_auth_token=True)
        tokenizer = AutoTokenizer.from_pretrained(model_name, token="hf_x")

        app = FastAPI()


        @app.get("/generate")
        async def generate(prompt: str):
            inputs = tokenizer.encode(prompt, return_tensors="pt")
            outputs = model.generate(inputs, max_new_tokens=100)
            return {"response": tokenizer.decode(outputs[0], skip_special_tokens=True)}
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL102": 1}, text
    # use_auth_token= (token='s old name) on the model is the engine's hf_token; the tokenizer's token= downloads
    # the same files the engine's tokenizer loads
    assert "            model=model_name,\n            hf_token=True,\n" in text
    assert "use_auth_token" not in text and "AutoModelForCausalLM" not in text
    compile(text, "server.py", "exec")


# model.generate servers the rewrite keeps, each a snapshot of the fixed server
KEPT_CHAINS = {
    # the ids the original call made (truncated, no special tokens) are the engine's prompt; max_length= counts them
    "truncating tokenizer call": """\
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer

        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2")


        @app.post("/g")
        async def g(prompt: str, limit: int = 64):
            inputs = tokenizer(prompt, return_tensors="pt", padding=True, truncation=True, max_length=512, add_special_tokens=False)
            out = model.generate(**inputs, max_length=limit)
            return {"text": tokenizer.decode(out[0][inputs["input_ids"].shape[1]:], skip_special_tokens=True)}
        """,
    # [system] + history + [user] is one conversation (its first item is a message); tokenizer([text]) is a batch
    # of that one text; the attention mask read from the tokenizer's output goes with generate, and .tolist() on
    # a row of the output goes too (the engine's rows are lists of ids)
    # the model's name held on the object by the method that loads it: the engine, built in the load's place, reads it
    "model name held on the service object": """\
        import bentoml
        from transformers import AutoModelForCausalLM, AutoTokenizer


        @bentoml.service(resources={"cpu": "1"})
        class GenerationService:
            def __init__(self):
                self.model_id = "EleutherAI/gpt-neo-1.3B"
                self.tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                self.model = AutoModelForCausalLM.from_pretrained(self.model_id)

            @bentoml.api
            def generate(self, prompt: str) -> str:
                inputs = self.tokenizer(prompt, return_tensors="pt")
                outputs = self.model.generate(**inputs, max_new_tokens=64, do_sample=True, top_p=0.95)
                return self.tokenizer.decode(outputs[0], skip_special_tokens=True)
        """,
    "chat rendered for one row": """\
        from fastapi import FastAPI
        from transformers import AutoModelForCausalLM, AutoTokenizer

        app = FastAPI()
        tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")


        @app.post("/chat")
        async def chat(message: str, history: list[dict]):
            messages = [{"role": "system", "content": "Answer briefly."}] + history + [{"role": "user", "content": message}]
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            inputs = tokenizer([text], return_tensors="pt").to(model.device)
            out = model.generate(inputs.input_ids, attention_mask=inputs["attention_mask"], max_new_tokens=64)
            ids = out[0][len(inputs.input_ids[0]):].tolist()
            return {"ids": ids, "text": tokenizer.decode(ids, skip_special_tokens=True)}
        """,
}


@pytest.mark.parametrize("case", KEPT_CHAINS)
def test_kept_generate_chains(tmp_path, case, snapshots):
    text, applied = fixed(tmp_path, textwrap.dedent(KEPT_CHAINS[case]))
    assert applied == {"VLL102": 1}, text
    snapshots.assert_match(f"rewrites/{case}", text)
    assert ".tolist()" not in text and "attention_mask" not in text and "return_tensors" not in text
    assert fixed(tmp_path, text) == (text, {})


AIOHTTP_EXECUTOR = '''\
import asyncio

from aiohttp import web
from transformers import pipeline

generator = pipeline("text-generation", model="gpt2")


def write(text: str) -> str:
    return generator(text, max_new_tokens=20)[0]["generated_text"]


async def handle(request):
    loop = asyncio.get_running_loop()
    text = await loop.run_in_executor(None, lambda: write(request.query["text"]))
    return web.json_response({"text": text, "at": loop.time()})


app = web.Application()
app.router.add_get("/", handle)
'''


@pytest.mark.parametrize(("source", "kept"), [
    (AIOHTTP_EXECUTOR, True),  # loop.time() still reads it
    (AIOHTTP_EXECUTOR.replace(', "at": loop.time()', ""), False),  # only the executor call read it: F841 would flag it
])
def test_the_loop_line_goes_with_its_last_executor_call(tmp_path, source, kept):
    result, _ = fixed(tmp_path, source)
    assert "text = await write(request.query[\"text\"])\n" in result
    assert ("    loop = asyncio.get_running_loop()\n" in result) is kept
    assert ("import asyncio\n" in result) is kept


CHAINLIT_INLINE = '''\
import chainlit as cl
from transformers import pipeline

generator = pipeline("text-generation", model="gpt2")


@cl.on_message
async def main(message: cl.Message):
    await cl.Message(content=generator(message.content, return_full_text=False)[0]["generated_text"]).send()
'''


def test_a_call_in_an_argument_of_an_awaited_call_is_hoisted_before_it(tmp_path):
    result, applied = fixed(tmp_path, CHAINLIT_INLINE)
    assert applied == {"VLL101": 1}
    assert "    async for request_output in engine.generate(message.content, " in result
    assert '    await cl.Message(content=[{"generated_text": completion.text} for completion in request_output.outputs][0]["generated_text"]).send()\n' in result
    # the call's own result awaited: nothing to await once it is the engine's stream
    [finding] = findings(tmp_path, CHAINLIT_INLINE.replace("await cl.Message(content=generator", "text = await generator").replace('["generated_text"]).send()', '["generated_text"]'), "VLL101")
    assert 'is awaited, but it returns no awaitable' in finding.message
