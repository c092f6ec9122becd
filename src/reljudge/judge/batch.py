"""Labelling through the OpenAI Batch API: the same requests as online, at the batch price.

Each request line is built from exactly the online path's prompt, parameters and body
(``Labeller.messages``, ``Labeller.params``, ``client.request_body``), and its ``custom_id`` is
the answer cache key, so a batch answer and an online answer of the same request are one cache
entry. Every step is recorded in the label store before the next one happens: the batch row and
its items before the upload, the input file id after it, the batch id after creation. A run
(``label --batch`` again, or ``reljudge batch collect``) resumes from those ids: it polls the
open batches, puts each answer in the answer cache, records failed lines as failures with their
kind, and then turns cached answers into grades with the online labeller's own code (so parse
rules, re-asks and events are the online path's). Pairs settled in the store, already cached, or
held by an open batch are never put in a new batch; so a process killed at any point and run
again submits no pair twice and loses no answer.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from reljudge.errors import ConfigError
from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.client import answer_from_response, request_body
from reljudge.judge.failures import CallFailed, FailureKind
from reljudge.judge.labeller import Labeller
from reljudge.judge.progress import BatchProgress
from reljudge.judge.report import LabelReport
from reljudge.store.batches import TERMINAL, BatchLog, BatchRecord
from reljudge.types import LabelEvent

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
_KILL_ENV = "RELJUDGE_TEST_KILL_AT"  # tests: SIGKILL this process at a named step

Item = tuple[str, str, int]


def _kill_point(step: str) -> None:
    """For the crash tests only: die here, as kill -9 would, when asked to."""
    if os.environ.get(_KILL_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class BatchLine:
    """One request line of a batch input file and the items it answers."""

    custom_id: str
    data: bytes  # the JSONL line, newline included
    items: tuple[Item, ...]
    worst_case: float  # the most this request can cost at the batch price


def build_lines(labeller: Labeller, items: Sequence[Item], queries: Mapping[str, str],
                passages: Mapping[str, Any], discount: float = 0.5,
                keys: Mapping[Item, str] | None = None) -> list[BatchLine]:
    """The batch request lines of these items (identical requests once), built from the
    online path's messages, parameters, body and cache key (``keys``: already computed)."""
    params = labeller.params()
    model = labeller.config.model
    out_limit = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    price = labeller.price.scaled(discount)
    by_key: dict[str, list[Item]] = {}
    bodies: dict[str, tuple[list[dict], bytes]] = {}
    for item in items:
        messages = labeller.messages(item[0], item[1], queries, passages)
        key = keys[item] if keys is not None else labeller.request_key(messages, item[2])
        if key not in by_key:
            by_key[key] = []
            line = {"custom_id": key, "method": "POST", "url": ENDPOINT,
                    "body": request_body(model, messages, params)}
            bodies[key] = (messages, (json.dumps(line, ensure_ascii=False) + "\n").encode())
        by_key[key].append(item)
    return [BatchLine(k, bodies[k][1], tuple(v),
                      price.cost(prompt_tokens_bound(bodies[k][0]), out_limit))
            for k, v in by_key.items()]


def split_files(lines: Sequence[BatchLine], max_requests: int,
                max_bytes: int) -> Iterator[list[BatchLine]]:
    """Consecutive groups of lines, each within the request and byte limits of one file."""
    group: list[BatchLine] = []
    size = 0
    for line in lines:
        if len(line.data) > max_bytes:
            raise ConfigError(f"one batch request is {len(line.data)} bytes, more than "
                              f"--batch-bytes {max_bytes}")
        if group and (len(group) >= max_requests or size + len(line.data) > max_bytes):
            yield group
            group, size = [], 0
        group.append(line)
        size += len(line.data)
    if group:
        yield group


