"""What a labelling job did (LabelReport; BatchResult for a ``--batch`` job) and what it would
do (CostQuote)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reljudge.choices import Aggregate
from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.labels import LabelEvent
from reljudge.store.batches import BatchRecord
from reljudge.trec_data import Qrels

if TYPE_CHECKING:
    from reljudge.store import LabelStore

SUMMARY_COLUMNS = ["judge", "pairs x repeats", "already in store", "from cache", "paid calls",
                   "labelled", "failed", "not sent", "tokens in", "tokens out", "cost $"]


@dataclass(repr=False)
class LabelReport(Tabular):
    """What a labelling job did. Prints as the ``label`` summary table with its failures;
    ``to_dataframe`` gives one row per event of this job (grades and failures)."""

    judge: str
    pairs: int = 0
    #: pairs x repeats asked for
    items: int = 0
    #: in the sink from an earlier job
    already_done: int = 0
    #: of those, answers that failed (asked again with retry_failed)
    already_failed: int = 0
    #: answers taken from the call cache
    cached: int = 0
    #: paid answers received (re-asks included)
    calls: int = 0
    labelled: int = 0
    failed: int = 0
    #: failure kind -> count
    failure_reasons: Counter = field(default_factory=Counter)
    #: kind -> "qid docid: why"
    failure_examples: dict[str, str] = field(default_factory=dict)
    #: stopped by budget, breaker or interrupt before being asked
    not_sent: int = 0
    #: labelled before on texts that have changed since (see --stale)
    stale: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    price_known: bool = True
    #: the resolved base URL (no credentials)
    endpoint: str = ""
    #: capability fall-backs, once each
    warnings: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    elapsed: float = 0.0
    events: list[LabelEvent] = field(default_factory=list)
    #: with several endpoints: per endpoint its pairs, paid calls, pairs handed back, and why
    #: it was drained (None: it stayed up)
    endpoints: list[dict[str, Any]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every pair x sample asked for has a grade."""
        return (self.labelled + self.already_done - self.already_failed == self.items
                and not self.stop_reason)

    def add_failure(self, event: LabelEvent) -> None:
        """Count a failed judgment under its kind (keeping the first as the example)."""
        kind = event.failure_kind or "unknown"
        self.failed += 1
        self.failure_reasons[kind] += 1
        self.failure_examples.setdefault(kind, f"{event.qid} {event.docid}: {event.failure}")

    def grades(self, aggregate: Aggregate = "majority", judge: str | None = None
               ) -> dict[tuple[str, str], int]:
        """The final grade of each pair labelled in this job (repeats aggregated), of one
        ``judge`` when given."""
        from reljudge.grades import aggregate_grades

        votes: dict[tuple[str, str], list[int]] = {}
        for e in self.events:
            if e.grade is not None and judge in (None, e.source_name):
                votes.setdefault((e.qid, e.docid), []).append(e.grade)
        return {p: int(aggregate_grades(v, aggregate)) for p, v in votes.items()}

    def table(self) -> tuple[list[str], list[list]]:
        """The summary table ``reljudge label`` prints."""
        return SUMMARY_COLUMNS, [[self.judge, self.items, self.already_done, self.cached,
                                  self.calls, self.labelled, self.failed, self.not_sent,
                                  self.tokens_in, self.tokens_out, self.cost]]

    def notes(self) -> list[str]:
        """Warnings, failures by kind, endpoints, and what to do about what is missing."""
        out = [f"warning: {note}" for note in self.warnings]
        if self.failed:
            out.append(f"failures: {self.failed} pair(s) without a grade, by kind:")
            out += [f"  {n:>6}  {kind}  e.g. {self.failure_examples[kind]}"
                    for kind, n in self.failure_reasons.most_common()]
        else:
            out.append("failures: none")
        out += [endpoint_note(e) for e in self.endpoints]
        if self.already_failed:
            out.append(f"{self.already_failed} pair(s) whose earlier answer failed (refused, "
                       "unreadable or cut off) still have no grade: --retry-failed asks again")
        if not self.price_known and self.calls:
            out.append("cost: no price known for this model ($0 assumed); pass "
                       "--price-in/--price-out")
        if self.stop_reason:
            out.append(f"stopped early ({self.stop_reason}): run the same command again to "
                       "continue; nothing already answered will be paid for again")
        return out

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame of this job's events: qid, docid, repeat, grade, failure kind,
        failure, raw answer, tokens, cost, latency."""
        cols = ["qid", "docid", "repeat", "grade", "failure_kind", "failure", "raw",
                "tokens_in", "tokens_out", "cost", "latency"]
        return dataframe(cols, [[getattr(e, c) for c in cols] for e in self.events])

    def summary(self) -> dict[str, Any]:
        """The counts, for printing or JSON."""
        out = {k: v for k, v in self.__dict__.items()
               if k not in ("events", "failure_reasons", "failure_examples")
               and (k != "endpoints" or v)}
        out["failure_reasons"] = dict(self.failure_reasons)
        out["failure_examples"] = dict(self.failure_examples)
        return out


def endpoint_note(e: dict[str, Any]) -> str:
    """One endpoint's line in the summary: what it answered, and whether it was drained."""
    state = f"DRAINED ({e['drained']})" if e["drained"] else "up"
    back = f", {e['handed back']} handed back to the others" if e["handed back"] else ""
    return (f"endpoint {e['endpoint']} ({e['model']}): {e['pairs']} pairs, "
            f"{e['paid calls']} paid calls{back}; {state}")


