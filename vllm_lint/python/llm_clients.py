"""Client libraries that call an LLM server over HTTP: what builds a client, which calls block, the async twins.

Shared by the rules on clients in request handlers and by the project summary that matches a client to the
vLLM server it talks to. Names are qualified as ``semantics.Semantics.qualify`` gives them.
"""

from __future__ import annotations

from dataclasses import dataclass

_OPENAI_CALLS = ("chat.completions.create", "completions.create", "embeddings.create", "responses.create")


@dataclass(frozen=True, slots=True)
class SyncClient:
    """A synchronous client class: each of ``calls`` (attribute paths on an instance) waits for the answer."""

    calls: tuple[str, ...]
    async_twin: str  # the asynchronous class with the same calls, in the same module


SYNC_CLIENTS: dict[str, SyncClient] = {
    "openai.OpenAI": SyncClient(_OPENAI_CALLS, "AsyncOpenAI"),
    "openai.AzureOpenAI": SyncClient(_OPENAI_CALLS, "AsyncAzureOpenAI"),
    "anthropic.Anthropic": SyncClient(("messages.create", "completions.create"), "AsyncAnthropic"),
    "huggingface_hub.InferenceClient": SyncClient(
        ("text_generation", "chat_completion", "chat.completions.create"), "AsyncInferenceClient"
    ),
}
# Calls that block without a client object, with their awaitable twin in the same module (None: none).
SYNC_FUNCTIONS: dict[str, str | None] = {
    "litellm.completion": "acompletion",
    "litellm.text_completion": "atext_completion",
    "litellm.embedding": "aembedding",
    "openai.chat.completions.create": None,  # openai>=1's module-level default client
    "openai.completions.create": None,
    "openai.embeddings.create": None,
    "openai.ChatCompletion.create": "acreate",  # openai<1: the class method and its awaitable twin
    "openai.Completion.create": "acreate",
    "openai.Embedding.create": "acreate",
}
# Constructors of clients that own a connection pool: built per request, each opens its own connections.
POOLED_CLIENTS = frozenset(
    {
        "openai.OpenAI",
        "openai.AsyncOpenAI",
        "openai.AzureOpenAI",
        "openai.AsyncAzureOpenAI",
        "anthropic.Anthropic",
        "anthropic.AsyncAnthropic",
        "httpx.Client",
        "httpx.AsyncClient",
        "aiohttp.ClientSession",
    }
)
