"""The ASGI app of a System: its routes and how each request is answered.

`asgi` builds a Starlette app around one `_Server`, which holds the System, the
metrics and the OpenAPI description. Starlette is imported only when an app is
built or answers a request, never when this module is imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
from collections.abc import AsyncIterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from solvi.errors import RecordError, RequestError
from solvi.flow import Flow
from solvi.record import canonical_json, to_record_value
from solvi.response import Response as Answered
from solvi.serve._inputs import ServedKeys
from solvi.serve._metrics import CountRequests, Metrics
from solvi.serve._openapi import openapi
from solvi.serve._requests import (
    CLIENT_CLOSED,
    AskOptions,
    ClientError,
    ask_options,
    check_key_count,
    check_media_type,
    parse_state,
    plan_keys,
    read_body,
)
from solvi.system import System

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["INSTALL", "Limits", "asgi", "need"]

INSTALL = "pip install 'solvi[serve]'"


def need(package: str) -> ModuleType:
    """Import one package of the serve extra, or say how to install it."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        msg = (
            f"solvi's HTTP server needs {package}, which is not installed; install the serve "
            f"extra with: {INSTALL}"
        )
        raise ImportError(msg, name=package) from exc


def _error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def _json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """The data as JSON with non-ASCII escaped, so no body can fail to encode.

    A client may send a lone surrogate (``"\\ud800"``): valid JSON, not UTF-8. It
    comes back in error messages and answers; escaped, it is the same JSON.
    """
    from starlette.responses import Response

    body = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def _not_an_input(exc: RequestError) -> ClientError:
    """A request key the System refuses (a hard check, or a fact one reads)."""
    return ClientError(422, "not_an_input", str(exc), key=exc.key)


def _refused_request(exc: RequestError | RecordError) -> ClientError:
    """What the System refused of a request, before any part ran, in the client's terms."""
    if isinstance(exc, RequestError):
        return _not_an_input(exc)
    msg = f"the request cannot be recorded: {exc}"
    return ClientError(422, "unrecordable_value", msg, fact=exc.fact)


#: refusals of a body not read to its end: the connection is closed after the answer,
#: so that the server does not go on reading an upload no one wants
_CLOSING = frozenset({408, 413})


def _refuse(err: ClientError) -> Response:
    headers = {"connection": "close"} if err.status in _CLOSING else None
    return _json_response(_error_body(err.code, err.message, **err.details), err.status, headers)


@attrs.frozen
class Limits:
    """What one app accepts from a request: body size, key count and time to read the body."""

    max_body: int = 1_000_000
    max_keys: int = 1_000
    read_timeout: float = 10.0


def _flow_json(system: System, flow: Flow) -> dict[str, Any]:
    return {
        "catalog": system.name,
        "version": system.version,
        "keys": sorted(flow.keys),
        "steps": list(flow.steps),
        "skipped": dict(flow.skipped),
        "questions": [
            {
                "name": q.name,
                "rule": q.rule,
                "targets": list(q.targets),
                "governing": list(q.governing),
                "narrowed": q.narrowed,
                "blocked": q.blocked,
                "guard": q.blocked_guard,
            }
            for q in flow.questions
        ],
        "mermaid": flow.to_mermaid(),
    }


_STOPPING = ClientError(
    503,
    "server_stopping",
    "the server stopped before the answer was ready; the request was cancelled, so send it "
    "again (to this server once it is back, or to another)",
)