@dataclass(frozen=True)
class CostQuote:
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


@dataclass
class BatchResult:
    """What a ``--batch`` job did, and where the job stands."""

    judge: str
    #: pairs x repeats asked for
    items: int = 0
    #: batches created by this job
    submitted_batches: int = 0
    #: request lines in them
    submitted_requests: int = 0
    collected_batches: int = 0
    #: answers put in the cache by this job
    collected_answers: int = 0
    #: kind -> lines
    batch_failures: Counter = field(default_factory=Counter)
    tokens_in: int = 0
    tokens_out: int = 0
    #: at the batch price
    cost: float = 0.0
    #: still running at the end
    open: list[BatchRecord] = field(default_factory=list)
    #: items with a grade at the end
    graded: int = 0
    #: items that have none and are in no open batch
    without_grade: int = 0
    #: labelled before on texts that have changed since (see --stale)
    stale: int = 0
    stop_reason: str | None = None
    #: the online steps: answers already cached, re-asks, --batch-fallback online
    reports: list[LabelReport] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every item asked for has a grade."""
        return self.graded == self.items and not self.stop_reason

    def summary(self) -> dict[str, Any]:
        """The counts, for printing or JSON (``label --batch`` and the pipeline's manifest)."""
        return {"judge": self.judge, "items": self.items, "graded": self.graded,
                "without_grade": self.without_grade,
                "batches_submitted": self.submitted_batches,
                "requests_submitted": self.submitted_requests,
                "batches_collected": self.collected_batches,
                "answers_collected": self.collected_answers, "batches_open": len(self.open),
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "cost": self.cost,
                "failed_lines": dict(self.batch_failures), "stale": self.stale,
                "stop_reason": self.stop_reason}


def judge_qrels(judges: Sequence[str], aggregate: Aggregate = "majority", *,
                store: LabelStore | None = None, report: LabelReport | None = None) -> Qrels:
    """A job's final grades as qrels: each pair's grade (its repeats aggregated) from the
    first of ``judges`` that graded it; from every run in ``store`` when given, else from
    ``report``'s events."""
    import numpy as np

    grades: dict[tuple[str, str], int] = {}
    read = store.source_qrels(judges, aggregate) if store is not None else {}
    for judge in judges:
        if store is not None:
            found = {(q, d): int(g) for q, d, g in read[judge]}
        elif report is not None:
            found = report.grades(aggregate, judge)
        else:
            raise ValueError("judge_qrels needs a store or a report")
        # a pair keeps its first judge's grade
        for pair, grade in found.items():
            grades.setdefault(pair, grade)
    return Qrels.from_arrays([q for q, _ in grades], [d for _, d in grades],
                             np.array(list(grades.values()), dtype=np.int64))
