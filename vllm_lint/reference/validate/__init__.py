"""``vllm-lint validate``: prove that an autofix keeps a server's behaviour and measure what it gains.

The bad servers are the files given (a folder gives each ``*.py`` file the autofixer rewrites into a server),
or, with none, the bad example servers of every rule whose fix rewrites a server onto AsyncLLMEngine, or moves its
model calls off the event loop where that is refused (VLL101, VLL103, ...: the rule YAML's examples that have a
``fixed`` version). For each one the harness:

1. points the model the source names (``pipeline(..., model=...)``, ``LLM(...)``, ``AsyncEngineArgs(model=...)``
   ...) at one local model directory, then produces the fixed version with vllm-lint's own fixer, as
   ``vllm-lint check --fix --unsafe-fixes`` would (``fix-max-model-len`` set to the model's context), unless
   ``--fixed`` gives one;
2. makes both files runnable as they stand (a snippet without ``app = FastAPI()`` gets one injected, and a few
   forgotten stdlib imports such as ``import uuid`` are added; each injection is reported);
3. starts each server in turn with uvicorn on 127.0.0.1 through :mod:`vllm_lint.reference.launch`, which
   makes decoding greedy with a fixed number of new tokens on both sides (transformers' pipeline or vLLM's
   ``LLM`` for the bad one, AsyncLLMEngine for the fixed one) and fits vLLM to the CPU when there is no GPU;
   (a gRPC server runs as its ``__main__``, its ports moved to the launcher's);
4. finds the endpoint from the app's OpenAPI schema (the POST route taking a prompt-like field), or for a gRPC
   server from its servicer and the generated descriptors (:mod:`.grpc_endpoint`), or for an app with only
   websocket routes from the routes the launcher lists (:mod:`.websocket_endpoint`), asks the
   bad server every prompt once, one at a time (its reference answers), then sends both servers the same
   load (fixed prompts, ``--concurrency`` in flight, ``--requests`` in all);
5. checks that each fixed response under load has the bad server's JSON shape and the same completion text
   (what the bad server itself answers under load is compared with its reference answers and reported: a
   server on vLLM's offline ``LLM`` called from several threads fails or mixes up answers), and reports tokens/s, p50/p95 latency, time to first token for streams and the fixed/bad throughput ratio
   (optionally sweeping concurrency 1, 4, 16, 64 for a plot);
6. probes a cheap GET route of each server while its load runs (:mod:`.probe`): a fix must free an event loop the
   bad server held during its generations.

One module per step: :mod:`.cases` (which bad servers), :mod:`.prepare` (1 and 2), :mod:`.servers` (3),
:mod:`.endpoint`, :mod:`.grpc_endpoint`, :mod:`.websocket_endpoint` and :mod:`.compare` (4 and 5),
:mod:`.probe` (6), :mod:`.run` (the loop over cases and servers), :mod:`.results` (what a run finds, and its JSON), :mod:`.summary`
(the text printed) and :mod:`.plot`.
"""
