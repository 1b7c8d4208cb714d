"""What one app has served: counters and latency histograms, in the Prometheus text format."""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

import anyio

from solvi.hooks import RequestEvent, StepEvent
from solvi.system import System

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["STATUSES", "CountRequests", "Metrics"]

#: Upper bounds (seconds) of the latency histograms.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
STATUSES = ("decided", "forced", "abstained")


class _Histogram:
    """Counts of observations per latency bucket, with their sum."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(_BUCKETS)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.total += seconds
        self.count += 1
        i = bisect_left(_BUCKETS, seconds)
        if i < len(_BUCKETS):
            self.counts[i] += 1

    def lines(self, name: str, labels: str) -> list[str]:
        sep = "," if labels else ""
        out: list[str] = []
        running = 0
        for bound, n in zip(_BUCKETS, self.counts, strict=True):
            running += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        brace = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{brace} {self.total!r}")
        out.append(f"{name}_count{brace} {self.count}")
        return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """What one app has served, written in the Prometheus text format (version 0.0.4).

    It is a hook (`solvi.Hook`) the app passes to each `aask` it makes, so it counts
    the app's requests only, as they run: a call is counted when it ends, even in a
    request whose client then went away.
    """

    def __init__(self, system: System) -> None:
        self.catalog = system.name
        self.version = system.version
        self.http: dict[tuple[str, str, int], int] = {}
        self.answers: dict[tuple[str, str], int] = {
            (q.name, status): 0 for q in system.questions for status in STATUSES
        }
        self.safeguards: dict[tuple[str, str], int] = {}
        self.parts: dict[str, _Histogram] = {}
        self.asks = _Histogram()
        self.in_flight = 0
        #: set when the last request in flight ends, while the app waits to close
        self._drained: anyio.Event | None = None

    def ask_began(self) -> None:
        """A POST /v1/ask is being answered."""
        self.in_flight += 1

    def ask_ended(self) -> None:
        """A POST /v1/ask has ended, answered or not."""
        self.in_flight -= 1
        if self.in_flight == 0 and self._drained is not None:
            self._drained.set()

    async def drained(self, seconds: float) -> None:
        """Return once no POST /v1/ask is in flight, or `seconds` from now."""
        if self.in_flight:
            self._drained = anyio.Event()
            with anyio.move_on_after(seconds):
                await self._drained.wait()

    def count_http(self, path: str, method: str, status: int) -> None:
        key = (path, method, status)
        self.http[key] = self.http.get(key, 0) + 1

    def step_finished(self, event: StepEvent) -> None:
        """A call ended: its duration, and a safeguard when the part failed."""
        hist = self.parts.get(event.part)
        if hist is None:
            hist = self.parts[event.part] = _Histogram()
        hist.observe(event.duration or 0.0)
        if event.failed:
            kind = (str(event.outcome), event.part)
            self.safeguards[kind] = self.safeguards.get(kind, 0) + 1

    def request_finished(self, event: RequestEvent) -> None:
        """A request has its response: its duration and each question's status."""
        if event.outcome != "ok":
            return  # its caller went away: no answer was given
        self.asks.observe(event.duration or 0.0)
        for name, status in event.answers:
            self.answers[name, status] = self.answers.get((name, status), 0) + 1

    def render(self) -> str:
        lines = [
            "# HELP solvi_info The catalog this server answers for.",
            "# TYPE solvi_info gauge",
            f'solvi_info{{catalog="{_label(self.catalog)}",version="{_label(self.version)}"}} 1',
            "# HELP solvi_http_requests_total HTTP requests by path, method and status code.",
            "# TYPE solvi_http_requests_total counter",
        ]
        for (path, method, code), n in sorted(self.http.items()):
            lines.append(
                f'solvi_http_requests_total{{path="{_label(path)}",method="{method}",'
                f'status="{code}"}} {n}'
            )
        lines += [
            "# HELP solvi_requests_in_flight POST /v1/ask requests being answered now.",
            "# TYPE solvi_requests_in_flight gauge",
            f"solvi_requests_in_flight {self.in_flight}",
            "# HELP solvi_answers_total Answers given, by question and status.",
            "# TYPE solvi_answers_total counter",
        ]
        for (question, status), n in sorted(self.answers.items()):
            lines.append(
                f'solvi_answers_total{{question="{_label(question)}",status="{status}"}} {n}'
            )
        lines += [
            "# HELP solvi_safeguards_total Parts that timed out or raised, by kind and part.",
            "# TYPE solvi_safeguards_total counter",
        ]
        for (kind, part), n in sorted(self.safeguards.items()):
            lines.append(f'solvi_safeguards_total{{kind="{kind}",part="{_label(part)}"}} {n}')
        lines += [
            "# HELP solvi_ask_duration_seconds Time to answer one POST /v1/ask (aask only).",
            "# TYPE solvi_ask_duration_seconds histogram",
            *self.asks.lines("solvi_ask_duration_seconds", ""),
            "# HELP solvi_part_duration_seconds Run time of each call of a part.",
            "# TYPE solvi_part_duration_seconds histogram",
        ]
        for part, hist in sorted(self.parts.items()):
            lines += hist.lines("solvi_part_duration_seconds", f'part="{_label(part)}"')
        return "\n".join(lines) + "\n"


class CountRequests:
    """ASGI middleware: count every HTTP response by path, method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics, paths: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        # Unknown paths share one label, so clients cannot grow the metrics without bound.
        label = path if path in self.paths else "other"
        method = scope["method"] if scope["method"] in {"GET", "POST", "HEAD"} else "other"
        status = 500

        async def counting_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.count_http(label, method, status)
