"""VLL304: a client's model name that the one vLLM server at its base URL does not serve."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.project.facts import FileFacts, ProjectFinding
from vllm_lint.registry import project_rule


@project_rule("VLL304")
def served_model_name_mismatch(facts: dict[str, FileFacts]) -> Iterator[ProjectFinding]:
    servers = [(path, server) for path, file_facts in facts.items() for server in file_facts.servers]
    for path, file_facts in facts.items():
        for request in file_facts.requests:
            address = request.address
            if address is None:
                continue
            candidates = [(where, server) for where, server in servers if server.reachable_at(*address)]
            if len(candidates) != 1:
                continue  # no server of this project there, or several that could be the one
            where, server = candidates[0]
            if server.names is None or request.model in server.names:
                continue
            names = ", ".join(repr(name) for name in server.names)
            yield ProjectFinding(
                path,
                request,
                f"model {request.model!r} is not a name the vLLM server at {request.base_url} ({where}:{server.line}) "
                f"serves: it answers only to {names}, so every request fails with 404 \"The model does not exist\"",
            )
