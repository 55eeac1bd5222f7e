"""What stops the validation of a case."""

from __future__ import annotations


class ValidationError(Exception):
    """The harness could not run (a server did not start, the autofixer failed, ...)."""


class NotARewrite(ValidationError):
    """The autofixer does not rewrite this file into a server on vLLM (skipped when it was discovered)."""


class NotServable(NotARewrite):
    """The server is not one the harness can start and load over HTTP (a gRPC servicer, a websocket-only
    app); skipped when it was discovered."""