def line_failure(line: dict) -> tuple[FailureKind, str]:
    """The failure kind and detail of a batch error-file line."""
    error = line.get("error") or {}
    resp = line.get("response") or {}
    if error.get("code") == "batch_expired":
        return FailureKind.EXPIRED, "batch expired before this request ran"
    status = resp.get("status_code")
    if status:
        body = resp.get("body") or {}
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        kind = FailureKind.RATE_LIMITED if status == 429 else FailureKind.HTTP_STATUS
        return kind, f"HTTP {status}" + (f": {message}" if message else "")
    return FailureKind.HTTP_STATUS, f"batch error {error.get('code')}: {error.get('message')}"


@dataclass
class BatchResult:
    """What a ``--batch`` run did, and where the job stands."""

    judge: str
    items: int = 0  # pairs x samples asked for
    submitted_batches: int = 0  # batches created by this run
    submitted_requests: int = 0  # request lines in them
    collected_batches: int = 0
    collected_answers: int = 0  # answers put in the cache by this run
    batch_failures: Counter = field(default_factory=Counter)  # kind -> lines
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0  # at the batch price
    open: list[BatchRecord] = field(default_factory=list)  # still running at the end
    graded: int = 0  # items with a grade at the end
    without_grade: int = 0  # items that have none and are in no open batch
    stop_reason: str | None = None
    reports: list[LabelReport] = field(default_factory=list)  # cache -> grades, fallback

    @property
    def complete(self) -> bool:
        """Every item asked for has a grade."""
        return self.graded == self.items and not self.stop_reason


