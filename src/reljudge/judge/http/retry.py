"""The retry policy, in one place: which failures get another attempt, and how long to wait.

tenacity runs every attempt (the first included). Retried: connection errors, timeouts and
HTTP 408, 409, 429 and 5xx, unless the server says ``x-should-retry: false`` (and a 4xx the
server marks ``x-should-retry: true`` is retried). Never retried: TLS failures, other 4xx
answers, and errors naming a request feature the endpoint rejects (see capabilities).
The wait before attempt k+1 is the server's ``retry-after-ms`` / ``Retry-After`` (seconds or
an HTTP date; anything else is ignored), capped, or else ``backoff * 2**(k-1)`` plus a random
jitter of up to half that (so the jitter grows with the backoff), capped.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from reljudge.judge.failures import RETRY_STATUSES, CallFailed
from reljudge.labels import FailureKind

T = TypeVar("T")


def is_retryable(exc: BaseException) -> bool:
    """Worth another attempt under the policy above."""
    if not isinstance(exc, CallFailed) or exc.feature or exc.kind is FailureKind.TLS:
        return False
    should = (exc.headers.get("x-should-retry") or "").strip().lower()
    if should in ("true", "false"):
        return should == "true"
    if exc.kind in (FailureKind.CONNECTION, FailureKind.TIMEOUT, FailureKind.RATE_LIMITED):
        return True
    if exc.kind is FailureKind.HTTP_STATUS and exc.status is not None:
        return exc.status in RETRY_STATUSES or exc.status >= 500
    return False


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, or None when it did not (or said nonsense)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            ms = float(value)
            if math.isfinite(ms):
                return max(0.0, ms / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        import datetime

        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - time.time())


class Wait:
    """tenacity's wait: the server's Retry-After (capped), else exponential backoff + jitter."""

    def __init__(self, backoff: float, maximum: float = 60.0, jitter: float = 0.5):
        self.backoff, self.maximum, self.jitter = backoff, maximum, jitter

    def after(self, exc: BaseException | None, attempt: int) -> float:
        """Seconds to wait after attempt number ``attempt`` failed with ``exc``."""
        if isinstance(exc, CallFailed):
            asked = retry_after(exc.headers)
            if asked is not None:
                return min(asked, self.maximum)
        base = min(self.backoff * 2 ** (attempt - 1), self.maximum)
        return min(base * (1 + self.jitter * random.random()), self.maximum)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return self.after(exc, state.attempt_number)


class RetryPolicy:
    """Runs a call under the policy; a CallFailed that escapes carries its attempt count."""

    def __init__(self, max_attempts: int, backoff: float, max_backoff: float = 60.0):
        self.max_attempts = max_attempts
        self.wait = Wait(backoff, max_backoff)

    async def run(self, call: Callable[[], Awaitable[T]],
                  give_up: Callable[[CallFailed], bool] | None = None,
                  halted: Callable[[], bool] | None = None,
                  on_retry: Callable[[CallFailed], None] | None = None) -> T:
        """``call()`` until it succeeds, a failure is not retryable, attempts run out, or
        ``give_up(failure)`` (told of every failed attempt) says to stop. ``halted()``: the
        job is stopping (Ctrl-C): no further attempt starts, a wait for one ends at once, and
        the last failure stands. ``on_retry(failure)``: told before each wait for a retry."""
        def retry(e: BaseException) -> bool:
            if not isinstance(e, CallFailed) or (halted is not None and halted()):
                return False
            return (give_up is None or not give_up(e)) and is_retryable(e)

        failures: list[CallFailed] = []

        def before_sleep(state: RetryCallState) -> None:
            failed = state.outcome.exception() if state.outcome is not None else None
            if isinstance(failed, CallFailed):
                failures.append(failed)
                if on_retry is not None:
                    on_retry(failed)

        retrying = AsyncRetrying(retry=retry_if_exception(retry), wait=self.wait,
                                 stop=stop_after_attempt(self.max_attempts), reraise=True,
                                 before_sleep=before_sleep, sleep=_sleep_unless(halted))
        attempt_number = 0
        try:
            async for attempt in retrying:
                if failures and halted is not None and halted():
                    # halted while waiting: no further attempt
                    raise failures[-1]
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    return await call()
        except CallFailed as e:
            e.attempts = attempt_number
            e.gave_up = is_retryable(e)
            raise
        raise AssertionError("unreachable")  # pragma: no cover


#: how often a wait for a retry looks whether the job is stopping
HALT_POLL = 0.05


def _sleep_unless(halted: Callable[[], bool] | None) -> Callable[[float], Awaitable[None]]:
    """An asyncio sleep that ends early once ``halted()``."""
    async def sleep(seconds: float) -> None:
        if halted is None:
            await asyncio.sleep(seconds)
            return
        end = time.monotonic() + seconds
        while not halted() and (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(left, HALT_POLL))
    return sleep
