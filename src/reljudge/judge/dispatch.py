"""Endpoint failover: a job's pairs sent to its endpoints, and an endpoint that fails drained.

Each endpoint is a lane with its own client, workers, rate limiter and circuit breaker; a pair
goes to whichever lane has a free worker. A lane's free pre-flight check comes first, then its
first paid call goes alone (an endpoint that refuses every call costs one call, not one per
worker). A lane whose breaker opens, or that fails fatally (bad key, unknown model, TLS), is
drained: its pairs whose calls failed go back to the queue for the others. Only when every lane is drained does the job stop, with one line naming the URL and
the cause.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from reljudge.judge.budget import BudgetReached
from reljudge.judge.claiming import ClaimedItems, Wait
from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price, price_for
from reljudge.judge.failures import ENDPOINT_KINDS, CallFailed
from reljudge.judge.http.breaker import CircuitBreaker
from reljudge.judge.http.client import Answer, ChatClient
from reljudge.judge.http.endpoints import Endpoint
from reljudge.judge.http.limits import RateLimiter
from reljudge.judge.report import LabelReport
from reljudge.judge.sink import JudgmentSink
from reljudge.labels import FailureKind, LabelEvent

__all__ = ["HAND_BACK_KINDS", "Dispatch", "HandBack", "Lane", "NotSent", "WorkQueue",
           "open_lane"]

#: failed calls whose pair another endpoint may answer (the endpoint did not): handed back
#: while another endpoint is up, at most once per endpoint; any failure on a drained one too
HAND_BACK_KINDS = ENDPOINT_KINDS | {FailureKind.TIMEOUT}

Item = tuple[str, str, int]
#: a worker's pause while another process holds the items left
WAIT_SECONDS = 0.2


class NotSent(Exception):
    """The job is stopping (budget, breaker, fatal error, Ctrl-C): this item is not asked."""


class HandBack(Exception):
    """This item's call failed on an endpoint that is drained or unreachable while another
    endpoint is up: it goes back to the queue for the others."""


@dataclass(eq=False)
class Lane:
    """One endpoint during a run: its client, limiter, breaker, first-call gate and counts."""

    spec: Endpoint
    judge_id: str
    #: the price of its model
    price: Price
    client: ChatClient
    limiter: RateLimiter
    breaker: CircuitBreaker
    preflight: asyncio.Future | None = None
    gate: asyncio.Event | None = None
    #: why no more pairs go here
    drained: str | None = None
    #: judgments recorded by this lane's workers (cached answers included)
    pairs: int = 0
    #: paid answers it gave
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    #: pairs whose call failed here and went to another endpoint
    handed_back: int = 0
    #: calls sent and not yet ended
    in_flight: int = 0
    #: attempts that timed out (retried or not)
    timeouts: int = 0
    #: warned that most of its calls time out
    told_slow: bool = False
    #: its line in the store's spend ledger
    spend_run: int | None = None
    #: the store holding that line
    ledger: JudgmentSink | None = None
    #: provenance of its labels
    meta: dict = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The endpoint's base URL without credentials or query."""
        return self.spec.display

    def paid(self, answer: Answer, cost: float, report: LabelReport) -> None:
        """Count one paid answer here and in the run's report, and in the store's spend
        ledger at once (a process killed later has still counted it)."""
        for counts in (self, report):
            counts.calls += 1
            counts.tokens_in += answer.tokens_in
            counts.tokens_out += answer.tokens_out
            counts.cost += cost
        if self.ledger is not None and self.spend_run is not None:
            self.ledger.update_spend(self.spend_run, self.calls, self.tokens_in,
                                     self.tokens_out, self.cost)

    def summary(self) -> dict[str, Any]:
        """Its counts, for the report."""
        return {"endpoint": self.display, "model": self.spec.model,
                "concurrency": self.spec.concurrency, "pairs": self.pairs,
                "paid calls": self.calls, "handed back": self.handed_back,
                "drained": self.drained}


