"""`solvi serve`: a System over HTTP, as an ASGI app (Starlette) served by uvicorn.

`asgi(system)` builds the app once: ``POST /v1/ask`` answers a request with
``await system.aask(state)`` and returns its record; ``GET /v1/plan``,
``GET /healthz``, ``GET /metrics`` (Prometheus text) and ``GET /openapi.json``
describe the System and what the app has served. A request brings only the
catalog's inputs (the keys no part produces) unless the app allows overrides,
and its size, key count and reading time are bounded. Every error a client can
cause is a 4xx answer with a JSON body ``{"error": {"code", "message"}}``; a
part that raises or times out is a safeguard inside a 200 answer.

Starlette and uvicorn are the optional ``serve`` extra: this module imports
them only when an app is built or served, so ``import solvi`` works without
them.
"""

from __future__ import annotations

from solvi.serve._app import asgi
from solvi.serve._command import add_serve_command, load_system, main, run
from solvi.serve._requests import MAX_DEPTH

__all__ = ["MAX_DEPTH", "add_serve_command", "asgi", "load_system", "main", "run"]
