"""The helper a server of a synchronous framework (Flask, Django, sync gRPC, Gradio) gets: one engine on one event loop.

A sync framework serves each request in a thread of its own and cannot await. The
rewrite keeps the framework and its handlers as they are; the module gets one small
class that runs vLLM's AsyncLLMEngine on an event loop in a background thread,
started when the module is imported (where the model was loaded; not when vLLM's
engine process, spawned, re-imports the script it was started from). Each handler
hands its prompt to that loop with ``asyncio.run_coroutine_threadsafe(...)`` and
waits for the answer in its own thread, so requests that arrive together are
batched together by the engine. Nothing outside the standard library and vLLM.

Where the framework's defaults let only one request run at a time, the helper's docstring says which
setting lets them overlap: the rewrite keeps the framework's settings as they are.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BridgeNames:
    """The names the helper's code refers to, as the module can spell them."""

    helper: str  # the class's own name
    asyncio: str
    threading: str
    uuid4: str
    async_llm_engine: str


# Frameworks whose defaults run one request at a time, so nothing reaches the engine together: what to change.
_ONE_AT_A_TIME = {
    "Gradio": (
        "Gradio runs one call of each event at a time unless its concurrency_limit (or the queue's\n"
        "    default_concurrency_limit) allows more: the events that call the engine were given one, so\n"
        "    that requests overlap and batch."
    ),
    "Bottle": (
        "Bottle's default server (wsgiref) serves one request at a time: run the app on a threaded\n"
        "    server (server=\"waitress\", \"cheroot\", ...) for requests to batch."
    ),
}


def bridge_source(names: BridgeNames, framework: str) -> str:
    """The helper class, as source code (four-space indentation, ``\\n`` newlines)."""
    note = f"\n\n    {_ONE_AT_A_TIME[framework]}" if framework in _ONE_AT_A_TIME else ""
    return f'''\
class {names.helper}:
    """vLLM's AsyncLLMEngine on an event loop of its own, in a thread started with the app.

    {framework} serves each request in a thread; each one submits its prompt to this loop and waits
    for the answer, so requests that arrive together are batched together by the engine.{note}
    """

    def __init__(self, engine_args):
        if __name__ == "__mp_main__":
            return  # vLLM's engine process re-imports this script as it starts: no engine in there
        self.loop = {names.asyncio}.new_event_loop()
        {names.threading}.Thread(target=self.loop.run_forever, name="vllm-engine-loop", daemon=True).start()
        self.engine = self._run(self._start(engine_args))

    async def _start(self, engine_args):
        # Built on the loop, so the engine's output handler runs there too.
        return {names.async_llm_engine}.from_engine_args(engine_args)

    def _run(self, coroutine):
        """Run a coroutine on the engine's loop; only the calling thread waits for it."""
        return {names.asyncio}.run_coroutine_threadsafe(coroutine, self.loop).result()

    def generate(self, prompt, sampling_params):
        """The engine's final output (a vLLM RequestOutput) for one prompt."""
        return self._run(self._final_output(prompt, sampling_params))

    async def _final_output(self, prompt, sampling_params):
        async for output in self.engine.generate(prompt, sampling_params, request_id={names.uuid4}().hex):
            pass  # the stream is cumulative: its last output holds the whole completion
        return output
'''
