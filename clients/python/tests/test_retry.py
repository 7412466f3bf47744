"""Retries on 429/503 with Retry-After, against a tiny local stub (the real server's rate limit is hard to
trigger on cue): it answers a scripted list of responses and records what it was sent."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cairn_client import AsyncCairnClient, CairnClient, CairnError, MemoryWrite, RetryPolicy
from cairn_client.retry import parse_retry_after

STATS: dict[str, object] = {"mode": "embedded", "space": None, "namespaces": {}}


def error(code: str, message: str) -> dict[str, object]:
    return {"error": {"code": code, "message": message}}


class Stub:
    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], object]] = []
        self.requests: list[tuple[float, str, str, bytes]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                stub.requests.append((time.monotonic(), self.command, self.path, body))
                status, headers, payload = (
                    stub.script.pop(0) if stub.script else (500, {}, error("INTERNAL", "no script"))
                )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def gaps(self) -> list[float]:
        times = [r[0] for r in self.requests]
        return [b - a for a, b in zip(times, times[1:])]


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_429_waits_retry_after_then_succeeds(stub: Stub) -> None:
    stub.script = [
        (429, {"retry-after": "1"}, error("RATE_LIMITED", "rate limit of 1 requests per minute exceeded")),
        (200, {}, STATS),
    ]
    with CairnClient(stub.url, api_key="k" * 16) as c:
        assert c.stats().mode == "embedded"
    assert len(stub.requests) == 2
    assert stub.gaps()[0] >= 0.95  # waited what Retry-After asked (a lower bound only: never a speed claim)


def test_503_backs_off_and_gives_up_after_max_attempts(stub: Stub) -> None:
    stub.script = [(503, {}, error("BACKEND_UNAVAILABLE", "redis is down"))] * 5
    policy = RetryPolicy(max_attempts=3, backoff=0.2, jitter=False)
    with CairnClient(stub.url, retry=policy) as c, pytest.raises(CairnError) as info:
        c.stats()
    e = info.value
    assert (e.code, e.status, e.message) == ("BACKEND_UNAVAILABLE", 503, "redis is down")
    assert len(stub.requests) == 3
    first, second = stub.gaps()
    assert first >= 0.18 and second >= 0.38  # 0.2 s, then doubled (lower bounds only)


def test_a_post_is_sent_again_whole(stub: Stub) -> None:
    written = {
        "items": [{"index": 0, "id": "m_1", "namespace": "ns", "status": "stored"}],
        "counts": {"stored": 1},
        "durable": True,
    }
    stub.script = [(503, {"retry-after": "0"}, error("BACKEND_UNAVAILABLE", "busy")), (201, {}, written)]
    with CairnClient(stub.url) as c:
        res = c.write(MemoryWrite(text="hello", namespace="ns"))
    assert res.items[0].id == "m_1"
    (_, m1, p1, b1), (_, m2, p2, b2) = stub.requests
    assert (m1, p1) == (m2, p2) == ("POST", "/v1/memories")
    assert b1 == b2 and json.loads(b1) == {"text": "hello", "namespace": "ns"}


def test_a_long_retry_after_is_raised_at_once(stub: Stub) -> None:
    stub.script = [(429, {"retry-after": "120"}, error("RATE_LIMITED", "slow down"))]
    with CairnClient(stub.url, retry=RetryPolicy(max_retry_after=30)) as c, pytest.raises(CairnError) as info:
        c.stats()
    assert (info.value.code, info.value.status, info.value.retry_after) == ("RATE_LIMITED", 429, 120.0)
    assert len(stub.requests) == 1


def test_no_retry_with_one_attempt_or_on_other_statuses(stub: Stub) -> None:
    stub.script = [(429, {"retry-after": "0"}, error("RATE_LIMITED", "x"))]
    with CairnClient(stub.url, retry=RetryPolicy(max_attempts=1)) as c, pytest.raises(CairnError):
        c.stats()
    assert len(stub.requests) == 1
    stub.script = [(400, {}, {"error": {"code": "INVALID_INPUT", "message": "bad k", "field": "k"}})]
    with CairnClient(stub.url) as c, pytest.raises(CairnError) as info:
        c.search("ns", "q")
    assert (info.value.code, info.value.field) == ("INVALID_INPUT", "k")
    assert len(stub.requests) == 2


def test_ready_returns_503_rather_than_retrying(stub: Stub) -> None:
    stub.script = [
        (503, {}, {"status": "unavailable", "checks": {"store": {"ok": False, "detail": "damaged"}}})
    ]
    with CairnClient(stub.url) as c:
        ready = c.ready()
    assert ready.status == "unavailable" and ready.checks is not None and not ready.checks["store"].ok
    assert len(stub.requests) == 1


def test_the_async_client_retries_too(stub: Stub) -> None:
    stub.script = [
        (429, {"retry-after": "0.3"}, error("RATE_LIMITED", "x")),
        (503, {"retry-after": "0"}, error("BACKEND_UNAVAILABLE", "y")),
        (200, {}, STATS),
    ]

    async def main() -> None:
        async with AsyncCairnClient(stub.url) as c:
            assert (await c.stats()).namespaces == {}

    asyncio.run(main())
    assert len(stub.requests) == 3 and stub.gaps()[0] >= 0.28


def test_an_unexpected_answer_is_an_error(stub: Stub) -> None:
    stub.script = [(200, {}, {"mode": "embedded"})]
    with CairnClient(stub.url) as c, pytest.raises(CairnError) as info:
        c.stats()
    assert info.value.code == "INTERNAL" and "'space'" in info.value.message


def test_retry_after_parsing_and_policy() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = time.time()
    assert 9 <= (parse_retry_after(formatdate(now + 10, usegmt=True), now=now) or 0) <= 11
    p = RetryPolicy(max_attempts=3, backoff=1, max_backoff=1.5, jitter=False)
    assert [p.delay(1, 503, None), p.delay(2, 503, None), p.delay(3, 503, None)] == [1, 1.5, None]
    assert p.delay(1, 500, None) is None and p.delay(1, 429, 7) == 7
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
