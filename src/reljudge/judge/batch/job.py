"""Labelling through the OpenAI Batch API: the same requests as online, at the batch price.

Each request line is the online path's request, and its ``custom_id`` is the answer cache key,
so a batch answer and an online answer of the same request are one cache entry
(``reljudge.judge.batch.files``). Every step is recorded in the label store before the next
one happens: a job resumed after a kill finds what it made at the provider by its intent, never
makes it again, and collects finished batches in bulk (``reljudge.judge.batch.collect``).
Pairs settled in the store, already cached, or held by an open batch never go in a new batch:
no pair is submitted twice, no answer lost (docs/endpoints.md, "The Batch API").
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from reljudge.errors import ConfigError
from reljudge.judge.batch.collect import Collected, Texts, collect_batch
from reljudge.judge.batch.files import (
    ENDPOINT,
    BatchLine,
    Item,
    build_lines,
    split_files,
)
from reljudge.judge.labeller import Labeller
from reljudge.judge.planning import shown_now, stale_note
from reljudge.judge.progress import BatchProgress
from reljudge.judge.report import BatchResult
from reljudge.judge.role import Settled
from reljudge.store import LabelStore
from reljudge.store.batches import TERMINAL, BatchLog, BatchRecord

if TYPE_CHECKING:  # pragma: no cover
    import openai

__all__ = ["ENDPOINT", "BatchJob", "BatchLine", "BatchResult", "build_lines", "split_files",
           "upload_name"]

COMPLETION_WINDOW: Final = "24h"
Pairs = Sequence[tuple[str, str]]

#: the steps a job tells ``on_step`` it has just taken (each one recorded before the next)
STEPS = ("recorded", "uploading", "uploaded", "creating", "created", "collecting")

_log = logging.getLogger(__name__)


def upload_name(intent: str) -> str:
    """The file name an input file is uploaded under (how a resumed run finds it)."""
    return f"reljudge-batch-{intent}.jsonl"


def failure_reason(batch: Any) -> str:
    """What the provider says made a batch fail (its ``errors.data``: code, message, line)."""
    data = getattr(getattr(batch, "errors", None), "data", None) or []
    parts = [f"{e.code}: {e.message}" + (f" (line {e.line})" if getattr(e, "line", None) else "")
             for e in data]
    return "; ".join(parts) or "the provider gave no reason"


def new_intent(data: bytes) -> str:
    """A batch's intent: its input file's SHA-256 (16 hex) and 8 random hex digits, so two
    stores submitting the same file never take each other's upload or batch."""
    return f"{hashlib.sha256(data).hexdigest()[:16]}-{secrets.token_hex(4)}"