class _Server:
    """The endpoints of one app, sharing one System and one set of metrics."""

    def __init__(self, system: System, limits: Limits, keys: ServedKeys) -> None:
        self.system = system
        self.limits = limits
        self.keys = keys
        self.metrics = Metrics(system)
        self.hooks = (self.metrics,)
        self.questions = tuple(q.name for q in system.questions)
        self.description = openapi(system, limits.max_body, limits.max_keys, keys)
        self.health = {
            "status": "ok",
            "catalog": system.name,
            "version": system.version,
            "questions": list(self.questions),
            "async": system.is_async,
        }

    async def ask(self, request: Request) -> Response:
        """POST /v1/ask: the record of `await system.aask(state)`."""
        from starlette.requests import ClientDisconnect

        gone = ClientError(
            CLIENT_CLOSED,
            "client_disconnected",
            "the client closed the connection before the answer was ready",
        )
        try:
            options = ask_options(request.query_params, self.questions)
            check_media_type(request)
            body = await read_body(request, self.limits.max_body, self.limits.read_timeout)
            state, matched = self.keys.normalise(parse_state(body, self.limits.max_keys))
            self.keys.check(state)
        except ClientError as err:
            return _refuse(err)
        except ClientDisconnect:
            return _refuse(gone)
        self.metrics.ask_began()
        try:
            res = await self._answer(request, state, options)
        except asyncio.CancelledError:
            # Not the client (that ends `_answer` quietly): the server stopped and its
            # grace period ran out. The request was closed as cancelled in the journal;
            # say so to the client rather than fail with a 500 and a traceback.
            return _refuse(_STOPPING)
        except (RequestError, RecordError) as exc:
            return _refuse(_refused_request(exc))
        except ExceptionGroup as group:  # raised in the task group that watches the client
            refused = group.subgroup((RequestError, RecordError))
            if refused is None:
                raise
            return _refuse(_refused_request(refused.exceptions[0]))  # type: ignore[arg-type]
        finally:
            self.metrics.ask_ended()
        if res is None:
            return _refuse(gone)
        from starlette.responses import Response

        try:
            if options.question is None:
                if matched is None:
                    return Response(res.to_json(), media_type="application/json")
                record = {**res.record, "matched": matched}
                return Response(canonical_json(record), media_type="application/json")
            answer = res[options.question]
            single = {
                "catalog": self.system.name,
                "question": options.question,
                "answer": {
                    "status": answer.status,
                    "value": to_record_value(answer.value, f"answer {options.question}"),
                    "reason": answer.reason,
                    "guard": answer.guard,
                },
                "hash": res.hash,
            }
            if matched is not None:
                single["matched"] = matched
            return _json_response(single)
        except RecordError as exc:
            msg = (
                f"the answers were computed but cannot be sent: {exc}. The request was "
                f"well-formed; a part of catalog {self.system.name!r} must return JSON data"
            )
            return _refuse(ClientError(422, "unrecordable_value", msg, fact=exc.fact))

    async def _answer(
        self, request: Request, state: dict[str, Any], options: AskOptions
    ) -> Answered | None:
        """Run `aask`, cancelled when the client disconnects first (then None)."""
        done: list[Answered] = []
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                # Once the body is read, the next message an ASGI server sends is the disconnect.
                if (await request.receive())["type"] == "http.disconnect":
                    tg.cancel_scope.cancel()

            tg.start_soon(watch)
            done.append(
                await self.system.aask(
                    state,
                    early_exit=options.early_exit,
                    speculate=options.speculate,
                    timeout=options.timeout,
                    hooks=self.hooks,
                )
            )
            tg.cancel_scope.cancel()
        return done[0] if done else None

    async def plan(self, request: Request) -> Response:
        """GET /v1/plan?keys=a,b: the flow for requests with exactly these keys."""
        try:
            given = plan_keys(request.query_params)
        except ClientError as err:
            return _refuse(err)
        keys = {k.strip() for text in given for k in text.split(",") if k.strip()}
        try:
            check_key_count(len(keys), self.limits.max_keys, "keys=")
            keys = {self.keys.match(k) for k in keys}
            self.keys.check(keys)
        except ClientError as err:
            return _refuse(err)
        try:
            flow = self.system.plan(keys)
        except RequestError as exc:
            return _refuse(_not_an_input(exc))
        return _json_response(_flow_json(self.system, flow))

    async def healthz(self, request: Request) -> Response:
        """GET /healthz: up, and for which catalog."""
        return _json_response(self.health)

    async def metrics_text(self, request: Request) -> Response:
        """GET /metrics: the Prometheus text exposition."""
        from starlette.responses import Response

        return Response(self.metrics.render(), media_type="text/plain; version=0.0.4")

    async def openapi_json(self, request: Request) -> Response:
        """GET /openapi.json: the OpenAPI description (with the mount path as server)."""
        root = request.scope.get("root_path", "")
        if not root:
            return _json_response(self.description)
        return _json_response({**self.description, "servers": [{"url": root}]})

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Starlette's own 404 and 405, as JSON errors."""
        from starlette.exceptions import HTTPException

        if not isinstance(exc, HTTPException):  # pragma: no cover - registered for it only
            raise exc
        if exc.status_code == 405:
            code = "method_not_allowed"
            allowed = (exc.headers or {}).get("Allow", "")
            msg = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        else:
            code = "not_found"
            msg = (
                f"no endpoint {request.url.path!r}; this server has POST /v1/ask, "
                f"GET /v1/plan, GET /healthz, GET /metrics and GET /openapi.json"
            )
        return _json_response(_error_body(code, msg), exc.status_code, exc.headers)


