"""One labelling job: one execution of ``Labeller.label``, from its plan to its report.

A job holds what lives as long as it does: the report, the budget, the endpoints' lanes
(``reljudge.judge.dispatch``), the digests of the texts shown, the calls waiting for a retry,
the events on their way to the sink and the items claimed in a shared store. How an answer
becomes an event is ``reljudge.judge.judgment``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from reljudge.errors import LLMError
from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.claiming import ClaimedItems
from reljudge.judge.cost import estimate_tokens
from reljudge.judge.dispatch import Dispatch, HandBack, Lane, NotSent
from reljudge.judge.http.client import Answer, CallFailed
from reljudge.judge.interrupt import OnSigint
from reljudge.judge.judgment import judgment
from reljudge.judge.planning import plan, shown_now, stale_note
from reljudge.judge.progress import Progress
from reljudge.judge.report import LabelReport
from reljudge.judge.role import Item, Judge
from reljudge.judge.sink import EventSink, JudgmentSink
from reljudge.labels import FailureKind, LabelEvent

#: items per write to the sink and per claim on a shared store: few enough that a killed
#: process loses (or leaves claimed) little, enough that a write's fixed cost is shared
STORE_BATCH = 64
#: events reach the sink at most this long after they arrive (or every STORE_BATCH, sooner)
FLUSH_SECONDS = 1.0
#: timed-out attempts to a local server before "most calls time out" may be said
TIMEOUTS_TO_WARN = 3


class LabelJob:
    """One execution of a labeller over its pairs: planned when made, asked by ``run``."""

    def __init__(self, lab: Judge, pairs: Sequence[tuple[str, str]],
                 queries: Mapping[str, str], passages: Mapping[str, Any],
                 sink: EventSink | None = None, *, progress: bool = False,
                 only: Collection[Item] | None = None):
        """Plan the job (refusing what ``Labeller.check`` refuses) and open its lanes."""
        self.start = time.perf_counter()
        lab.check_inputs(pairs, queries, passages)
        self.lab, self.config = lab, lab.config
        self.queries, self.passages, self.sink = queries, passages, sink
        self.store = sink if isinstance(sink, JudgmentSink) else None
        self.report = LabelReport(lab.judge_id, pairs=len(pairs), price_known=lab.price.known,
                                  endpoint=lab.endpoint.display)
        self.budget = lab.spending_limit(sink)
        # before reading what is settled: a claim then sees what was answered elsewhere since
        since = time.time()
        self.shown = shown_now(pairs, queries, passages)
        self.todo = self._plan(pairs, only)
        self.caps = lab.new_caps()
        self.dispatch = Dispatch(lab.open_lanes(self.store), self.warn)
        self.pending: list[LabelEvent] = []
        #: stored items whose claims can go
        self.stored: list[Item] = []
        self.bar = Progress(len(self.todo), progress)
        #: calls waiting for a retry: key -> failure kind
        self.retrying: dict[str, str] = {}
        self.claims = self._claims(since)

    def _plan(self, pairs: Sequence[tuple[str, str]], only: Collection[Item] | None
              ) -> list[Item]:
        """The items to ask; what is settled already goes in the report."""
        report = self.report
        done, failed, stale = self.lab.settled(self.sink, self.shown)
        todo, report.already_done, report.already_failed = plan(
            pairs, self.config.repeats, done, failed, only)
        if stale:
            report.stale = len(stale)
            self.warn(stale_note(len(stale), self.config.stale))
        report.items = len(todo) + report.already_done
        return todo

    def _claims(self, since: float) -> ClaimedItems | None:
        """The items claimed a few at a time, when several processes may share the store."""
        if self.store is None or self.config.claim_lease <= 0:
            return None
        claims = ClaimedItems(self.store, self.lab.judge_id, self.todo,
                              lease=self.config.claim_lease,
                              chunk=max(1, min(STORE_BATCH, self.config.concurrency)),
                              since=since)
        claims.on_wait = self.flush
        return claims

    def warn(self, note: str) -> None:
        """A note for the report, told once as it happens."""
        if note not in self.report.warnings:
            self.report.warnings.append(note)
            self.lab.tell(note)

    def messages(self, qid: str, docid: str) -> list[dict[str, str]]:
        """The rendered prompt of one pair."""
        return self.lab.messages(qid, docid, self.queries, self.passages)

    def params(self) -> dict[str, Any]:
        """Decoding parameters this job sends (after any capability fall-back)."""
        return self.caps.params

    # -- the job's course ------------------------------------------------------------------
    async def run(self, handle_sigint: bool = False) -> LabelReport:
        """Judge every item planned, record its event and close; the report."""
        loop = asyncio.get_running_loop()
        self.lab.answers.start()
        interrupted = OnSigint(loop, lambda: self.warn(self.dispatch.interrupt()),
                               lambda: self.warn(self.dispatch.abandon())
                               ) if handle_sigint else None
        tasks = self._background()
        try:
            with self.bar:
                await self.dispatch.run(self.claims if self.claims is not None else self.todo,
                                        len(self.todo), self.judge, self.record, self.report)
        finally:
            self.report.not_sent += self.dispatch.left()
            try:
                # the store may have failed: the rest must happen even so
                self._wind_up(tasks)
            finally:
                await self._close(interrupted)
        return self._finish()

    async def judge(self, lane: Lane, item: Item, requeue: bool) -> LabelEvent:
        """One item's event, asked on this lane."""
        return await judgment(self, lane, item, requeue)

    def record(self, event: LabelEvent) -> None:
        """Count an event and send it on: at once to a label store, as its spend is (a
        machine killed later re-pays only its calls in flight), in batches to other sinks."""
        report = self.report
        report.events.append(event)
        self.pending.append(event)
        if event.grade is None:
            report.add_failure(event)
        else:
            report.labelled += 1
        if self.store is not None:
            self._write(self.store)
        if len(self.pending) >= STORE_BATCH or len(self.stored) >= STORE_BATCH:
            self.flush()
        self.bar.advance(report)

    def _write(self, sink: EventSink) -> None:
        """The pending events into the sink; their items' claims may go."""
        sink.add_events(self.pending)
        self.stored.extend((e.qid, e.docid, e.repeat) for e in self.pending)
        self.pending.clear()

    def flush(self) -> None:
        """The pending events into the sink, and the claims of stored items released."""
        if self.pending and self.sink is not None:
            self._write(self.sink)
        self.pending.clear()
        if self.claims is not None and self.stored:
            self.claims.release(self.stored)
        self.stored.clear()

    async def _flush_in_time(self) -> None:
        """What was answered reaches the sink within FLUSH_SECONDS, calls or not (a killed
        machine loses at most that, plus its calls in flight)."""
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            try:
                self.flush()
            except Exception:
                # the store failed: the job's next or last flush says so
                return

    def _background(self) -> list[asyncio.Task]:
        """The tasks beside the workers: claims renewed, events flushed in time."""
        tasks = []
        if self.claims is not None:
            tasks.append(asyncio.create_task(self.claims.keep()))
        if self.sink is not None:
            tasks.append(asyncio.create_task(self._flush_in_time()))
        return tasks

    def _wind_up(self, tasks: list[asyncio.Task]) -> None:
        """Stop the background tasks, flush, and give up the claims left."""
        for task in tasks:
            task.cancel()
        self.flush()
        if self.claims is not None:
            self.claims.release()
            self.claims.count_into(self.report, self.warn)

    async def _close(self, interrupted: OnSigint | None) -> None:
        """Give Ctrl-C back, close the clients, and keep every answer for the next job."""
        if interrupted is not None:
            interrupted.restore()
        for lane in self.dispatch.lanes:
            await lane.client.close()
        await self.lab.answers.close()

    def _finish(self) -> LabelReport:
        """The report; LLMError when the job stopped on a failure no endpoint survived."""
        report, dispatch = self.report, self.dispatch
        if self.config.endpoints:
            report.endpoints = [lane.summary() for lane in dispatch.lanes]
        report.stop_reason = dispatch.stop
        report.elapsed = time.perf_counter() - self.start
        if dispatch.fatal:
            raise LLMError(f"stopped: {dispatch.fatal}; {report.labelled} labels were saved "
                           "before it stopped")
        return report

    # -- one answer --------------------------------------------------------------------------
    async def ask(self, lane: Lane, messages: list[dict], repeat: int, requeue: bool = False,
                  fresh: bool = False) -> tuple[Answer, bool, dict]:
        """An answer for these messages: from the cache, from an identical call in flight, or
        from the endpoint (cached at once). Returns (answer, was_cached, params sent).
        ``requeue``: a failed call whose pair another endpoint may take raises HandBack.
        ``fresh``: never the cached answer (a failed answer asked again: it replaces it).
        The request is built anew on each look: a capability fall-back changes it."""
        # this call is the endpoint's first, and must stay so while it falls back
        prober = False
        while True:
            params = self.params()
            key = self.lab.key(messages, repeat, params, lane.spec)
            hit = None if fresh else self.lab.answers.get(key)
            if hit is not None:
                return Answer(**hit), True, params
            if key in self.lab.answers.inflight:
                answer = await self._identical(lane, key, params)
                if answer is None:
                    # it failed in a way this call may avoid: look again
                    continue
                return answer, True, params
            self._may_send(lane)
            first = await self._turn(lane, prober)
            if first is None:
                # the first call is done: the request may change
                continue
            answer = await self._send(lane, key, messages, params, first, requeue)
            # a feature was rejected and dropped: send again
            if answer is None:
                prober = first
                continue
            return answer, False, params

    async def _identical(self, lane: Lane, key: str, params: dict) -> Answer | None:
        """The answer of the identical call in flight; None when it failed in a way this call
        may avoid (a feature dropped since, or another endpoint's failure); else its failure."""
        try:
            return await asyncio.shield(self.lab.answers.inflight[key])
        except CallFailed as e:
            if e.feature and self.caps.fall_back(e.feature, params) is not None:
                return None
            if self.dispatch.answered_elsewhere(lane, e):
                return None
            raise

    def _may_send(self, lane: Lane) -> None:
        """Raise NotSent when the job is stopping, HandBack when this endpoint is drained."""
        if self.dispatch.stop:
            raise NotSent
        if lane.drained is not None:
            raise HandBack

    async def _turn(self, lane: Lane, prober: bool) -> bool | None:
        """Whether this call is the endpoint's first (it opens the gate when done); None when
        it waited for that first call, which is done."""
        if lane.gate is not None and lane.gate.is_set():
            return False
        return True if await self.dispatch.ready(lane, prober) else None

    async def _send(self, lane: Lane, key: str, messages: list[dict], params: dict,
                    first: bool, requeue: bool) -> Answer | None:
        """Send the request within the budget and the rate limit; the answer, cached before
        anything else happens; None when a rejected feature was dropped (send again)."""
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        # before any await: an identical request waits for this one
        self.lab.answers.inflight[key] = future
        held = 0.0
        try:
            held = await self._reserve(lane, messages, params)
            await lane.limiter.acquire(estimate_tokens(messages))
            # Ctrl-C while this call waited for its turn
            if self.dispatch.interrupted:
                raise NotSent
            answer = await self._call(lane, key, messages, params)
        except BaseException as e:
            if await self._unsent(lane, key, e, held, params, first, requeue):
                return None
            raise
        return await self._keep(lane, key, answer, held, first)

    async def _unsent(self, lane: Lane, key: str, e: BaseException, held: float,
                      params: dict, first: bool, requeue: bool) -> bool:
        """After a call that failed or was not made: the budget held released and the
        identical calls told; True when a rejected feature was dropped (send again); HandBack
        when another endpoint takes the pair."""
        if held:
            await self.budget.release(held)
        future = self.lab.answers.inflight.pop(key)
        future.set_exception(e)
        future.exception()  # mark retrieved: waiters re-raise it themselves
        if self._fell_back(lane, e, params):
            return True
        if first:
            _open(lane)
        if isinstance(e, CallFailed) and self.dispatch.hand_back(lane, e, requeue):
            raise HandBack from e
        return False

    async def _keep(self, lane: Lane, key: str, answer: Answer, held: float,
                    first: bool) -> Answer:
        """A paid answer counted in the spend ledger, then cached, before anything else."""
        answers = self.lab.answers
        try:
            cost = lane.price.cost(answer.tokens_in, answer.tokens_out)
            try:
                # a cached answer is never an uncounted one
                lane.paid(answer, cost, self.report)
            finally:
                # cached even when the ledger failed
                await answers.put(key, answer.to_cache())
            await self.budget.settle(held, cost)
            lane.breaker.success()
            if first:
                _open(lane)
            answers.inflight[key].set_result(answer)
        finally:
            del answers.inflight[key]
        return answer

    async def _call(self, lane: Lane, key: str, messages: list[dict], params: dict) -> Answer:
        """One call, retried by policy: counted in flight, its retries shown as they happen,
        and no retry after Ctrl-C."""
        dispatch = self.dispatch

        def retrying(e: CallFailed) -> None:
            self._timed_out(lane, e)
            self.retrying[key] = e.kind.value
            self.bar.retrying(self.retrying.values())

        lane.in_flight += 1
        try:
            return await lane.client.complete(messages, params, lane.breaker.attempt_failed,
                                              halted=lambda: dispatch.interrupted,
                                              on_retry=retrying)
        except CallFailed as e:
            self._timed_out(lane, e)
            raise
        finally:
            lane.in_flight -= 1
            if self.retrying.pop(key, None) is not None:
                self.bar.retrying(self.retrying.values())

    def _timed_out(self, lane: Lane, e: CallFailed) -> None:
        """Count a timed-out attempt; warn once when most calls to a local server time out
        with several in flight (it serves fewer at once than it is sent)."""
        if e.kind is not FailureKind.TIMEOUT:
            return
        lane.timeouts += 1
        if (lane.spec.local and lane.spec.concurrency > 1 and lane.timeouts >= TIMEOUTS_TO_WARN
                and lane.timeouts > lane.calls and not lane.told_slow):
            lane.told_slow = True
            self.warn(f"most calls to {lane.display} time out ({lane.timeouts} attempts timed "
                      f"out, {lane.calls} answered) at --concurrency "
                      f"{lane.spec.concurrency}: a local server answers as many calls at once "
                      "as it has slots and queues the rest; lower --concurrency to its slots "
                      "(e.g. --concurrency 1), or raise --timeout")

    async def _reserve(self, lane: Lane, messages: list[dict], params: dict) -> float:
        """The worst-case cost of this call, held in the budget (0 without a limit)."""
        if self.budget.limit is None:
            return 0.0
        max_out = params.get("max_tokens") or params.get("max_completion_tokens") or 0
        return await self.budget.reserve(lane.price.cost(prompt_tokens_bound(messages),
                                                         max_out))

    def _fell_back(self, lane: Lane, e: BaseException, params: dict) -> bool:
        """After a failed call: True when the endpoint rejected a feature that was dropped
        (or another call dropped it); otherwise the breaker hears of it and may drain the
        endpoint (so does a fatal failure)."""
        if not isinstance(e, CallFailed):
            return False
        note = self.caps.fall_back(e.feature, params) if e.feature else None
        if note is not None:
            if note:
                self.warn(note)
            return True
        if e.fatal or lane.breaker.call_failed(e):
            self.dispatch.drain(lane, e)
        return False


def _open(lane: Lane) -> None:
    """The endpoint's first call is done: the others may go."""
    if lane.gate is not None:
        lane.gate.set()