class BatchJob:
    """One judge's Batch API labelling over a label store."""

    def __init__(self, labeller: Labeller, store, *, out: TextIO | None = None):
        if store is None:
            raise ConfigError("--batch records its batches in a label store: pass --store")
        self.labeller = labeller
        self.config = labeller.config
        self.store = store
        self.log = BatchLog(store)
        self.out = out if out is not None else sys.stderr
        self._client = None

    @property
    def client(self):
        """The openai SDK client of the Files/Batch API (made on first use)."""
        if self._client is None:
            import openai

            from reljudge.judge.client import Endpoint

            c = self.config
            ep = Endpoint.resolve(c.batch_url or c.base_url,
                                  c.api_key.get_secret_value() if c.api_key else None)
            self._client = openai.OpenAI(base_url=ep.base_url, api_key=ep.api_key or "none",
                                         timeout=c.timeout, max_retries=c.max_attempts - 1)
        return self._client

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _config_record(self) -> dict:
        """The settings a later ``reljudge batch collect`` rebuilds this judge from (never
        the key; the endpoint and cache folder as resolved now, so the keys match)."""
        record = self.config.model_dump(mode="json", exclude={"api_key"})
        record.update(base_url=self.labeller.endpoint.base_url,
                      batch_url=self.config.batch_url or self.labeller.endpoint.base_url,
                      cache_dir=str(self.config.resolved_cache_dir()))
        return record

    # -- resume: poll and collect what earlier runs submitted -------------------------------
    def poll(self) -> list[BatchRecord]:
        """Bring every open batch of this judge one step on: create batches for uploaded
        files, refresh statuses; returns the batches that have finished (not yet collected)."""
        finished = []
        for rec in self.log.batches(self.labeller.judge_id, open_only=True):
            if rec.input_file_id is None:
                # killed before the upload's id was recorded: nothing was submitted for it
                self.log.update(rec.id, status="abandoned", collected=1)
                continue
            if rec.provider_id is None:
                self._create(rec.id, rec.input_file_id)
                rec = self._record(rec.id)
            b = self.client.batches.retrieve(rec.provider_id)
            counts = b.request_counts
            self.log.update(rec.id, status=b.status, output_file_id=b.output_file_id,
                            error_file_id=b.error_file_id,
                            completed=counts.completed if counts else 0,
                            failed=counts.failed if counts else 0)
            self._say(f"batch {rec.provider_id}: {b.status}"
                      + (f" ({counts.completed} done, {counts.failed} failed of {counts.total})"
                         if counts else ""))
            if b.status in TERMINAL:
                finished.append(self._record(rec.id))
        return finished

    def _record(self, bid: int) -> BatchRecord:
        return next(r for r in self.log.batches() if r.id == bid)

    def _create(self, bid: int, file_id: str, resuming: bool = True) -> str:
        """Create the batch of an uploaded file; when resuming, first look for the batch a
        killed run created but did not record (by its input file id)."""
        found = None
        if resuming:
            found = next((b for b in self.client.batches.list() if b.input_file_id == file_id),
                         None)
        if found is None:
            found = self.client.batches.create(
                input_file_id=file_id, endpoint=ENDPOINT, completion_window=COMPLETION_WINDOW,
                metadata={"reljudge_batch": str(bid), "judge": self.labeller.judge_id[:500]})
            _kill_point("creating")
        self.log.update(bid, provider_id=found.id, status=found.status)
        return found.id

    def collect(self, rec: BatchRecord, result: BatchResult) -> set[Item]:
        """Put a finished batch's answers in the cache and its failed lines in the store;
        returns the items that got no answer."""
        items: dict[str, list[Item]] = {}
        for cid, q, d, s in self.log.items(rec.id):
            items.setdefault(cid, []).append((q, d, s))
        cache = self.labeller.cache()
        price = self.labeller.price.scaled(self.config.batch_discount)
        seen: set[str] = set()
        failures: list[LabelEvent] = []
        tally = [0, 0, 0]  # answers, tokens in, tokens out
        meta = {"model": self.config.model, "batch": rec.provider_id,
                "params": self.labeller.params()}

        def fail(cid: str, kind: FailureKind, why: str) -> None:
            result.batch_failures[kind.value] += 1
            for q, d, s in items.get(cid, ()):
                failures.append(LabelEvent(qid=q, docid=d, source_kind="llm",
                                           source_name=self.labeller.judge_id, sample=s,
                                           grade=None, failure=why, failure_kind=kind.value,
                                           meta=meta))

        for file_id, is_output in ((rec.output_file_id, True), (rec.error_file_id, False)):
            if not file_id:
                continue
            lines = self.client.files.content(file_id).text.splitlines()
            # one cache transaction per file: a kill loses only uncommitted answers of a batch
            # not yet marked collected, which the next run downloads again
            with cache.transact():
                self._read_lines(lines, is_output, items, seen, cache, fail, tally)

        calls, tin, tout = tally
        cost = price.cost(tin, tout)
        result.collected_answers += calls
        for cid in items.keys() - seen:  # never run: the batch failed, expired or was cancelled
            kind = FailureKind.EXPIRED if rec.status in ("expired", "cancelled") \
                else FailureKind.HTTP_STATUS
            fail(cid, kind, f"batch {rec.status} before this request ran")
        now = time.time()
        source = self.store._source_id("llm", self.labeller.judge_id)
        self.store.add_events(failures, commit_with=[
            ("UPDATE batches SET collected = 1, updated_at = ? WHERE id = ?", (now, rec.id)),
            ("INSERT INTO spend (source, endpoint, started_at, updated_at, calls, tokens_in, "
             "tokens_out, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
             (source, f"batch {rec.provider_id}", now, now, calls, tin, tout, cost))])
        result.collected_batches += 1
        result.tokens_in += tin
        result.tokens_out += tout
        result.cost += cost
        return {it for e in failures for it in [(e.qid, e.docid, e.sample)]}

    @staticmethod
    def _read_lines(lines, is_output, items, seen, cache, fail, tally) -> None:
        """Answers of a downloaded file into the cache; failed lines to ``fail``."""
        for text in lines:
            if not text.strip():
                continue
            line = json.loads(text)
            cid = line.get("custom_id")
            if cid not in items or cid in seen:
                continue
            seen.add(cid)
            resp = line.get("response") or {}
            if not (is_output and resp.get("status_code") == 200):
                fail(cid, *line_failure(line))
                continue
            try:
                answer = answer_from_response(resp.get("body") or {})
            except CallFailed as e:
                fail(cid, e.kind, e.describe())
                continue
            cache.set(cid, answer.to_cache())  # the same request's answer: either will do
            tally[0] += 1
            tally[1] += answer.tokens_in
            tally[2] += answer.tokens_out
            _kill_point("collecting")

    # -- submitting ---------------------------------------------------------------------------
    def submit(self, lines: Sequence[BatchLine], result: BatchResult) -> None:
        """Upload and create batches for these lines, recording each id before going on."""
        budget = self.labeller._budget(self.store)
        held = sum(r.reserved for r in self.log.batches(open_only=True))
        for group in split_files(lines, self.config.batch_requests, self.config.batch_bytes):
            worst = sum(x.worst_case for x in group)
            if budget.limit is not None and held + worst > budget.limit:
                result.stop_reason = "budget"
                self._say(f"--max-cost: the next batch file's worst case (${worst:.4f}) would "
                          f"pass the limit; {sum(len(x.items) for x in group)} item(s) and "
                          "later files not submitted")
                return
            held += worst
            records = [(x.custom_id, *it) for x in group for it in x.items]
            bid = self.log.create(self.labeller.judge_id, ENDPOINT, self._config_record(),
                                  records, worst)
            data = b"".join(x.data for x in group)
            f = self.client.files.create(file=(f"reljudge-batch-{bid}.jsonl", io.BytesIO(data)),
                                         purpose="batch")
            self.log.update(bid, input_file_id=f.id, status="uploaded")
            _kill_point("uploaded")
            provider_id = self._create(bid, f.id, resuming=False)
            _kill_point("created")
            result.submitted_batches += 1
            result.submitted_requests += len(group)
            self._say(f"batch {provider_id}: submitted {len(group)} request(s)")

    # -- the whole job ------------------------------------------------------------------------
    async def run(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                  passages: Mapping[str, Any], *, wait: bool = False, progress: bool = False,
                  submit: bool = True) -> BatchResult:
        """Collect finished batches, grade their answers, submit what is left (unless not
        ``submit``); with ``wait``, poll every ``poll_interval`` seconds until no batch of this
        judge is open."""
        lab = self.labeller
        lab._check_inputs(pairs, queries, passages)
        result = BatchResult(lab.judge_id)
        all_items = {(q, d, s) for q, d in pairs for s in range(self.config.samples)}
        result.items = len(all_items)
        submitted = not submit
        watched: set[int] = set()  # our ids of the batches this run waits for
        with BatchProgress(progress and wait) as bar:
            await self._loop(pairs, queries, passages, result, all_items, submitted, watched,
                             bar, wait, progress)
        todo, _, failed = lab._items(pairs, self.store)
        result.graded = result.items - len(todo) - failed
        pending = self.log.pending(lab.judge_id)
        result.without_grade = len(todo) + failed - len(set(todo) & pending)
        return result

    async def _loop(self, pairs, queries, passages, result, all_items, submitted, watched, bar,
                    wait, progress) -> None:
        """Poll, collect, grade, submit; again every poll_interval while waiting."""
        lab = self.labeller
        progress = progress and bar.bar is None  # one live display at a time
        while True:
            watched |= {r.id for r in self.log.batches(lab.judge_id, open_only=True)}
            missed: set[Item] = set()
            for rec in self.poll():
                missed |= self.collect(rec, result) & all_items
            keys = await self._grade_cached(pairs, queries, passages, result, progress)
            if missed and self.config.batch_fallback == "online":
                self._say(f"--batch-fallback online: sending {len(missed)} item(s) a batch did "
                          "not answer online")
                report = await lab.label(pairs, queries, passages, self.store,
                                         progress=progress, only=missed)
                result.reports.append(report)
                if report.stop_reason:
                    result.stop_reason = report.stop_reason
                keys = {it: k for it, k in keys.items() if it not in missed}
            if not submitted and not result.stop_reason:
                pending = self.log.pending(lab.judge_id)
                todo = [it for it in keys if it not in pending]
                if todo:
                    self.submit(build_lines(lab, todo, queries, passages,
                                            self.config.batch_discount, keys), result)
                submitted = True  # re-batching happens on the next run, never twice in one
            result.open = self.log.batches(lab.judge_id, open_only=True)
            watched |= {r.id for r in result.open}
            bar.update([r for r in self.log.batches(lab.judge_id) if r.id in watched])
            if not wait or not result.open or result.stop_reason:
                return
            time.sleep(self.config.poll_interval)

    async def _grade_cached(self, pairs, queries, passages, result,
                            progress) -> dict[Item, str]:
        """Turn cached answers of unsettled items into events with the online code (from the
        cache: nothing is sent, except the one re-ask of an unreadable answer); returns the
        cache keys of the unsettled items that have no cached answer (in plan order): the
        candidates for a new batch."""
        lab = self.labeller
        todo, _, _ = lab._items(pairs, self.store)
        if not todo:
            return {}
        cache = lab.cache()
        keys = {it: lab.request_key(lab.messages(it[0], it[1], queries, passages), it[2])
                for it in todo}
        ready = {it for it, key in keys.items() if key in cache}
        if ready:
            report = await lab.label(pairs, queries, passages, self.store, progress=progress,
                                     only=ready)
            result.reports.append(report)
            if report.stop_reason:
                result.stop_reason = report.stop_reason
        return {it: key for it, key in keys.items() if it not in ready}

    def cancel(self) -> list[str]:
        """Ask the provider to cancel this judge's open batches; returns their ids (a later
        collect records their unanswered items as expired, to be sent again)."""
        cancelled = []
        for rec in self.log.batches(self.labeller.judge_id, open_only=True):
            if rec.provider_id and rec.status not in TERMINAL:
                b = self.client.batches.cancel(rec.provider_id)
                self.log.update(rec.id, status=b.status)
                cancelled.append(rec.provider_id)
        return cancelled