@dataclass(eq=False)
class WorkQueue:
    """The items of a run, shared by every lane's workers: those handed back by an endpoint
    first (never to one whose call of it failed already, while another could take it), then
    fresh ones in order."""

    #: ClaimedItems yields WAIT while others hold the rest
    items: Iterator[Item | Wait]
    back: deque[Item] = field(default_factory=deque)
    #: the lanes that handed it back
    tried: dict[Item, set[Lane]] = field(default_factory=dict)
    #: items being judged (any of them may be handed back)
    busy: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, lane: Lane, lanes: list[Lane]) -> Item | Wait | None:
        """The next item for this lane, or None when none is free for it."""
        for i, item in enumerate(self.back):
            if lane not in self.tried[item] or not self.elsewhere(item, lane, lanes):
                del self.back[i]
                return item
        return next(self.items, None)

    def elsewhere(self, item: Item, lane: Lane, lanes: list[Lane]) -> bool:
        """Another endpoint is up that has not failed this item yet."""
        tried = self.tried.get(item, set())
        return any(other is not lane and other.drained is None and other not in tried
                   for other in lanes)

    def hand_back(self, item: Item, lane: Lane) -> None:
        """This lane's call of the item failed: it goes to the others."""
        self.tried.setdefault(item, set()).add(lane)
        lane.handed_back += 1
        self.back.append(item)

    async def wait(self) -> bool:
        """Nothing to take: wait until an item in flight ends; False when none is in
        flight (the queue is done)."""
        if self.busy == 0:
            return False
        self._changed.clear()
        await self._changed.wait()
        return True

    def done_one(self) -> None:
        """An item taken is finished (judged, handed back, or not sent)."""
        self.busy -= 1
        self._changed.set()

    def left(self) -> int:
        """Items never judged (counted as not sent when the job stops)."""
        # those held elsewhere count too
        if isinstance(self.items, ClaimedItems):
            return len(self.back) + self.items.left()
        return len(self.back) + sum(1 for _ in self.items)


def open_lane(spec: Endpoint, config: JudgeConfig, judge_id: str, meta: dict[str, Any],
              store: JudgmentSink | None = None) -> Lane:
    """An endpoint ready for a run: client, limiter, breaker, spend ledger line (in the
    store, when there is one)."""
    c = config
    client = ChatClient(spec, timeout=c.timeout, max_attempts=c.max_attempts,
                        backoff=c.backoff, transport=c.transport, ca_bundle=c.ca_bundle,
                        client_cert=c.client_cert, client_key=c.client_key)
    lane = Lane(spec, judge_id, price_for(spec.model, override=(c.price_in, c.price_out)),
                client, RateLimiter(spec.rpm, spec.tpm), CircuitBreaker(c.breaker_after),
                meta=meta)
    if store is not None:
        lane.spend_run = store.open_spend(lane.judge_id, spec.display)
        lane.ledger = store
    return lane


