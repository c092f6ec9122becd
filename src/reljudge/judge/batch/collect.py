"""Collecting a finished batch: the provider's output and error files into the answer cache
and the label store, in bulk.

The answers go into the answer cache in one transaction (on a thread, while the files are read
and the events built), then the events into the store in one transaction that also marks the
batch collected and records its spend: grades and refusals graded by the online path's rules,
failed and unanswered lines as failures by kind. An answer that cannot be read is left for the
online path's one re-ask.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from reljudge.io.files import text_lines
from reljudge.judge.batch.files import Item, answer_fields, read_lines
from reljudge.judge.config import JudgeConfig
from reljudge.judge.http.client import Answer
from reljudge.judge.labeller import Labeller
from reljudge.judge.planning import shown_now
from reljudge.judge.report import BatchResult
from reljudge.labels import FailureKind, LabelEvent
from reljudge.store.batches import BatchLog, BatchRecord

if TYPE_CHECKING:  # pragma: no cover
    import openai

#: a job's queries and passages
Texts = tuple[Mapping[str, str], Mapping[str, Any]]


class Collects(Protocol):
    """What collecting a batch needs of its job (a BatchJob)."""

    @property
    def labeller(self) -> Labeller: ...

    @property
    def log(self) -> BatchLog: ...

    @property
    def config(self) -> JudgeConfig: ...

    @property
    def client(self) -> openai.OpenAI: ...

    @property
    def reasons(self) -> dict[int, str]: ...

    @property
    def texts(self) -> Texts: ...

    def step(self, name: str) -> None: ...

__all__ = ["Collected", "answer_events", "collect_batch"]


def _cache_all(cache: Any, feed: queue.SimpleQueue) -> None:
    """Lists of (custom_id, answer) from ``feed`` into the answer cache, until None, in one
    transaction (all or none, if killed)."""
    with cache.transact():
        while (chunk := feed.get()) is not None:
            for cid, answer in chunk:
                # the same request's answer: either will do
                cache.set(cid, answer.to_cache())


@dataclass
class Collected:
    """What collecting one batch left to do: items whose answer could not be read (to re-ask)
    and items it did not answer, each with its custom_id."""

    reask: dict[Item, str] = field(default_factory=dict)
    missed: dict[Item, str] = field(default_factory=dict)


def collect_batch(job: Collects, rec: BatchRecord, result: BatchResult,
                  settled: set[Item]) -> Collected:
    """Collect a finished batch of ``job`` in bulk: its answers into the cache (one transaction), then
    its events into the store (one transaction, which marks it collected and records its
    spend): grades and refusals as the online path grades a cached answer, failed and
    unanswered lines as failures by kind. Items in ``settled`` get no event; returns the
    items still to re-ask or to send again."""
    lab = job.labeller
    items: dict[str, list[Item]] = {}
    for cid, q, d, s in job.log.items(rec.id):
        items.setdefault(cid, []).append((q, d, s))
    answers: dict[str, Answer] = {}
    failed: dict[str, tuple[FailureKind, str]] = {}
    # the answers go into the cache in one transaction on a thread (SQLite releases the
    # GIL) while the files are read and the events built; the cache commits before the
    # store does, as online
    with ThreadPoolExecutor(1, thread_name_prefix="reljudge-cache") as pool:
        feed: queue.SimpleQueue = queue.SimpleQueue()
        cached = pool.submit(_cache_all, lab.cache(), feed)
        try:
            for file_id, is_output in ((rec.output_file_id, True),
                                       (rec.error_file_id, False)):
                if file_id:
                    lines = text_lines(job.client.files.content(file_id).text)
                    for i in range(0, len(lines), 4096):
                        feed.put(read_lines(lines[i:i + 4096], items, is_output, answers,
                                            failed))
        finally:
            feed.put(None)
        out = Collected()
        events = answer_events(lab, answers, items, settled, out, job.texts)
        cached.result()
    job.step("collecting")
    never_run = {"expired": FailureKind.EXPIRED, "cancelled": FailureKind.CANCELLED}
    reason = job.reasons.get(rec.id)
    for cid in items.keys() - answers.keys() - failed.keys():
        kind = never_run.get(rec.status, FailureKind.HTTP_STATUS)
        failed[cid] = (kind, f"batch {rec.status} before this request ran"
                       + (f": {reason}" if reason else ""))
    judge = lab.judge_id
    meta = {"model": job.config.model, "batch": rec.provider_id, "params": lab.params()}
    for cid, (kind, why) in failed.items():
        result.batch_failures[kind.value] += 1
        for item in items[cid]:
            if item not in settled:
                out.missed[item] = cid
                events.append(LabelEvent(
                    qid=item[0], docid=item[1], source_kind="llm", source_name=judge,
                    repeat=item[2], grade=None, failure=why, failure_kind=kind,
                    meta=meta))
    tin = sum(a.tokens_in for a in answers.values())
    tout = sum(a.tokens_out for a in answers.values())
    cost = lab.price.scaled(job.config.batch_discount).cost(tin, tout)
    job.log.collected(rec.id, events, spend=(lab.judge_id, f"batch {rec.provider_id}",
                                              len(answers), tin, tout, cost))
    result.collected_batches += 1
    result.collected_answers += len(answers)
    result.tokens_in += tin
    result.tokens_out += tout
    result.cost += cost
    return out


def answer_events(lab: Labeller, answers: Mapping[str, Answer],
                  items: Mapping[str, list[Item]], settled: set[Item],
                  out: Collected, texts: Texts = ({}, {})) -> list[LabelEvent]:
    """The events of a batch's answers, as the online labeller records a cached answer;
    items whose answer cannot be read go to ``out.reask``. Each event records the digest of
    the texts (``texts``: the run's queries and passages) when they rebuild the very request
    the batch answered (its custom_id), else none (the texts it answered are not known)."""
    events: list[LabelEvent] = []
    # one dict shared by the batch's events
    meta = lab.event_meta(lab.params())
    output, judge = lab.template.output, lab.judge_id
    for cid, answer in answers.items():
        fields = answer_fields(answer, output)
        for item in items[cid]:
            if item in settled:
                continue
            if fields is None:
                out.reask[item] = cid
            else:
                events.append(LabelEvent(item[0], item[1], source_kind="llm",
                                         source_name=judge, repeat=item[2], meta=meta,
                                         shown=_shown(lab, item, cid, *texts), **fields))
    return events


def _shown(lab: Labeller, item: Item, cid: str, queries: Mapping[str, str],
           passages: Mapping[str, Any]) -> str | None:
    """The digest of the texts this item's request was built from, when these texts rebuild
    it exactly (same cache key as the batch line's custom_id); else None."""
    q, d = item[0], item[1]
    if q not in queries or d not in passages:
        return None
    if lab.request_key(lab.messages(q, d, queries, passages), item[2]) != cid:
        return None
    return shown_now([(q, d)], queries, passages)[(q, d)]