class BatchJob:
    """One judge's Batch API labelling over a label store."""

    def __init__(self, labeller: Labeller, store: LabelStore, *, say: Callable[[str], None] | None = None,
                 on_step: Callable[[str], None] | None = None):
        """``say``: where the job's progress lines go (the CLI prints them; by default they
        are logged on this module's logger at WARNING, so that unconfigured logging still
        shows them on stderr as before). ``on_step``: called with each name of STEPS just after
        the job took it (a crash test kills the process there)."""
        if store is None:
            raise ConfigError("--batch records its batches in a label store: pass --store")
        self.labeller = labeller
        self.config = labeller.config
        self.store = store
        self.log = BatchLog(store)
        self._say = say if say is not None else _log.warning
        self._on_step = on_step
        self._client: openai.OpenAI | None = None
        #: the store's mark when last read, and what was settled then
        self._seen: tuple[str, Settled] | None = None
        #: our batch id -> why the provider failed it
        self.reasons: dict[int, str] = {}
        #: the job's queries and passages
        self.texts: Texts = ({}, {})
        #: digests of the job's texts (stale labels)
        self.current: dict | None = None
        #: the job's online steps catch Ctrl-C (an option of ``run``)
        self.handle_sigint = False

    def _tell(self, note: str) -> None:
        """A warning the user must see whatever --quiet says (the labeller's ``on_warning``,
        else logged at WARNING)."""
        if self.labeller.on_warning is not None:
            self.labeller.on_warning(note)
        else:
            _log.warning("warning: %s", note)

    @property
    def client(self) -> openai.OpenAI:
        """The openai SDK client of the Files/Batch API (made on first use)."""
        if self._client is None:
            import openai

            from reljudge.judge.http.endpoints import batch_endpoint

            c = self.config
            ep = batch_endpoint(c, self.labeller.endpoint)
            self._client = openai.OpenAI(base_url=ep.base_url, api_key=ep.api_key or "none",
                                         timeout=c.timeout, max_retries=c.max_attempts - 1)
        return self._client

    def step(self, name: str) -> None:
        """Tell on_step that this step (one of STEPS) was just taken."""
        if self._on_step is not None:
            self._on_step(name)

    def _config_record(self) -> dict:
        """The settings a later ``reljudge batch collect`` rebuilds this judge from (never
        the key; the endpoint and cache folder as resolved for this job, so the keys match)."""
        record = self.config.model_dump(mode="json", exclude={"api_key"})
        record.update(base_url=self.labeller.endpoint.base_url,
                      batch_url=self.config.batch_url or self.labeller.endpoint.base_url,
                      cache_dir=str(self.config.resolved_cache_dir()))
        return record

    # -- resume: poll and collect what earlier runs submitted -------------------------------
    def poll(self, *, create: bool = True) -> list[BatchRecord]:
        """Bring every open batch of this judge one step on: adopt the uploads and batches a
        killed run made but did not record, create batches for uploaded files (unless not
        ``create``: a status check never submits paid work), refresh statuses; returns the
        batches that have finished (not yet collected)."""
        finished = []
        for rec in self.log.batches(self.labeller.judge_id, open_only=True):
            file_id = rec.input_file_id
            if file_id is None:
                file_id = self._find_upload(rec.intent) if rec.intent else None
                if file_id is None:
                    # killed before the upload: nothing was submitted for it
                    self.log.update(rec.id, status="abandoned", collected=1)
                    continue
                self.log.update(rec.id, input_file_id=file_id, status="uploaded")
                rec = self.log.get(rec.id)
            provider_id = rec.provider_id
            if provider_id is None:
                if not create:
                    found = self._created(rec)
                    if found is None:
                        self._say(f"batch #{rec.id}: its file {rec.input_file_id} is uploaded "
                                  "but no batch was created for it (the run was stopped "
                                  "there); `reljudge batch collect` or `reljudge label "
                                  "--batch` submits it")
                        continue
                    self.log.update(rec.id, provider_id=found.id, status=found.status)
                    provider_id = found.id
                else:
                    provider_id = self._create(rec, file_id, resuming=True)
                rec = self.log.get(rec.id)
            b = self.client.batches.retrieve(provider_id)
            counts = b.request_counts
            self.log.update(rec.id, status=b.status, output_file_id=b.output_file_id,
                            error_file_id=b.error_file_id,
                            completed=counts.completed if counts else 0,
                            failed=counts.failed if counts else 0)
            self._say(f"batch {rec.provider_id}: {b.status}"
                      + (f" ({counts.completed} done, {counts.failed} failed of {counts.total})"
                         if counts else ""))
            if b.status == "failed":
                self.reasons[rec.id] = reason = failure_reason(b)
                self._tell(f"batch {rec.provider_id} failed: {reason}; its requests are sent "
                           "again by the next run (see --batch-requests, --batch-bytes, "
                           "--batch-tokens)")
            if b.status in TERMINAL:
                finished.append(self.log.get(rec.id))
        return finished

    def _find_upload(self, intent: str) -> str | None:
        """The id of the input file a killed run uploaded under this intent, if any."""
        name = upload_name(intent)
        return next((f.id for f in self.client.files.list(purpose="batch")
                     if f.filename == name), None)

    def _created(self, rec: BatchRecord) -> Any:
        """The provider's batch a killed run created for this record but did not record (by
        its intent in the metadata, or for records without one, by its input file), or None."""
        return next((b for b in self.client.batches.list()
                     if ((b.metadata or {}).get("reljudge_intent") == rec.intent
                         if rec.intent else b.input_file_id == rec.input_file_id)), None)

    def _create(self, rec: BatchRecord, file_id: str, resuming: bool = True) -> str:
        """Create the batch of an uploaded file (``file_id``); when resuming, first look for the batch a
        killed run created but did not record (by its intent in the metadata, or for batches
        recorded without one, by its input file id)."""
        found = self._created(rec) if resuming else None
        if found is None:
            metadata = {"reljudge_batch": str(rec.id), "judge": self.labeller.judge_id[:500]}
            if rec.intent:
                metadata["reljudge_intent"] = rec.intent
            found = self.client.batches.create(
                input_file_id=file_id, endpoint=ENDPOINT,
                completion_window=COMPLETION_WINDOW, metadata=metadata)
            self.step("creating")
        self.log.update(rec.id, provider_id=found.id, status=found.status)
        return found.id

    def collect(self, rec: BatchRecord, result: BatchResult,
                settled: set[Item]) -> Collected:
        """Collect a finished batch in bulk (``reljudge.judge.batch.collect``); items in
        ``settled`` get no event; returns the items still to re-ask or to send again."""
        return collect_batch(self, rec, result, settled)

    # -- submitting ---------------------------------------------------------------------------
    def submit(self, lines: Sequence[BatchLine], result: BatchResult) -> None:
        """Upload and create batches for these lines, recording each step before the next."""
        budget = self.labeller.spending_limit(self.store)
        held = sum(r.reserved for r in self.log.batches(open_only=True))
        for group in split_files(lines, self.config.batch_requests, self.config.batch_bytes,
                                 self.config.batch_tokens):
            worst = sum(x.worst_case for x in group)
            if budget.limit is not None and held + worst > budget.limit:
                result.stop_reason = "budget"
                self._say(f"--max-cost: the next batch file's worst case (${worst:.4f}) would "
                          f"pass the limit; {sum(len(x.items) for x in group)} item(s) and "
                          "later files not submitted")
                return
            held += worst
            data = b"".join(x.data for x in group)
            intent = new_intent(data)
            records = [(x.custom_id, *it) for x in group for it in x.items]
            bid = self.log.create(self.labeller.judge_id, ENDPOINT, self._config_record(),
                                  records, worst, intent=intent)
            self.step("recorded")
            f = self.client.files.create(file=(upload_name(intent), io.BytesIO(data)),
                                         purpose="batch")
            self.step("uploading")
            self.log.update(bid, input_file_id=f.id, status="uploaded")
            self.step("uploaded")
            provider_id = self._create(self.log.get(bid), f.id, resuming=False)
            self.step("created")
            result.submitted_batches += 1
            result.submitted_requests += len(group)
            self._say(f"batch {provider_id}: submitted {len(group)} request(s)")

    # -- the whole job ------------------------------------------------------------------------
    async def run(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                  passages: Mapping[str, Any], *, wait: bool = False, progress: bool = False,
                  submit: bool = True, handle_sigint: bool = False) -> BatchResult:
        """Collect finished batches, grade their answers, submit what is left (unless not
        ``submit``); with ``wait``, poll every ``poll_interval`` seconds until no batch of this
        judge is open. ``handle_sigint``: as for ``Labeller.label``, in its online steps."""
        lab = self.labeller
        lab.check_inputs(pairs, queries, passages)
        self.handle_sigint = handle_sigint
        # what a collected answer's texts are checked against
        self.texts = (queries, passages)
        self.current = shown_now(pairs, queries, passages)
        result = BatchResult(lab.judge_id)
        items = self._items(pairs)
        result.items = len(items)
        # --stale fail: an error before anything
        stale = self._settled().stale
        if stale:
            result.stale = len(stale)
            self._tell(stale_note(result.stale, self.config.stale))
        #: our ids of the batches this job waits for
        watched: set[int] = set()
        with BatchProgress(progress and wait) as bar:
            try:
                await self._loop(pairs, items, queries, passages, result, not submit, watched,
                                 bar, wait, progress)
            except asyncio.CancelledError:
                # Ctrl-C (asyncio.run cancels the main task)
                task = asyncio.current_task()
                # Python 3.10's asyncio.run raises KeyboardInterrupt instead: not Ctrl-C here
                if sys.version_info < (3, 11) or task is None or task.uncancel() > 0:
                    raise
                result.stop_reason = "interrupted"
                result.open = self.log.batches(lab.judge_id, open_only=True)
                self._tell("interrupted: every batch submitted so far is recorded and keeps "
                           "running at the provider; run the same command again to collect it")
        todo, failed = self._plan(items)
        result.graded = result.items - len(todo) - failed
        pending = self.log.pending(lab.judge_id)
        result.without_grade = len(todo) + failed - len(set(todo) & pending)
        return result

    async def _loop(self, pairs: Pairs, items: list[Item], queries: Mapping[str, str],
                    passages: Mapping[str, Any], result: BatchResult, submitted: bool,
                    watched: set[int], bar: BatchProgress, wait: bool, progress: bool) -> None:
        """Poll, collect, re-ask, submit; again every poll_interval while waiting (``items``:
        the pairs' items)."""
        lab = self.labeller
        # one live display at a time
        progress = progress and bar.bar is None
        wanted = set(items)
        while True:
            watched |= {r.id for r in self.log.batches(lab.judge_id, open_only=True)}
            finished = self.poll()
            if finished:
                settled = self._settled().done
                left = Collected()
                for rec in finished:
                    got = self.collect(rec, result, settled)
                    left.reask.update(got.reask)
                    left.missed.update(got.missed)
                reask = self._rebuildable({it: c for it, c in left.reask.items()
                                           if it in wanted}, queries, passages, "re-asked")
                # the online path's one re-ask, the first answer from the cache
                if reask:
                    await self._online(pairs, queries, passages, reask, result, progress)
                missed = {it: c for it, c in left.missed.items() if it in wanted}
                if missed and self.config.batch_fallback == "online":
                    self._say(f"--batch-fallback online: sending {len(missed)} item(s) a batch "
                              "did not answer online")
                    await self._online(pairs, queries, passages,
                                       self._rebuildable(missed, queries, passages, "sent"),
                                       result, progress)
            if not submitted and not result.stop_reason:
                await self._submit_rest(pairs, items, queries, passages, result, progress)
                # re-batching happens on the next job, never twice in one
                submitted = True
            result.open = self.log.batches(lab.judge_id, open_only=True)
            watched |= {r.id for r in result.open}
            bar.update([r for r in self.log.batches(lab.judge_id) if r.id in watched])
            if not wait or not result.open or result.stop_reason:
                return
            # Ctrl-C lands here at the latest
            await asyncio.sleep(self.config.poll_interval)

    def _items(self, pairs: Sequence[tuple[str, str]]) -> list[Item]:
        """The (qid, docid, repeat) items of these pairs, once each, in order."""
        return list(dict.fromkeys((q, d, s) for q, d in pairs
                                  for s in range(self.config.repeats)))

    def _settled(self) -> Settled:
        """The labeller's settled items (and failed ones among them) in the store, read again
        only when the store has changed since the last look."""
        mark = self.store.fingerprint()
        if self._seen is None or self._seen[0] != mark:
            self._seen = (mark, self.labeller.settled(self.store, self.current))
        return self._seen[1]

    def _plan(self, items: list[Item]) -> tuple[list[Item], int]:
        """Those of these items still to ask, and how many are settled as failures."""
        done, failed, _ = self._settled()
        return [it for it in items if it not in done], sum(1 for it in items if it in failed)

    def _rebuildable(self, items: dict[Item, str], queries: Mapping[str, str],
                     passages: Mapping[str, Any], what: str) -> set[Item]:
        """The items whose request these texts rebuild exactly (same cache key as the batch
        line's custom_id); the others are left, with a message, for a run with the original
        inputs (e.g. a store from before passage titles were kept)."""
        lab = self.labeller
        ok = {it for it, cid in items.items()
              if lab.request_key(lab.messages(it[0], it[1], queries, passages), it[2]) == cid}
        if len(ok) < len(items):
            self._say(f"{len(items) - len(ok)} item(s) not {what}: the query and passage texts "
                      "at hand do not rebuild their batch request; run reljudge label --batch "
                      "with the original inputs")
        return ok

    async def _online(self, pairs: Pairs, queries: Mapping[str, str],
                      passages: Mapping[str, Any], only: set[Item], result: BatchResult,
                      progress: bool) -> None:
        """These items through the online labeller (cached answers are taken from the cache)."""
        if not only:
            return
        report = await self.labeller.label(pairs, queries, passages, self.store,
                                           progress=progress, only=only,
                                           handle_sigint=self.handle_sigint)
        result.reports.append(report)
        if report.stop_reason:
            result.stop_reason = report.stop_reason

    async def _submit_rest(self, pairs: Pairs, items: list[Item], queries: Mapping[str, str],
                           passages: Mapping[str, Any], result: BatchResult,
                           progress: bool) -> None:
        """Batch every unsettled item no open batch holds; those whose answer is cached already
        (an online run's, or one a killed run collected) are graded from the cache instead."""
        lab = self.labeller
        pending = self.log.pending(lab.judge_id)
        todo = [it for it in self._plan(items)[0] if it not in pending]
        if not todo:
            return
        lines = build_lines(lab, todo, queries, passages, self.config.batch_discount)
        cache = lab.cache()
        cached = [x for x in lines if x.custom_id in cache]
        if cached:
            await self._online(pairs, queries, passages,
                               {it for x in cached for it in x.items}, result, progress)
            if result.stop_reason:
                return
            lines = [x for x in lines if x.custom_id not in cache]
        self.submit(lines, result)

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