class Dispatch:
    """One run's lanes: which endpoint takes a pair, which is drained, and whether the job
    stops (``stop``: "budget", "fatal", "interrupted"; ``fatal``: the line that says why)."""

    def __init__(self, lanes: list[Lane], warn: Callable[[str], None]):
        self.lanes = lanes
        #: told when an endpoint is drained while others go on
        self.warn = warn
        self.stop: str | None = None
        self.fatal: str | None = None
        self.queue: WorkQueue | None = None
        #: a second Ctrl-C: the calls in flight it ended
        self.abandoned: int | None = None
        self._workers: asyncio.Future | None = None

    @property
    def interrupted(self) -> bool:
        """Ctrl-C: no call starts and none is retried (those in flight may end)."""
        return self.stop == "interrupted"

    def interrupt(self) -> str:
        """The first Ctrl-C: stop starting calls and retries; what the job waits for."""
        self.stop = "interrupted"
        busy = [lane for lane in self.lanes if lane.in_flight]
        if not busy:
            return "Ctrl-C: stopping (no call in flight)"
        n = sum(lane.in_flight for lane in busy)
        where = ", ".join(f"{lane.in_flight} to {lane.display}" if len(busy) > 1
                          else lane.display for lane in busy)
        longest = max(lane.client.timeout for lane in busy)
        return (f"Ctrl-C: stopping: no new calls, no retries; waiting for {n} call(s) in "
                f"flight to {where} (at most {longest:g} s); Ctrl-C again to stop now "
                "without their answers")

    def abandon(self) -> str:
        """The second Ctrl-C: stop at once, abandoning the calls in flight; what was abandoned."""
        self.stop = "interrupted"
        self.abandoned = sum(lane.in_flight for lane in self.lanes)
        if self._workers is not None:
            self._workers.cancel()
        return (f"Ctrl-C again: stopped; {self.abandoned} call(s) in flight abandoned (asked "
                "again by the next run)")

    async def ready(self, lane: Lane, prober: bool = False) -> bool:
        """Before an endpoint's first paid call: its pre-flight check, once per job; then its
        first call goes alone. Returns True for the caller that makes that first call (it
        opens the gate)."""
        if lane.preflight is None:
            lane.preflight = asyncio.ensure_future(lane.client.preflight())
        try:
            await asyncio.shield(lane.preflight)
        except CallFailed as e:
            self.drain(lane, e)
            raise (HandBack if self.elsewhere(lane) else NotSent) from None
        if prober:
            return True
        if lane.gate is None:
            lane.gate = asyncio.Event()
            return True
        if not lane.gate.is_set():
            await lane.gate.wait()
            if self.stop:
                raise NotSent
            if lane.drained:
                raise HandBack
        return False

    def halt(self, e: CallFailed, client: ChatClient) -> None:
        """Stop the job for good: one line naming the URL and the cause."""
        # after Ctrl-C the job stops as asked, not as failed
        if self.fatal is None and not self.interrupted:
            self.fatal = f"{e.url or client.url}: {e.kind}: {e.describe()}"
            self.stop = "fatal"

    def drain(self, lane: Lane, e: CallFailed) -> None:
        """No more pairs go to this endpoint (breaker open, or a fatal failure); when it was
        the last one up, the job stops as a job on one endpoint does."""
        if lane.drained is not None:
            return
        lane.drained = f"{e.kind}: {e.describe()}"
        if lane.gate is not None:
            # its workers waiting for the first call see the drain
            lane.gate.set()
        if not any(other.drained is None for other in self.lanes):
            self.halt(e, lane.client)
        else:
            up = sum(other.drained is None for other in self.lanes)
            self.warn(f"endpoint {lane.display} drained ({lane.drained}): its pairs go to "
                      f"the other {up} endpoint(s)")

    def elsewhere(self, lane: Lane) -> bool:
        """Another endpoint than this one is up (a pair that failed here may go there)."""
        return any(other is not lane and other.drained is None for other in self.lanes)

    def hand_back(self, lane: Lane, e: CallFailed, requeue: bool) -> bool:
        """Whether this failed call's pair goes to another endpoint: this one is drained or
        did not answer (connection, TLS, timeout), and another is up."""
        return requeue and self.elsewhere(lane) and (lane.drained is not None
                                                     or e.kind in HAND_BACK_KINDS)

    def answered_elsewhere(self, lane: Lane, e: CallFailed) -> bool:
        """An identical call in flight failed in a way this (undrained) lane may still answer:
        it did not answer, or it was another endpoint's failure."""
        return len(self.lanes) > 1 and lane.drained is None and (
            e.kind in HAND_BACK_KINDS or self.lane_of(e) is not lane)

    def lane_of(self, e: CallFailed) -> Lane | None:
        """The lane whose call failed so."""
        return next((lane for lane in self.lanes if lane.client.url == e.url), None)

    async def run(self, todo: Iterable[Item | Wait], n: int,
                  judge: Callable[[Lane, Item, bool], Awaitable[LabelEvent]],
                  record: Callable[[LabelEvent], None], report: LabelReport) -> None:
        """Judge the ``n`` items of ``todo`` on every lane's workers until done or stopped:
        ``judge(lane, item, requeue)`` makes an event, ``record`` keeps it; items not asked
        are counted in ``report.not_sent`` (those never taken: call ``left()`` after)."""
        lanes = self.lanes
        queue = self.queue = WorkQueue(iter(todo))

        async def worker(lane: Lane) -> None:
            while not self.stop and lane.drained is None:
                item = queue.take(lane, lanes)
                # the items left are another process's: ask soon
                if isinstance(item, Wait):
                    await asyncio.sleep(WAIT_SECONDS)
                    continue
                if item is None:
                    if await queue.wait():
                        continue
                    return
                queue.busy += 1
                try:
                    # a pair moves on only to an endpoint that has not failed it yet
                    event = await judge(lane, item, queue.elsewhere(item, lane, lanes))
                except BudgetReached:
                    report.not_sent += 1
                    self.stop = self.stop or "budget"
                    continue
                except NotSent:
                    report.not_sent += 1
                    continue
                except HandBack:
                    queue.hand_back(item, lane)
                    continue
                except asyncio.CancelledError:
                    # abandoned by a second Ctrl-C
                    report.not_sent += 1
                    raise
                finally:
                    queue.done_one()
                lane.pairs += 1
                record(event)

        self._workers = asyncio.gather(*(worker(lane) for lane in lanes
                                         for _ in range(min(lane.spec.concurrency, max(1, n)))))
        try:
            await self._workers
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)  # Python 3.11+
            if self.abandoned is None or (cancelling is not None and cancelling()):
                # cancelled from outside, not by a second Ctrl-C
                raise

    def left(self) -> int:
        """Items never judged (counted as not sent when the job stops)."""
        return self.queue.left() if self.queue is not None else 0
