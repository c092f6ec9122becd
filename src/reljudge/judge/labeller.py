"""The labeller: grade (query, passage) pairs with an LLM, paying for each answer once.

For each pair (and sample) not already settled by this judge in the sink (the label store):
render the prompt, look the exact request up in the answer cache, otherwise send it (after a
free pre-flight check of the endpoint, rate limited, retried by policy, within the budget)
and cache the answer at once; parse it, re-ask once with a repair message if it cannot be
read, and record a LabelEvent: a grade, or a failure with its kind and detail. A paid
answer is in the sink's spend ledger before it is cached, and a label store gets its event as
soon as it is read (a machine killed mid-run re-pays only its calls in flight); another sink
gets events in small batches (64, or what came in the last second). A job whose calls keep failing the
same way, or cannot reach the endpoint at all, stops with one line naming the URL and the
cause. Spread over several endpoints (``reljudge.judge.dispatch``), a pair goes to an
endpoint with a free worker, and an endpoint that keeps failing is drained while the others
go on. What a run would do, and what is settled already, is ``reljudge.judge.planning``; how
an answer becomes an event, ``reljudge.judge.judgment``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from reljudge.errors import LLMError
from reljudge.judge.budget import Budget, BudgetReached, prompt_tokens_bound, spending_limit
from reljudge.judge.cache import AnswerCache, cache_key, replica_key
from reljudge.judge.claiming import ClaimedItems
from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price, estimate_tokens, price_for
from reljudge.judge.dispatch import Dispatch, HandBack, Lane, NotSent, open_lane
from reljudge.judge.http.capabilities import Capabilities
from reljudge.judge.http.client import (
    JSON_SCHEMA,
    Answer,
    CallFailed,
)
from reljudge.judge.http.endpoints import Endpoint, resolve_endpoints
from reljudge.judge.interrupt import OnSigint
from reljudge.judge.judgment import judgment
from reljudge.judge.planning import check_inputs, estimate, plan, settled, shown_now, stale_note
from reljudge.judge.progress import Progress as _Progress
from reljudge.judge.prompts import Template, load_template
from reljudge.judge.report import CostEstimate, LabelReport
from reljudge.judge.sink import EventSink, JudgmentSink
from reljudge.labels import FailureKind, LabelEvent, passage_parts

_log = logging.getLogger(__name__)

#: events reach the sink at most this long after they arrive (or every 64, sooner)
FLUSH_SECONDS = 1.0
#: timed-out attempts to a local server before "most calls time out" may be said
TIMEOUTS_TO_WARN = 3

__all__ = ["BudgetReached", "CostEstimate", "JudgmentSink", "LabelReport", "Labeller",
           "label_pairs"]


class Labeller:
    """An LLM judge with a cache, a retry policy, rate limits, a budget and a breaker."""

    def __init__(self, config: JudgeConfig, template: Template | None = None, *,
                 on_warning: Callable[[str], None] | None = None):
        """``on_warning``: told each new warning of a run as it happens (the CLI prints it);
        by default it is logged (WARNING, this module's logger). Every warning is in the
        report too."""
        self.config = config
        self.on_warning = on_warning
        self.template = template or load_template(config.prompt)
        self.price: Price = price_for(config.model, override=(config.price_in, config.price_out))
        #: where calls go: one endpoint (today's job), or several (config.endpoints)
        self.specs: list[Endpoint] = resolve_endpoints(config)
        self.endpoint = self.specs[0]  # the first: the report and batch files name it
        self._cache = AnswerCache(config.resolved_cache_dir())
        self.shown: dict[tuple[str, str], str] = {}  # digests of the texts of this run
        self.stale: set[tuple[str, str, int]] = set()  # found stale by the last settled()
        self.caps = self._make_caps()
        self._judge_id = f"{self.specs[0].model}/{self.template.label}"
        self._meta = {"model": self.specs[0].model, "prompt": self.template.name,
                      "prompt_version": self.template.version, "prompt_hash": self.template.hash,
                      "endpoint": self.endpoint.display}
        self.dispatch: Dispatch | None = None  # a run's endpoints (made anew by label)
        self.retrying: dict[str, str] = {}  # calls waiting for a retry: key -> failure kind
        self._bar = _Progress(0, False)  # a run's progress display (made anew by label)
        self.budget = Budget()  # a run's spending limit (made anew by label; none until then)

    # -- identity and request shape --------------------------------------------------------
    @property
    def judge_id(self) -> str:
        """The source name of this judge's labels: model/prompt@version#hash8 (with several
        endpoints serving different models: the first endpoint's)."""
        return self._judge_id

    @property
    def judge_ids(self) -> list[str]:
        """Every judge of this job: one per model its endpoints serve, first endpoint's first."""
        return list(dict.fromkeys(f"{s.model}/{self.template.label}" for s in self.specs))

    def params(self) -> dict[str, Any]:
        """Decoding parameters sent with requests now (after any capability fall-back; part
        of the cache key; shared: do not mutate)."""
        return self.caps.params

    def _make_caps(self) -> Capabilities:
        c = self.config
        base: dict[str, Any] = {"temperature": c.temperature,
                                "max_tokens": c.max_tokens or (300 if self.template.output ==
                                                               "json" else 600)}
        if c.seed is not None:
            base["seed"] = c.seed
        return Capabilities(base, json_schema=JSON_SCHEMA if self.template.output == "json"
                            else None, logprobs=c.logprobs, token_field=c.token_field)

    def messages(self, qid: str, docid: str, queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> list[dict[str, str]]:
        """The rendered prompt of one pair."""
        text, title = passage_parts(passages[docid])
        # str(): a passage given as None renders as it always did ("None")
        return self.template.render(queries[qid], str(text), title)

    def request_key(self, messages: list[dict], sample: int) -> str:
        """The cache key of a request sent now (a Batch API line's custom_id; the first
        endpoint's with several)."""
        return self._key(messages, sample)

    def _key(self, messages: list[dict], sample: int, params: dict | None = None,
             spec: Endpoint | None = None) -> str:
        """The cache key of a request to an endpoint (default: the first): without its URL
        when it is one of several replicas, else today's key."""
        spec = spec or self.specs[0]
        params = self.params() if params is None else params
        if spec.replica:
            return replica_key(spec.model, messages, params, sample)
        return cache_key(spec.base_url, spec.model, messages, params, sample)

    def keys(self, messages: list[dict], sample: int) -> list[str]:
        """The request's cache key at every endpoint (one for replicas)."""
        return list(dict.fromkeys(self._key(messages, sample, spec=s) for s in self.specs))

    def cache(self):
        """The diskcache of answers (opened on first use)."""
        return self._cache.store()

    # -- planning (reljudge.judge.planning) ------------------------------------------------
    check_inputs = staticmethod(check_inputs)

    def settled(self, sink=None, current: Mapping[tuple[str, str], str] | None = None
                ) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, int]]]:
        """(qid, docid, sample) already settled in the sink for this judge (graded, or a
        failure of the answer unless --retry-failed), and the failures among them; with
        ``current`` (digests of the texts now), labels given to other texts are stale and
        handled by ``config.stale`` (``self.stale`` holds them)."""
        done, failed, self.stale = settled(self.judge_ids, self.config.retry_failed, sink,
                                           current, self.config.stale)
        return done, failed

    def check(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
              passages: Mapping[str, Any], sink=None) -> None:
        """Raise what ``label`` refuses before its first call (pairs without texts, a budget
        it cannot enforce, labels on changed texts under --stale fail), reading the sink only:
        a caller that writes for the run (its texts to the store) checks this first."""
        self.check_inputs(pairs, queries, passages)
        self.spending_limit(sink)
        if self.config.stale == "fail":
            self.settled(sink, shown_now(pairs, queries, passages))

    def estimate(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                 passages: Mapping[str, Any], sink=None) -> CostEstimate:
        """What a run would send after store and cache hits, and its rough cost (at the batch
        price with ``config.batch``)."""
        return estimate(self, pairs, queries, passages, sink)

    def check_endpoints(self) -> None:
        """Raise LLMError when no endpoint of the job passes its pre-flight check (it answers,
        and accepts the key), naming the URL and the cause; sends no paid call."""
        from reljudge.judge.sync import run_sync

        run_sync(self._check_endpoints())

    async def _check_endpoints(self) -> None:
        lanes = [open_lane(spec, self.config, self.judge_id, {}) for spec in self.specs]
        try:
            found = await asyncio.gather(*(lane.client.preflight() for lane in lanes),
                                         return_exceptions=True)
        finally:
            for lane in lanes:
                await lane.client.close()
        for outcome in found:
            if isinstance(outcome, BaseException) and not isinstance(outcome, CallFailed):
                raise outcome
        if all(isinstance(outcome, CallFailed) for outcome in found):
            e, lane = found[0], lanes[0]
            assert isinstance(e, CallFailed)
            raise LLMError(f"{e.url or lane.client.url}: {e.kind}: {e.describe()}")

    # -- shared with the Batch API path (reljudge.judge.batch) ------------------------------
    def event_meta(self, params: dict) -> dict[str, Any]:
        """The provenance an event of this judge carries (model, prompt, endpoint, the
        parameters sent)."""
        return {**self._meta, "params": params}

    # -- running ---------------------------------------------------------------------------
    def _warn(self, note: str, report: LabelReport) -> None:
        """A note for the report, told once as it happens (``on_warning``, else logged)."""
        if note not in report.warnings:
            report.warnings.append(note)
            if self.on_warning is not None:
                self.on_warning(note)
            else:  # unconfigured logging shows it on stderr as "warning: ...", as ever
                _log.warning("warning: %s", note)

    def _run(self) -> Dispatch:
        """The endpoints of the run under way (``ask`` is called by ``label``'s workers)."""
        if self.dispatch is None:
            raise RuntimeError("Labeller.ask is called during Labeller.label only")
        return self.dispatch

    async def ask(self, lane: Lane, messages: list[dict], sample: int, report: LabelReport,
                  requeue: bool = False, fresh: bool = False) -> tuple[Answer, bool, dict]:
        """An answer for these messages: from the cache, from an identical call in flight, or
        from the endpoint (cached at once). Returns (answer, was_cached, params sent).
        ``requeue``: a failed call whose pair another endpoint may take raises HandBack.
        ``fresh``: never the cached answer (a failed answer asked again: it replaces it).
        The request is built anew on each look: a capability fall-back changes it."""
        prober = False  # this call is the endpoint's first, and must stay so while it falls back
        while True:
            params = self.params()
            key = self._key(messages, sample, params, lane.spec)
            hit = None if fresh else self._cache.get(key)
            if hit is not None:  # 1. answered before
                return Answer(**hit), True, params
            if key in self._cache.inflight:  # 2. an identical call is in flight: its answer
                answer = await self._identical(lane, key, params)
                if answer is None:
                    continue  # it failed in a way this call may avoid: look again
                return answer, True, params
            self._may_send(lane)  # 3. the job stops, or this endpoint is drained: raises
            first = await self._turn(lane, prober)  # 4. the endpoint's first call goes alone
            if first is None:
                continue  # the first call is done: look again (the request may change)
            answer = await self._send(lane, key, messages, params, first, report, requeue)
            if answer is None:  # 5. a feature was rejected and dropped: send again
                prober = first
                continue
            return answer, False, params  # 6. paid for, cached, counted

    async def _identical(self, lane: Lane, key: str, params: dict) -> Answer | None:
        """The answer of the identical call in flight; None when it failed in a way this call
        may avoid (a feature dropped since, or another endpoint's failure); else its failure."""
        try:
            return await asyncio.shield(self._cache.inflight[key])
        except CallFailed as e:
            if e.feature and self.caps.fall_back(e.feature, params) is not None:
                return None
            if self._run().answered_elsewhere(lane, e):
                return None  # another endpoint's failure: ask this one
            raise

    def _may_send(self, lane: Lane) -> None:
        """Raise NotSent when the job is stopping, HandBack when this endpoint is drained."""
        if self._run().stop:
            raise NotSent
        if lane.drained is not None:
            raise HandBack

    async def _turn(self, lane: Lane, prober: bool) -> bool | None:
        """Whether this call is the endpoint's first (it opens the gate when done); None when
        it waited for that first call, which is done now."""
        if lane.gate is not None and lane.gate.is_set():
            return False
        return True if await self._run().ready(lane, prober) else None

    async def _send(self, lane: Lane, key: str, messages: list[dict], params: dict,
                    first: bool, report: LabelReport, requeue: bool) -> Answer | None:
        """Send the request within the budget and the rate limit; the answer, cached before
        anything else happens; None when a rejected feature was dropped (send again)."""
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._cache.inflight[key] = future  # before any await: an identical request waits
        held = 0.0
        try:
            held = await self._reserve(lane, messages, params)
            await lane.limiter.acquire(estimate_tokens(messages))
            if self._run().interrupted:  # Ctrl-C while this call waited for its turn
                raise NotSent
            answer = await self._call(lane, key, messages, params, report)
        except BaseException as e:
            if held:
                await self.budget.release(held)
            future.set_exception(e)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            del self._cache.inflight[key]
            if self._fell_back(lane, e, params, report):
                return None
            if first:
                _open(lane)
            if isinstance(e, CallFailed) and self._run().hand_back(lane, e, requeue):
                raise HandBack from e
            raise
        try:
            cost = lane.price.cost(answer.tokens_in, answer.tokens_out)
            try:  # in the spend ledger first: a cached answer is never an uncounted one
                lane.paid(answer, cost, report)
            finally:  # then cached, before anything else happens (a ledger error too)
                await self._cache.put(key, answer.to_cache())
            await self.budget.settle(held, cost)
            lane.breaker.success()
            if first:
                _open(lane)
            future.set_result(answer)
        finally:
            del self._cache.inflight[key]
        return answer

    async def _call(self, lane: Lane, key: str, messages: list[dict], params: dict,
                    report: LabelReport) -> Answer:
        """One call, retried by policy: counted in flight, its retries shown as they happen,
        and no retry after Ctrl-C."""
        run = self._run()

        def retrying(e: CallFailed) -> None:
            self._timed_out(lane, e, report)
            self.retrying[key] = e.kind.value
            self._bar.retrying(self.retrying.values())

        lane.in_flight += 1
        try:
            return await lane.client.complete(messages, params, lane.breaker.attempt_failed,
                                              halted=lambda: run.interrupted,
                                              on_retry=retrying)
        except CallFailed as e:
            self._timed_out(lane, e, report)
            raise
        finally:
            lane.in_flight -= 1
            if self.retrying.pop(key, None) is not None:
                self._bar.retrying(self.retrying.values())

    def _timed_out(self, lane: Lane, e: CallFailed, report: LabelReport) -> None:
        """Count a timed-out attempt; warn once when most calls to a local server time out
        with several in flight (it serves fewer at once than it is sent)."""
        if e.kind is not FailureKind.TIMEOUT:
            return
        lane.timeouts += 1
        if (lane.spec.local and lane.spec.concurrency > 1 and lane.timeouts >= TIMEOUTS_TO_WARN
                and lane.timeouts > lane.calls and not lane.told_slow):
            lane.told_slow = True
            self._warn(f"most calls to {lane.display} time out ({lane.timeouts} attempts timed "
                       f"out, {lane.calls} answered) at --concurrency "
                       f"{lane.spec.concurrency}: a local server answers as many calls at once "
                       "as it has slots and queues the rest; lower --concurrency to its slots "
                       "(e.g. --concurrency 1), or raise --timeout", report)

    async def _reserve(self, lane: Lane, messages: list[dict], params: dict) -> float:
        """The worst-case cost of this call, held in the budget (0 without a limit)."""
        if self.budget.limit is None:
            return 0.0
        max_out = params.get("max_tokens") or params.get("max_completion_tokens") or 0
        return await self.budget.reserve(lane.price.cost(prompt_tokens_bound(messages),
                                                         max_out))

    def _fell_back(self, lane: Lane, e: BaseException, params: dict,
                   report: LabelReport) -> bool:
        """After a failed call: True when the endpoint rejected a feature that was dropped
        (or another call dropped it); otherwise the breaker hears of it and may drain the
        endpoint (so does a fatal failure)."""
        if not isinstance(e, CallFailed):
            return False
        note = self.caps.fall_back(e.feature, params) if e.feature else None
        if note is not None:
            if note:
                self._warn(note, report)
            return True
        if e.fatal or lane.breaker.call_failed(e):
            self._run().drain(lane, e)
        return False

    def _lane_meta(self, spec: Endpoint) -> dict[str, Any]:
        """An endpoint's provenance (one endpoint: exactly what it always was)."""
        if not self.config.endpoints:
            return self._meta
        return {**self._meta, "model": spec.model, "endpoint": spec.display,
                "cache_scope": "replicas" if spec.replica else "endpoint"}

    def spending_limit(self, sink=None) -> Budget:
        """A run's budget: --max-cost, and --max-total-cost given the sink's spend ledger."""
        return spending_limit(self.config, [s.model for s in self.specs], sink)

    async def label(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                    passages: Mapping[str, Any], sink: EventSink | None = None, *,
                    progress: bool = False,
                    only: Collection[tuple[str, str, int]] | None = None,
                    handle_sigint: bool = False) -> LabelReport:
        """Label every pair (x samples) not yet settled in the sink; see the module doc.
        ``only``: just these (qid, docid, sample) items. A sink that is a JudgmentSink (the
        LabelStore) also settles items, claims them and records spend. ``handle_sigint``: while it runs, the
        first Ctrl-C stops new calls and saves what was answered (the CLI asks for it; off, the
        process's SIGINT handling is left as it is)."""
        start = time.perf_counter()
        self.check_inputs(pairs, queries, passages)
        store = sink if isinstance(sink, JudgmentSink) else None
        report = LabelReport(self.judge_id, pairs=len(pairs), price_known=self.price.known,
                             endpoint=self.endpoint.display)
        self.budget = self.spending_limit(sink)
        since = time.time()  # before reading what is settled (claims: answered elsewhere since)
        current = self.shown = shown_now(pairs, queries, passages)
        todo, report.already_done, report.already_failed = plan(
            pairs, self.config.samples, *self.settled(sink, current), only)
        if self.stale:
            report.stale = len(self.stale)
            self._warn(stale_note(len(self.stale), self.config.stale), report)
        report.items = len(todo) + report.already_done
        self.caps = self._make_caps()
        lanes = [open_lane(spec, self.config, f"{spec.model}/{self.template.label}",
                           self._lane_meta(spec), store) for spec in self.specs]
        self.dispatch = dispatch = Dispatch(lanes, lambda note: self._warn(note, report))
        pending: list[LabelEvent] = []
        bar = self._bar = _Progress(len(todo), progress)
        self.retrying = {}
        claims = None  # several processes on one store: each item is claimed before it is sent
        if store is not None and self.config.claim_lease > 0:
            claims = ClaimedItems(store, self.judge_id, todo, lease=self.config.claim_lease,
                                  chunk=max(1, min(64, self.config.concurrency)), since=since)

        stored: list[tuple[str, str, int]] = []  # items stored whose claims can go

        def flush() -> None:
            if pending and sink is not None:
                sink.add_events(pending)
                stored.extend((e.qid, e.docid, e.sample) for e in pending)
            pending.clear()
            if claims is not None and stored:
                claims.release(stored)
            stored.clear()

        if claims is not None:
            claims.on_wait = flush

        def judge(lane: Lane, item, requeue: bool):
            return judgment(self, lane, item, queries, passages, report, requeue)

        def record(event: LabelEvent) -> None:
            report.events.append(event)
            pending.append(event)
            if event.grade is None:
                report.add_failure(event)
            else:
                report.labelled += 1
            if store is not None:  # in the store at once, as its spend is: a machine
                store.add_events(pending)  # killed later re-pays only its calls in flight
                stored.extend((e.qid, e.docid, e.sample) for e in pending)
                pending.clear()
            if len(pending) >= 64 or len(stored) >= 64:
                flush()
            bar.advance(report)

        async def flush_in_time() -> None:
            """What was answered reaches the sink within FLUSH_SECONDS, calls or not (a
            killed machine loses at most that, plus its calls in flight)."""
            while True:
                await asyncio.sleep(FLUSH_SECONDS)
                try:
                    flush()
                except Exception:  # the store failed: the run's next or last flush says so
                    return

        loop = asyncio.get_running_loop()
        self._cache.start()
        interrupted = OnSigint(loop, lambda: self._warn(dispatch.interrupt(), report),
                               lambda: self._warn(dispatch.abandon(), report)
                               ) if handle_sigint else None
        renewer = asyncio.create_task(claims.keep()) if claims is not None else None
        ticker = asyncio.create_task(flush_in_time()) if sink is not None else None
        try:
            with bar:
                await dispatch.run(claims if claims is not None else todo, len(todo), judge,
                                   record, report)
        finally:
            report.not_sent += dispatch.left()
            try:  # the store may have failed: the rest must happen even so
                for task in (renewer, ticker):
                    if task is not None:
                        task.cancel()
                flush()
                if claims is not None:
                    claims.release()
                    claims.count_into(report, lambda note: self._warn(note, report))
            finally:
                if interrupted is not None:
                    interrupted.restore()
                for lane in lanes:
                    await lane.client.close()
                await self._cache.close()  # every answer received is kept for the next run
        if self.config.endpoints:
            report.endpoints = [lane.summary() for lane in lanes]
        report.stop_reason = dispatch.stop
        report.elapsed = time.perf_counter() - start
        if dispatch.fatal:
            raise LLMError(f"stopped: {dispatch.fatal}; {report.labelled} labels were saved "
                           "before it stopped")
        return report


def label_pairs(config: JudgeConfig, pairs: Sequence[tuple[str, str]],
                queries: Mapping[str, str], passages: Mapping[str, Any],
                sink: EventSink | None = None, *, progress: bool = False,
                handle_sigint: bool = False) -> LabelReport:
    """Synchronous wrapper around ``await Labeller(config).label(...)``; works inside a running
    event loop too (Jupyter), by running the job on its own loop in a worker thread (where
    ``handle_sigint`` cannot apply: signals reach the main thread only)."""
    from reljudge.judge.sync import run_sync

    return run_sync(Labeller(config).label(pairs, queries, passages, sink, progress=progress,
                                           handle_sigint=handle_sigint))


def _open(lane: Lane) -> None:
    """The endpoint's first call is done: the others may go."""
    if lane.gate is not None:
        lane.gate.set()
