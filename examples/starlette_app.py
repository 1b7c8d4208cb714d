"""Refunds in your own Starlette app: a handler that awaits `system.aask`, and `solvi.asgi` mounted.

``POST /refunds`` takes ``{"order_id": "..."}``, answers with
``await system.aask(...)`` and returns a small JSON of its own: the decision,
the reason, and the record's hash for the audit trail. The whole solvi HTTP
API (``/solvi/v1/ask``, ``/solvi/v1/plan``, ``/solvi/metrics``, ...) is mounted
next to it. The order and payment lookups are async parts whose latency is
simulated with ``anyio.sleep``; the customer check stands for a client library
that only offers blocking calls, so it is declared ``blocking=True`` and runs in
a worker thread, never on the event loop. The handler asks with
``speculate=True``, so the lookups start at once and the payment lookup is
cancelled when the order turns out to be outside the refund window.

Run it with ``python examples/starlette_app.py`` (uvicorn on 127.0.0.1:8000), then::

    curl -s -X POST localhost:8000/refunds -H 'content-type: application/json' \\
        -d '{"order_id": "A-1"}'

Other code imports ``app`` and ``system`` from here; importing starts nothing.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from solvi import Catalog, Question, System, asgi

__all__ = ["ORDERS", "PAYMENTS", "app", "catalog", "main", "system"]

TODAY = dt.date(2025, 3, 1)

# -- the outside world, simulated ------------------------------------------------------

ORDERS: dict[str, dict[str, Any]] = {
    "A-1": {"amount": 40.0, "delivered": "2025-02-20", "customer": "c-7"},
    "A-2": {"amount": 980.0, "delivered": "2025-02-25", "customer": "c-7"},
    "A-3": {"amount": 25.0, "delivered": "2024-12-01", "customer": "c-9"},
}
PAYMENTS: dict[str, str] = {"A-1": "captured", "A-2": "captured", "A-3": "disputed"}
BANNED_CUSTOMERS = frozenset({"c-13"})

# -- the catalog -----------------------------------------------------------------------

catalog = Catalog("refunds")


@catalog.fn
async def order(order_id: str) -> dict[str, Any]:
    """The order, from the order service (20 ms)."""
    await anyio.sleep(0.02)
    return ORDERS[order_id]


@catalog.fn
async def payment(order_id: str) -> str:
    """The payment's state, from the payments service (30 ms)."""
    await anyio.sleep(0.03)
    return PAYMENTS[order_id]


@catalog.check(hard=True)
def within_window(order: dict[str, Any]) -> bool:
    """Refunds are possible up to 30 days after delivery."""
    return (TODAY - dt.date.fromisoformat(order["delivered"])).days <= 30


@catalog.check(hard=True, blocking=True)
def customer_in_good_standing(order: dict[str, Any]) -> bool:
    """The customer may get refunds, from the CRM's blocking client (10 ms, in a thread)."""
    time.sleep(0.01)
    return order["customer"] not in BANNED_CUSTOMERS


@catalog.rule
def refund(within_window: bool, order: dict[str, Any], payment: str) -> bool:
    """Refund small orders whose payment went through and is not disputed."""
    return order["amount"] < 500 and payment == "captured"


system = System(catalog, [Question("refund", forced=False)])

# -- your own app ----------------------------------------------------------------------


async def refunds(request: Request) -> JSONResponse:
    """Decide one refund with `await system.aask` and answer in this app's own format."""
    try:
        payload = await request.json()
    except ValueError:
        payload = None
    order_id = payload.get("order_id") if isinstance(payload, dict) else None
    if not isinstance(order_id, str):
        return JSONResponse({"error": 'send JSON like {"order_id": "A-1"}'}, status_code=400)
    res = await system.aask({"order_id": order_id}, speculate=True)
    answer = res["refund"]
    return JSONResponse(
        {
            "refund": answer.value,
            "status": answer.status,
            "reason": answer.reason,
            "record": res.hash,
        }
    )


app = Starlette(
    routes=[
        Route("/refunds", refunds, methods=["POST"]),
        Mount("/solvi", app=asgi(system)),
    ]
)


def main() -> None:
    """Serve the app on 127.0.0.1:8000 until interrupted."""
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
