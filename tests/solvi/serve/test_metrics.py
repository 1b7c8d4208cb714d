"""The server's metrics on their own: a known sequence of hook events and HTTP responses
gives exactly this Prometheus exposition text."""

from __future__ import annotations

from solvi import Catalog, Question, System
from solvi.hooks import RequestEvent, StepEvent
from solvi.serve._metrics import Metrics


def _system() -> System:
    cat = Catalog('shop"1')

    @cat.fn
    def price(item: str) -> float:
        return 1.0

    @cat.rule
    def buy(price: float) -> bool:
        return price < 2

    return System(cat, [Question("buy")])


def _buckets(name: str, labels: str, cumulative: list[int], count: int) -> list[str]:
    bounds = ("0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0")
    bounds += ("2.5", "5.0", "10.0")
    sep = "," if labels else ""
    lines = [
        f'{name}_bucket{{{labels}{sep}le="{b}"}} {n}'
        for b, n in zip(bounds, cumulative, strict=True)
    ]
    return [*lines, f'{name}_bucket{{{labels}{sep}le="+Inf"}} {count}']


def test_a_known_sequence_of_events_renders_exactly() -> None:
    """Two calls of price (one raised), a request that answered, one the client left and
    three HTTP responses: counters, the in-flight gauge and both histograms, exactly."""
    system = _system()
    metrics = Metrics(system)
    metrics.step_finished(StepEvent("r1", "shop", "price", "price", 0.0, "ok", 0.003))
    metrics.step_finished(
        StepEvent("r2", "shop", "price", "price", 0.0, "error", 0.2, "ValueError: x")
    )
    metrics.request_finished(RequestEvent("r1", "shop", 0.0, "ok", 0.004, (("buy", "decided"),)))
    metrics.request_finished(RequestEvent("r2", "shop", 0.0, "cancelled", 0.3))
    metrics.count_http("/v1/ask", "POST", 200)
    metrics.count_http("/v1/ask", "POST", 200)
    metrics.count_http("other", "GET", 404)
    metrics.in_flight = 1
    version = system.version
    expected = [
        "# HELP solvi_info The catalog this server answers for.",
        "# TYPE solvi_info gauge",
        f'solvi_info{{catalog="shop\\"1",version="{version}"}} 1',
        "# HELP solvi_http_requests_total HTTP requests by path, method and status code.",
        "# TYPE solvi_http_requests_total counter",
        'solvi_http_requests_total{path="/v1/ask",method="POST",status="200"} 2',
        'solvi_http_requests_total{path="other",method="GET",status="404"} 1',
        "# HELP solvi_requests_in_flight POST /v1/ask requests being answered now.",
        "# TYPE solvi_requests_in_flight gauge",
        "solvi_requests_in_flight 1",
        "# HELP solvi_answers_total Answers given, by question and status.",
        "# TYPE solvi_answers_total counter",
        'solvi_answers_total{question="buy",status="abstained"} 0',
        'solvi_answers_total{question="buy",status="decided"} 1',
        'solvi_answers_total{question="buy",status="forced"} 0',
        "# HELP solvi_safeguards_total Parts that timed out or raised, by kind and part.",
        "# TYPE solvi_safeguards_total counter",
        'solvi_safeguards_total{kind="error",part="price"} 1',
        "# HELP solvi_ask_duration_seconds Time to answer one POST /v1/ask (aask only).",
        "# TYPE solvi_ask_duration_seconds histogram",
        *_buckets("solvi_ask_duration_seconds", "", [0, 0, 1, *[1] * 10], 1),
        "solvi_ask_duration_seconds_sum 0.004",
        "solvi_ask_duration_seconds_count 1",
        "# HELP solvi_part_duration_seconds Run time of each call of a part.",
        "# TYPE solvi_part_duration_seconds histogram",
        *_buckets(
            "solvi_part_duration_seconds", 'part="price"', [0, 0, 1, 1, 1, 1, 1, *[2] * 6], 2
        ),
        'solvi_part_duration_seconds_sum{part="price"} 0.203',
        'solvi_part_duration_seconds_count{part="price"} 2',
    ]
    assert metrics.render() == "\n".join(expected) + "\n"


def test_before_any_request_every_answer_count_is_zero() -> None:
    """A new app lists each question's statuses at 0 and no part histogram."""
    text = Metrics(_system()).render()
    assert 'solvi_answers_total{question="buy",status="forced"} 0' in text.splitlines()
    assert "solvi_part_duration_seconds_bucket" not in text
    assert text.splitlines()[-1] == "# TYPE solvi_part_duration_seconds histogram"


def test_a_bucket_bound_is_inclusive_and_past_the_last_only_inf_counts() -> None:
    """1.0 s falls in le="1.0"; 11 s in none but +Inf."""
    metrics = Metrics(_system())
    metrics.step_finished(StepEvent(None, "shop", "p", "p", 0.0, "ok", 1.0))
    metrics.step_finished(StepEvent(None, "shop", "p", "p", 0.0, "timeout", 11.0, "slow"))
    lines = metrics.render().splitlines()
    assert 'solvi_part_duration_seconds_bucket{part="p",le="0.5"} 0' in lines
    assert 'solvi_part_duration_seconds_bucket{part="p",le="1.0"} 1' in lines
    assert 'solvi_part_duration_seconds_bucket{part="p",le="10.0"} 1' in lines
    assert 'solvi_part_duration_seconds_bucket{part="p",le="+Inf"} 2' in lines
    assert 'solvi_safeguards_total{kind="timeout",part="p"} 1' in lines


def test_a_call_cancelled_with_its_request_is_no_safeguard() -> None:
    """A client gone away cancels its calls: their time is kept, but no part failed."""
    metrics = Metrics(_system())
    for outcome in ("cancelled", "error", "timeout", "interrupted", "ok"):
        metrics.step_finished(StepEvent("r", "shop", "price", "price", 0.0, outcome, 0.1))
    assert metrics.safeguards == {
        ("error", "price"): 1,
        ("timeout", "price"): 1,
        ("interrupted", "price"): 1,
    }
    assert metrics.parts["price"].count == 5
