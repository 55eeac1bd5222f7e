"""The project rules: each joins the facts of every file of a run into findings in some of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vllm_lint.project.facts import FileFacts, ModelRequest


@dataclass(frozen=True, slots=True)
class ProjectFinding:
    path: str  # the file, as the run shows it
    request: ModelRequest  # where it is reported
    message: str


ProjectRule = Callable[[dict[str, FileFacts]], Iterator[ProjectFinding]]


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


PROJECT_RULES: dict[str, ProjectRule] = {"VLL304": served_model_name_mismatch}


def wants_facts(enabled: frozenset[str]) -> bool:
    """Whether a file's lint should report its facts: only an enabled project rule reads them."""
    return not enabled.isdisjoint(PROJECT_RULES)
