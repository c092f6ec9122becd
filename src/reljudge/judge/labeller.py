"""The labeller: grade (query, passage) pairs with an LLM, paying for each answer once.

For each pair (and sample) not already labelled by this judge in the sink (the label store):
render the prompt, look the exact request up in the call cache, otherwise send it (rate
limited, retried by policy, within budget) and cache the answer at once; parse it, re-ask once
with a repair message if it cannot be read, and record a LabelEvent: a grade, or a failure
with its reason and raw text. Events reach the sink in small batches as they arrive.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from reljudge.errors import InputError, LLMError
from reljudge.judge.client import JSON_SCHEMA, Answer, CallFailed, ChatClient, grade_probabilities
from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price, estimate_tokens, price_for
from reljudge.judge.limits import RateLimiter
from reljudge.judge.parse import REPAIR, parse_answer
from reljudge.judge.prompts import Template, load_template
from reljudge.types import LabelEvent

TRANSIENT_PREFIXES = ("gave up after", "timeout", "connection error", "malformed response")


class JudgmentSink(Protocol):
    """Where events go (the LabelStore is one)."""

    def add_events(self, events: Sequence[LabelEvent]) -> int: ...


class BudgetReached(Exception):
    """The spending limit is reached: no new paid call is started."""


@dataclass
class LabelReport:
    """What a labelling job did."""

    judge: str
    pairs: int = 0
    items: int = 0  # pairs x samples asked for
    already_done: int = 0  # in the sink from an earlier run
    cached: int = 0  # answers taken from the call cache
    calls: int = 0  # paid answers received (re-asks included)
    labelled: int = 0
    failed: int = 0
    failure_reasons: Counter = field(default_factory=Counter)
    not_sent: int = 0  # stopped by budget or interrupt before being asked
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    price_known: bool = True
    stop_reason: str | None = None
    elapsed: float = 0.0
    events: list[LabelEvent] = field(default_factory=list)

    def grades(self, aggregate: str = "majority") -> dict[tuple[str, str], int]:
        """The final grade of each pair labelled in this run (samples aggregated)."""
        from reljudge.store.merge import aggregate_grades

        votes: dict[tuple[str, str], list[int]] = {}
        for e in self.events:
            if e.grade is not None:
                votes.setdefault((e.qid, e.docid), []).append(e.grade)
        return {p: int(aggregate_grades(v, aggregate)) for p, v in votes.items()}

    def summary(self) -> dict[str, Any]:
        """The counts, for printing or JSON."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("events", "failure_reasons")}
        out["failure_reasons"] = dict(self.failure_reasons)
        return out


@dataclass(frozen=True)
class Estimate:
    """A dry run: what would be sent, and roughly what it would cost."""

    judge: str
    items: int
    already_done: int
    cached: int
    to_send: int
    tokens_in: int
    tokens_out: int
    cost: float
    price_known: bool


# json.dumps(..., sort_keys=True, ensure_ascii=False), without building an encoder per call
_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def _cache_key(base_url: str | None, model: str, messages: list[dict], params: dict,
               sample: int) -> str:
    blob = _KEY_JSON.encode({"base_url": (base_url or "").rstrip("/"), "model": model,
                             "messages": messages, "params": params, "sample": sample})
    return hashlib.sha256(blob.encode()).hexdigest()


def _failure_kind(reason: str) -> str:
    return reason.split(":")[0]


