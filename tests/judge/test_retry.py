"""The retry policy: what is retried, Retry-After parsing, backoff with proportional jitter."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reljudge.judge.failures import CallFailed
from reljudge.judge.http.retry import RetryPolicy, Wait, is_retryable, retry_after
from reljudge.labels import FailureKind


def http(status, headers=None, feature=None):
    kind = FailureKind.RATE_LIMITED if status == 429 else FailureKind.HTTP_STATUS
    return CallFailed(kind, f"HTTP {status}", status=status, headers=headers or {},
                      feature=feature)


@pytest.mark.parametrize(("exc", "retried"), [
    (http(408), True), (http(409), True), (http(429), True), (http(500), True),
    (http(503), True), (http(400), False), (http(401), False), (http(404), False),
    (http(422), False), (CallFailed(FailureKind.CONNECTION, "refused"), True),
    (CallFailed(FailureKind.TIMEOUT, "slow"), True), (CallFailed(FailureKind.TLS, "cert"), False),
    (http(500, feature="response_format"), False),
    (http(503, {"x-should-retry": "false"}), False), (http(400, {"x-should-retry": "true"}), True),
    (CallFailed(FailureKind.UNPARSEABLE, "not JSON"), False), (ValueError("x"), False),
])
def test_what_is_retried(exc, retried):
    assert is_retryable(exc) is retried


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert retry_after({"retry-after": "2.5"}) == 2.5
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after-ms": "soon", "retry-after": "3"}) == 3.0
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= retry_after({"retry-after": later}) <= 31
    past = email.utils.formatdate(time.time() - 3600, usegmt=True)
    assert retry_after({"retry-after": past}) == 0.0
    assert retry_after({}) is None


@given(st.text(max_size=40))
def test_retry_after_never_raises_and_is_none_or_a_finite_non_negative_wait(value):
    for headers in ({"retry-after": value}, {"retry-after-ms": value}):
        got = retry_after(headers)
        assert got is None or (got >= 0 and got < float("inf"))


@given(st.floats(0.001, 10), st.integers(1, 12))
def test_backoff_jitter_grows_with_the_backoff(backoff, attempt):
    wait = Wait(backoff, maximum=1e9)
    base = backoff * 2 ** (attempt - 1)
    for _ in range(5):
        assert base <= wait.after(None, attempt) <= 1.5 * base


def test_a_server_wait_is_capped():
    assert Wait(1.0, maximum=5).after(http(429, {"retry-after": "3600"}), 1) == 5


def test_tenacity_runs_every_attempt_and_the_failure_carries_the_count():
    calls = []

    async def call():
        calls.append(1)
        raise http(503)

    policy = RetryPolicy(max_attempts=3, backoff=0.001)
    with pytest.raises(CallFailed) as e:
        asyncio.run(policy.run(call))
    assert len(calls) == 3 and e.value.attempts == 3 and e.value.gave_up
    assert e.value.describe() == "HTTP 503 (gave up after 3 attempts)"

    calls.clear()

    async def not_retried():
        calls.append(1)
        raise http(400)

    with pytest.raises(CallFailed) as e:
        asyncio.run(policy.run(not_retried))
    assert len(calls) == 1 and not e.value.gave_up and e.value.describe() == "HTTP 400"