def _positive(name: str, value: object, unit: str, *, whole: bool = True) -> None:
    """Refuse a limit that is not a positive (whole, or finite) number."""
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (isinstance(value, int) or not whole)
        and 0 < value < math.inf
    ):
        return
    what = "a positive whole number" if whole else "a positive finite number"
    msg = f"{name} must be {what} of {unit}, got {value!r}"
    raise ValueError(msg)


def asgi(
    system: System,
    *,
    max_body: int = 1_000_000,
    max_keys: int = 1_000,
    read_timeout: float = 10.0,
    allow_overrides: bool = False,
    aliases: bool = False,
    close_system: bool = False,
) -> Starlette:
    """Build the HTTP app of a System: mount it in your own app, or serve it with uvicorn.

    The app is built once and holds its own metrics. Endpoints: ``POST /v1/ask``
    (the posted JSON object is the state; query options ``early_exit``,
    ``speculate``, ``timeout`` and ``question``), ``GET /v1/plan?keys=a,b``,
    ``GET /healthz``, ``GET /metrics`` and ``GET /openapi.json``. Errors a client
    causes are 4xx answers with a JSON body ``{"error": {"code", "message"}}``.

    A request may bring only the catalog's inputs (the keys no part produces):
    any other key is a 422 ``not_an_input``. With ``allow_overrides=True`` the
    System alone decides, as in ``system.ask``: it refuses hard checks and the
    facts they read unless its ``overrides=`` names them.

    With ``aliases=True`` (experimental) a key written in another convention
    (``monthlyIncome``, ``monthly-income``, ``Monthly Income``) or a synonym the
    catalog declares (``Catalog(aliases={"salary": "income"})``) is read as the
    input it names before anything else is checked, and the answer's JSON says
    what was renamed under ``"matched"`` (not part of the hash: the answers
    depend only on the renamed state). A key that could name two inputs, or two
    keys that name one, are a 422 ``ambiguous_key`` naming both.

    Args:
        system: the System that answers.
        max_body: the largest request body accepted, in bytes (413 above it).
        max_keys: the most keys a state (or ``keys=``) may have (422 above it).
        read_timeout: seconds the whole body may take to arrive (408 after it).
        allow_overrides: accept any key the System accepts, not only inputs.
        aliases: read keys in other conventions as the inputs they name.
        close_system: close the System when the app shuts down (its learning saved,
            its journal closed), as `solvi serve`, which loaded it, does. Leave it off
            for a System your own code owns and closes.

    Returns:
        A Starlette application.

    Raises:
        ImportError: Starlette is not installed (the message gives the install command).
        TypeError: `system` is not a System.
        ValueError: a limit is not a positive number.
        PlanError: with `aliases`, a synonym of the catalog names no input.
    """
    if not isinstance(system, System):
        msg = f"asgi() needs a solvi.System, got {type(system).__name__}; build System(catalog)"
        raise TypeError(msg)
    _positive("max_body", max_body, "bytes")
    _positive("max_keys", max_keys, "keys")
    _positive("read_timeout", read_timeout, "seconds", whole=False)
    need("starlette")
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.routing import Route

    limits = Limits(max_body, max_keys, float(read_timeout))
    keys = ServedKeys.of(system, allow_overrides=allow_overrides, aliases=aliases)
    server = _Server(system, limits, keys)
    routes = [
        Route("/v1/ask", server.ask, methods=["POST"]),
        Route("/v1/plan", server.plan, methods=["GET"]),
        Route("/healthz", server.healthz, methods=["GET"]),
        Route("/metrics", server.metrics_text, methods=["GET"]),
        Route("/openapi.json", server.openapi_json, methods=["GET"]),
    ]
    paths = frozenset(r.path for r in routes)
    app = Starlette(
        routes=routes,
        middleware=[Middleware(CountRequests, metrics=server.metrics, paths=paths)],
        exception_handlers={HTTPException: server.http_error},
        lifespan=_closing(system, server.metrics) if close_system else None,
    )
    # `/v1/ask/` is not found (a JSON 404), not redirected to a URL built from the
    # client's own Host header
    app.router.redirect_slashes = False
    return app


#: the most seconds a closing app waits for cancelled requests to close their entries
CLOSE_WAIT = 10.0


def _closing(system: System, metrics: Metrics) -> Any:
    """A lifespan that closes `system` once the app has stopped serving (off the loop:
    closing saves to the store and waits for the journal's writer).

    A server whose grace period ran out cancels the requests still running and then
    shuts the app down at once; each of them is still closing its journal entry as
    cancelled, so the System is closed only once they are done (or `CLOSE_WAIT`
    seconds have passed).
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        yield
        await metrics.drained(CLOSE_WAIT)
        await anyio.to_thread.run_sync(system.close)

    return lifespan