class Labeller:
    """An LLM judge with a cache, a retry policy, rate limits and a budget."""

    def __init__(self, config: JudgeConfig, template: Template | None = None):
        self.config = config
        self.template = template or load_template(config.prompt)
        self.price: Price = price_for(config.model, override=(config.price_in, config.price_out))
        self._cache = None
        self._inflight: dict[str, asyncio.Future] = {}
        self._io: ThreadPoolExecutor | None = None  # the cache's writer thread during a run
        self._stop: str | None = None
        # fixed for this judge: computed once, not per judgment
        self._params = self._make_params()
        self._judge_id = f"{config.model}/{self.template.label}"
        self._meta = {"model": config.model, "prompt": self.template.name,
                      "prompt_version": self.template.version, "prompt_hash": self.template.hash,
                      "params": self._params, "endpoint": _host(config.base_url)}

    # -- identity and request shape --------------------------------------------------------
    @property
    def judge_id(self) -> str:
        """The source name of this judge's labels: model/prompt@version#hash8."""
        return self._judge_id

    def params(self) -> dict[str, Any]:
        """Decoding parameters sent with every request (part of the cache key; shared: do not
        mutate)."""
        return self._params

    def _make_params(self) -> dict[str, Any]:
        c = self.config
        p: dict[str, Any] = {"temperature": c.temperature,
                             "max_tokens": c.max_tokens or (300 if self.template.output == "json"
                                                            else 600)}
        if c.seed is not None:
            p["seed"] = c.seed
        if self.template.output == "json":
            p["response_format"] = JSON_SCHEMA
        if c.logprobs:
            p["logprobs"] = True
            p["top_logprobs"] = 5
        return p

    def messages(self, qid: str, docid: str, queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> list[dict[str, str]]:
        """The rendered prompt of one pair."""
        p = passages[docid]
        text, title = (p, None) if isinstance(p, str) else (p.get("text", ""), p.get("title"))
        return self.template.render(queries[qid], text, title)

    def _key(self, messages: list[dict], sample: int) -> str:
        return _cache_key(self.config.base_url, self.config.model, messages, self.params(),
                          sample)

    def cache(self):
        """The diskcache of answers (opened on first use)."""
        if self._cache is None:
            import diskcache

            folder = self.config.resolved_cache_dir()
            folder.mkdir(parents=True, exist_ok=True)
            # paid answers are never evicted, and no eviction bookkeeping is paid for per call
            self._cache = diskcache.Cache(str(folder), eviction_policy="none")
        return self._cache

    # -- planning ------------------------------------------------------------------------
    def _check_inputs(self, pairs, queries, passages) -> None:
        missing_q = sorted({q for q, _ in pairs if q not in queries})
        missing_d = sorted({d for _, d in pairs if d not in passages})
        if missing_q or missing_d:
            parts = []
            if missing_q:
                parts.append(f"{len(missing_q)} query id(s) without text (e.g. {missing_q[:3]})")
            if missing_d:
                parts.append(f"{len(missing_d)} passage id(s) without text "
                             f"(e.g. {missing_d[:3]})")
            raise InputError("cannot label: " + "; ".join(parts))

    def _done(self, sink) -> set[tuple[str, str, int]]:
        """(qid, docid, sample) already settled in the sink for this judge."""
        if sink is None or not hasattr(sink, "events"):
            return set()
        done = set()
        for e in sink.events(source=self.judge_id):
            key = (e.qid, e.docid, e.sample)
            if e.grade is not None or not (self.config.retry_failed or
                                           e.failure.startswith(TRANSIENT_PREFIXES)):
                done.add(key)
        return done

    def _items(self, pairs, sink) -> tuple[list[tuple[str, str, int]], int]:
        done = self._done(sink)
        items = [(q, d, s) for q, d in pairs for s in range(self.config.samples)]
        todo = [it for it in items if it not in done]
        return todo, len(items) - len(todo)

    def estimate(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                 passages: Mapping[str, Any], sink=None) -> Estimate:
        """What a run would send after store and cache hits, and its rough cost."""
        self._check_inputs(pairs, queries, passages)
        todo, done = self._items(pairs, sink)
        cache = self.cache()
        cached = tin = 0
        seen: set[str] = set()
        for q, d, s in todo:
            msgs = self.messages(q, d, queries, passages)
            key = self._key(msgs, s)
            if key in cache or key in seen:
                cached += 1
                continue
            seen.add(key)
            tin += estimate_tokens(msgs)
        to_send = len(todo) - cached
        out_each = 150 if self.template.output == "text" and "M (match)" in self.template.user \
            else 40
        tout = to_send * out_each
        return Estimate(self.judge_id, len(todo) + done, done, cached, to_send, tin, tout,
                        self.price.cost(tin, tout), self.price.known)

    # -- running ---------------------------------------------------------------------------
    async def _ask(self, client: ChatClient, limiter: RateLimiter, messages: list[dict],
                   sample: int, report: LabelReport) -> tuple[Answer, bool]:
        """An answer for these messages: from the cache, from an identical call in flight, or
        from the endpoint (cached at once). Returns (answer, was_cached)."""
        key = self._key(messages, sample)
        hit = self.cache().get(key)
        if hit is not None:
            return Answer(**hit), True
        if key in self._inflight:
            answer = await asyncio.shield(self._inflight[key])
            return answer, True
        if self.config.max_cost is not None and report.cost >= self.config.max_cost:
            raise BudgetReached
        if self._stop:
            raise BudgetReached
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            await limiter.acquire(estimate_tokens(messages))
            answer = await client.complete(messages, self.params())
            await self._persist(key, answer)  # before anything else happens
            report.calls += 1
            report.tokens_in += answer.tokens_in
            report.tokens_out += answer.tokens_out
            report.cost += self.price.cost(answer.tokens_in, answer.tokens_out)
            future.set_result(answer)
            return answer, False
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._inflight[key]

    async def _persist(self, key: str, answer: Answer) -> None:
        """Cache a paid answer. SQLite's work runs on the run's cache thread (it releases the
        GIL), so the event loop keeps serving the other calls meanwhile."""
        await asyncio.get_running_loop().run_in_executor(self._io, self.cache().set, key,
                                                          answer.to_cache())

    async def _judge(self, client, limiter, item, queries, passages, report) -> LabelEvent:
        qid, docid, sample = item
        messages = self.messages(qid, docid, queries, passages)
        meta = dict(self._meta)
        base = dict(qid=qid, docid=docid, source_kind="llm", source_name=self.judge_id,
                    sample=sample, meta=meta)
        t0 = time.perf_counter()
        try:
            answer, cached = await self._ask(client, limiter, messages, sample, report)
        except CallFailed as e:
            if e.fatal:
                self._stop = self._stop or f"fatal: {e.reason}"
            return LabelEvent(grade=None, failure=e.reason, **base)
        report.cached += cached
        tin, tout, cost = answer.tokens_in, answer.tokens_out, 0.0
        cost = 0.0 if cached else self.price.cost(tin, tout)
        raw = answer.text
        if answer.finish_reason == "content_filter" or answer.refusal:
            why = answer.refusal or "content_filter"
            return LabelEvent(grade=None, failure=f"refused: {why}", raw=raw, tokens_in=tin,
                              tokens_out=tout, cost=cost, latency=answer.latency, **base)
        parsed = parse_answer(answer.text, self.template.output)
        final = answer
        if parsed.grade is None:  # one re-ask with a short repair message
            repair = messages + [{"role": "assistant", "content": answer.text or ""},
                                 {"role": "user", "content": REPAIR}]
            try:
                final, cached2 = await self._ask(client, limiter, repair, sample, report)
            except CallFailed as e:
                return LabelEvent(grade=None, failure=f"{parsed.reason}; re-ask failed: "
                                  f"{e.reason}", raw=raw, tokens_in=tin, tokens_out=tout,
                                  cost=cost, **base)
            report.cached += cached2
            tin, tout = tin + final.tokens_in, tout + final.tokens_out
            cost += 0.0 if cached2 else self.price.cost(final.tokens_in, final.tokens_out)
            raw = f"{raw}\n--- re-asked ---\n{final.text}"
            second = parse_answer(final.text, self.template.output)
            if second.grade is None:
                return LabelEvent(grade=None, failure=f"{parsed.reason} (re-asked once: "
                                  f"{second.reason})", raw=raw, tokens_in=tin, tokens_out=tout,
                                  cost=cost, latency=time.perf_counter() - t0, **base)
            parsed = second
        probs = grade_probabilities(final.logprobs, parsed.grade)
        expected = sum(g * p for g, p in enumerate(probs)) if probs else None
        return LabelEvent(grade=parsed.grade, raw=raw, probs=probs, expected_grade=expected,
                          tokens_in=tin, tokens_out=tout, cost=cost,
                          latency=answer.latency, **base)

    async def label(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                    passages: Mapping[str, Any], sink: JudgmentSink | None = None, *,
                    progress: bool = False) -> LabelReport:
        """Label every pair (x samples) not yet settled in the sink; see the module doc."""
        start = time.perf_counter()
        self._check_inputs(pairs, queries, passages)
        report = LabelReport(self.judge_id, pairs=len(pairs), price_known=self.price.known)
        todo, report.already_done = self._items(pairs, sink)
        report.items = len(todo) + report.already_done
        self._stop = None
        queue = iter(todo)  # shared by the workers (one thread: no two take the same item)
        pending: list[LabelEvent] = []
        bar = _Progress(len(todo), progress)

        def flush() -> None:
            if pending and sink is not None:
                sink.add_events(pending)
            pending.clear()

        client = ChatClient(base_url=self.config.base_url,
                            api_key=self.config.api_key.get_secret_value()
                            if self.config.api_key else None, model=self.config.model,
                            timeout=self.config.timeout, max_attempts=self.config.max_attempts,
                            backoff=self.config.backoff, connections=self.config.concurrency,
                            transport=self.config.transport)
        limiter = RateLimiter(self.config.rpm, self.config.tpm)

        async def worker() -> None:
            for item in queue:
                if self._stop:
                    report.not_sent += 1
                    continue
                try:
                    event = await self._judge(client, limiter, item, queries, passages, report)
                except BudgetReached:
                    report.not_sent += 1
                    self._stop = self._stop or "budget"
                    continue
                report.events.append(event)
                pending.append(event)
                if event.grade is None:
                    report.failed += 1
                    report.failure_reasons[_failure_kind(event.failure)] += 1
                else:
                    report.labelled += 1
                if len(pending) >= 64:
                    flush()
                bar.advance(report)

        loop = asyncio.get_running_loop()
        self._io = ThreadPoolExecutor(1, thread_name_prefix="reljudge-cache")
        interrupted = _on_sigint(loop, self)
        try:
            with bar:
                await asyncio.gather(*(worker() for _ in range(min(self.config.concurrency,
                                                                   max(1, len(todo))))))
        finally:
            flush()
            interrupted.restore()
            await client.close()
            if self._cache is not None:
                await loop.run_in_executor(self._io, self._cache.close)  # that thread's handle
                self._cache.close()
                self._cache = None
            self._io.shutdown()
            self._io = None
        report.stop_reason = self._stop
        report.elapsed = time.perf_counter() - start
        if self._stop and self._stop.startswith("fatal"):
            raise LLMError(f"the endpoint refused the job ({self._stop[7:]}); "
                           f"{report.labelled} labels were saved before it stopped")
        return report


def _host(url: str | None) -> str:
    """The endpoint's host, never its credentials or path."""
    if not url:
        return "api.openai.com"
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or "?"


class _on_sigint:
    """First Ctrl-C: stop starting calls, finish those in flight, save. Second: default."""

    def __init__(self, loop, labeller: Labeller):
        self.loop = loop
        self.active = False
        try:
            loop.add_signal_handler(signal.SIGINT, self._handle, labeller)
            self.active = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def _handle(self, labeller: Labeller) -> None:
        labeller._stop = "interrupted"
        self.restore()

    def restore(self) -> None:
        if self.active:
            self.loop.remove_signal_handler(signal.SIGINT)
            self.active = False


class _Progress:
    """A rich progress bar (done/total, rate, ETA, spend, failures); silent when off."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled and total:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("labelling"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(),
                                TextColumn("ETA"), TimeRemainingColumn(),
                                TextColumn("${task.fields[spend]:.4f}"),
                                TextColumn("[red]{task.fields[failed]} failed"), transient=False)
            self.task = self.bar.add_task("label", total=total, spend=0.0, failed=0, rate="-")
            self.start = self.shown = time.perf_counter()
            self.pending, self.report = 0, None  # advanced but not yet shown

    def advance(self, report: LabelReport) -> None:
        if self.bar is None:
            return
        self.pending += 1
        self.report = report
        if time.perf_counter() - self.shown >= 0.05:  # at most 20 redraws a second
            self._show()

    def _show(self) -> None:
        now, r = time.perf_counter(), self.report
        rate = (r.labelled + r.failed) / max(1e-9, now - self.start)
        self.bar.update(self.task, advance=self.pending, spend=r.cost, failed=r.failed,
                        rate=f"{rate:.1f}")
        self.pending, self.shown = 0, now

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            if self.pending:
                self._show()
            self.bar.__exit__(*exc)


def label_pairs(config: JudgeConfig, pairs: Sequence[tuple[str, str]],
                queries: Mapping[str, str], passages: Mapping[str, Any],
                sink: JudgmentSink | None = None, *, progress: bool = False) -> LabelReport:
    """Synchronous convenience wrapper around ``Labeller(config).label(...)``."""
    return asyncio.run(Labeller(config).label(pairs, queries, passages, sink,
                                              progress=progress))
