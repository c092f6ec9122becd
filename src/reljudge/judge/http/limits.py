"""Client-side rate limits: requests and tokens per minute, as token buckets."""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """A bucket refilled at ``rate_per_minute``; ``take(n)`` waits until n units are there."""

    def __init__(self, rate_per_minute: float):
        self.rate = rate_per_minute / 60.0
        self.capacity = max(1.0, rate_per_minute / 60.0 * 5)  # at most ~5 s of burst
        self.level = self.capacity
        self.stamp = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self, n: float = 1.0) -> None:
        """Wait for and remove n units (n larger than capacity waits for a full bucket)."""
        n = min(n, self.capacity)
        async with self._lock:
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.level >= n:
                    self.level -= n
                    return
                await asyncio.sleep((n - self.level) / self.rate)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits (either may be None: no limit)."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        self.requests = TokenBucket(rpm) if rpm else None
        self.tokens = TokenBucket(tpm) if tpm else None

    async def acquire(self, tokens: int) -> None:
        """Wait until one request of about ``tokens`` tokens may be sent."""
        if self.requests:
            await self.requests.take(1)
        if self.tokens:
            await self.tokens.take(tokens)