def recorded_jobs(store, api_key: str | None = None, *, out: TextIO | None = None,
                  open_only: bool = True) -> list[BatchJob]:
    """One BatchJob per judge settings recorded with the store's (open) batches, rebuilt
    from the settings saved at submission and this key (or OPENAI_API_KEY)."""
    from reljudge.judge.config import JudgeConfig

    configs: dict[str, dict] = {}
    for rec in BatchLog(store).batches(open_only=open_only):
        configs.setdefault(json.dumps(rec.config, sort_keys=True), rec.config)
    key = api_key or os.environ.get("OPENAI_API_KEY")
    return [BatchJob(Labeller(JudgeConfig(**cfg, api_key=key)), store, out=out)
            for cfg in configs.values()]


async def collect_recorded(store, api_key: str | None = None, *, wait: bool = False,
                           out: TextIO | None = None) -> list[BatchResult]:
    """Poll and collect every open batch in a store into the cache and the store, with the
    query and passage texts the store holds; submits nothing."""
    results = []
    for job in recorded_jobs(store, api_key, out=out):
        log = job.log
        items = {(q, d) for rec in log.batches(job.labeller.judge_id, open_only=True)
                 for _, q, d, _ in log.items(rec.id)}
        pairs = sorted(items)
        queries, passages = store.texts(pairs)
        missing = [q for q, _ in pairs if queries.get(q) is None] + \
            [d for _, d in pairs if passages.get(d) is None]
        if missing:
            raise ConfigError(f"{store.path}: no text for {len(missing)} query/passage id(s) "
                              f"of the recorded batches (e.g. {missing[:3]}): collect with "
                              "reljudge label --batch and the original inputs")
        results.append(await job.run(pairs, queries, passages, wait=wait, submit=False))
    return results
