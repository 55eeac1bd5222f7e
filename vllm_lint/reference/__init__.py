"""The reference vLLM server, the tiny-model builder, the load generator and the validation harness.

Everything here needs the ``server`` extra (vLLM, FastAPI, uvicorn, httpx, transformers); importing
this package and :mod:`vllm_lint.cli.reference` stays cheap: heavy modules are imported inside the
functions that use them.
"""
