"""The circuit breaker: stops a job, or drains an endpoint, whose calls keep failing the same
way."""

from __future__ import annotations

from reljudge.judge.failures import ENDPOINT_KINDS, CallFailed


class CircuitBreaker:
    """Stops a job whose calls keep failing the same way.

    Trips when ``threshold`` failures in a row were each an endpoint failure (connection,
    TLS) or identical to the one before. Until the first answer of a run it hears of every
    failed attempt (so a job whose first calls all fail stops within one call's retries);
    after that, of calls whose attempts ran out. An answer resets it.
    """

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.streak = 0
        self.last: CallFailed | None = None
        #: some call of this job got an answer
        self.answered = False
        self.tripped = False

    def success(self) -> None:
        """A call got an answer."""
        self.streak, self.last, self.answered = 0, None, True

    def failure(self, exc: CallFailed) -> bool:
        """Count a failure; True when the breaker trips (and from then on)."""
        same = self.last is not None and self.last.signature == exc.signature
        endpoint_down = exc.kind in ENDPOINT_KINDS and (self.last is None or
                                                       self.last.kind in ENDPOINT_KINDS)
        self.streak = self.streak + 1 if (same or endpoint_down or self.last is None) else 1
        self.last = exc
        self.tripped = self.tripped or (self.threshold > 0 and self.streak >= self.threshold)
        return self.tripped

    def attempt_failed(self, exc: CallFailed) -> bool:
        """A failed attempt (retries may follow): counted until the run's first answer
        (a rejected feature is not: the run falls back). True when retries should stop."""
        if not self.tripped and not self.answered and exc.feature is None:
            self.failure(exc)
        return self.tripped

    def call_failed(self, exc: CallFailed) -> bool:
        """A call whose attempts ended in failure; True when the job must stop."""
        if self.tripped or (not self.answered and exc.feature is None):
            # before the first answer its attempts were counted already
            return self.tripped
        return self.failure(exc)
