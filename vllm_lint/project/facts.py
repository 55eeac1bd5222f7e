"""What one file tells the project rules, in a form the result cache stores as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_lint.diagnostics import Position

ANY_HOST = "*"  # a server whose network names are not known here (a Dockerfile, a Kubernetes pod)
LOCALHOST = "localhost"
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1", "[::1]", "::"})


def network_host(host: str) -> str:
    """One spelling for the loopback and any-address names a client on the same machine may use."""
    host = host.lower()
    return LOCALHOST if host in _LOCAL_NAMES or host.startswith("127.") else host


@dataclass(frozen=True, slots=True)
class Server:
    """A vLLM server a file starts: where it can be reached and which model names it answers to."""

    line: int
    addresses: tuple[tuple[str, int | None], ...]  # (network host or ANY_HOST, port or None when not known)
    names: tuple[str, ...] | None  # None: not known, or it accepts any name

    def reachable_at(self, host: str, port: int) -> bool:
        return any(h in (host, ANY_HOST) and p in (port, None) for h, p in self.addresses)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """A client call that names a model, sent to a statically known base URL."""

    base_url: str
    model: str
    start: Position
    end: Position
    noqa_lines: tuple[int, ...] = ()

    @property
    def address(self) -> tuple[str, int] | None:
        from urllib.parse import urlsplit  # only a run with requests to join needs it

        try:
            parts = urlsplit(self.base_url)
            port = parts.port
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        return network_host(parts.hostname), port if port is not None else (443 if parts.scheme == "https" else 80)


@dataclass(slots=True)
class FileFacts:
    """What one file tells the project rules: the servers it starts and the requests it sends."""
    servers: list[Server] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.servers or self.requests)

    def to_json(self) -> dict:
        return {
            "servers": [[s.line, [list(a) for a in s.addresses], None if s.names is None else list(s.names)] for s in self.servers],
            "requests": [
                [r.base_url, r.model, [r.start.line, r.start.column], [r.end.line, r.end.column], list(r.noqa_lines)]
                for r in self.requests
            ],
        }

    @classmethod
    def from_json(cls, raw: dict) -> FileFacts:
        servers = [
            Server(int(line), tuple((str(h), None if p is None else int(p)) for h, p in addresses), None if names is None else tuple(map(str, names)))
            for line, addresses, names in raw["servers"]
        ]
        requests = [
            ModelRequest(str(url), str(model), Position(int(s[0]), int(s[1])), Position(int(e[0]), int(e[1])), tuple(map(int, noqa)))
            for url, model, s, e, noqa in raw["requests"]
        ]
        return cls(servers, requests)


@dataclass(frozen=True, slots=True)
class ProjectFinding:
    """A finding of a rule decided across files: in which file, at which request, saying what."""

    path: str  # the file, as the run shows it
    request: ModelRequest  # where it is reported
    message: str
