"""Probes of a judge in a label store: their texts and the judges' grades of them, kept in
tables of their own (``probes``, ``probe_events``, ``probe_claims``, ``probe_spend``).

No reader of labels (merge, qrels, export, samples, estimates, calibration, audits) looks at
these tables, and nothing here writes a query, a passage, a source or a label event: there is
no filter to forget. ``ProbeSink`` is the labeller's sink for a probe run
(``judge.sink.JudgmentSink``): it settles, claims and records spend in the probe tables, so a
probe run resumes, shares its work between processes and counts its money like any labelling
run. What probing spent counts towards ``total_spend`` (--max-total-cost caps money, whatever
it bought).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, Protocol

from reljudge.labels import LabelEvent
from reljudge.store.claims import partition
from reljudge.store.events import Outcome
from reljudge.store.part import StorePart
from reljudge.store.spend import open_line, update_line

#: (qid, docid, repeat)
Item = tuple[str, str, int]


class ProbeText(NamedTuple):
    """One probe: its synthetic docid, kind, seed, the pair it was made from, and its text."""

    docid: str
    kind: str
    seed: int
    qid: str
    original: str
    text: str


class ProbeGrade(NamedTuple):
    """One judge's answer about one probe (or clean) pair: a grade or a failure."""

    judge: str
    qid: str
    docid: str
    repeat: int
    grade: int | None
    failure_kind: str | None
    raw: str | None


class Probes(StorePart):
    """The probe tables of a store (a part of ``LabelStore``)."""

    def add_probes(self, probes: Iterable[ProbeText]) -> int:
        """Record probe texts (a probe already recorded is kept as it is); how many are new."""
        rows = [(*p, time.time()) for p in probes]
        with self.db.transaction() as conn:
            before = self._probe_count()
            conn.executemany("INSERT INTO probes (docid, kind, seed, qid, original, text, "
                             "created_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT (docid) DO NOTHING",
                             rows)
            return self._probe_count() - before

    def _probe_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM probes").fetchone()[0])

    def probe_texts(self) -> list[ProbeText]:
        """Every probe recorded, in the order made."""
        return [ProbeText(*r) for r in self.conn.execute(
            "SELECT docid, kind, seed, qid, original, text FROM probes ORDER BY id")]

    def add_probe_events(self, events: Sequence[LabelEvent]) -> int:
        """Append a probe run's answers (grades or failures) in one transaction."""
        now = time.time()
        rows = [(e.source_name, e.qid, e.docid, e.repeat, e.grade, e.failure,
                 None if e.failure_kind is None else str(e.failure_kind), e.raw, e.tokens_in,
                 e.tokens_out, e.cost, e.latency, e.shown,
                 None if e.meta is None else json.dumps(e.meta, sort_keys=True),
                 now if e.created_at is None else e.created_at) for e in events]
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO probe_events (judge, qid, docid, sample, grade, failure, "
                "failure_kind, raw, tokens_in, tokens_out, cost, latency, shown, meta, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    def probe_grades(self, judge: str | None = None) -> list[ProbeGrade]:
        """Every answer recorded about probes (of one judge), in the order added."""
        where, args = ("WHERE judge = ?", (judge,)) if judge is not None else ("", ())
        return [ProbeGrade(*r) for r in self.conn.execute(
            "SELECT judge, qid, docid, sample, grade, failure_kind, raw FROM probe_events "
            f"{where} ORDER BY id", args)]

    def probe_judges(self) -> list[tuple[str, int, int]]:
        """(judge, answers, grades) of every judge that answered probes, by name."""
        return sorted((str(j), int(n), int(g)) for j, n, g in self.conn.execute(
            "SELECT judge, count(*), count(grade) FROM probe_events GROUP BY judge"))

    def probe_outcomes(self, judge: str) -> Iterator[Outcome]:
        """What each probe answer of one judge settled, in the order added."""
        return map(Outcome._make, self.conn.execute(
            "SELECT qid, docid, sample, grade, failure_kind, failure, shown FROM probe_events "
            "WHERE judge = ? ORDER BY id", (judge,)))

    def claim_probes(self, judge: str, owner: str, items: Sequence[Item], lease: float,
                     since: float, gone: Callable[[str], bool] = lambda _owner: False
                     ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]]]:
        """``Claims.claim`` for probe pairs: (claimed, held by another live owner, settled
        since ``since`` with whether graded)."""
        now = time.time()
        if not items:
            return [], [], []
        with self.db.transaction() as conn:
            self.db.lock(f"probe-claims:{judge}")
            others = {(q, d, s) for q, d, s, who, until in conn.execute(
                "SELECT qid, docid, sample, owner, expires FROM probe_claims WHERE judge = ?",
                (judge,)) if who != owner and until > now and not gone(who)}
            done: dict[Item, bool] = {}
            for q, d, s, grade in conn.execute(
                    "SELECT qid, docid, sample, grade FROM probe_events WHERE judge = ? AND "
                    "created_at >= ?", (judge, since)):
                done[(q, d, s)] = done.get((q, d, s), False) or grade is not None
            got, held, settled, claimed = partition({i: i for i in items}, done, others)
            rows = [(judge, *item, owner, now + lease) for item in claimed]
            conn.executemany(
                "INSERT INTO probe_claims (judge, qid, docid, sample, owner, expires) VALUES "
                "(?,?,?,?,?,?) ON CONFLICT (judge, qid, docid, sample) DO UPDATE SET "
                "owner = excluded.owner, expires = excluded.expires", rows)
        return got, held, settled

    def renew_probe_claims(self, owner: str, lease: float) -> int:
        """Extend every probe claim of ``owner`` by ``lease`` seconds from now; how many."""
        with self.db.transaction() as conn:
            return conn.execute("UPDATE probe_claims SET expires = ? WHERE owner = ?",
                                (time.time() + lease, owner)).rowcount

    def release_probe_claims(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Drop the probe claims of ``owner`` (on these items only, when given)."""
        with self.db.transaction() as conn:
            if items is None:
                conn.execute("DELETE FROM probe_claims WHERE owner = ?", (owner,))
                return
            conn.executemany("DELETE FROM probe_claims WHERE owner = ? AND qid = ? AND "
                             "docid = ? AND sample = ?", [(owner, *i) for i in items])

    def open_probe_spend(self, judge: str, endpoint: str) -> int:
        """Start a probe run's line in the probe spend ledger; returns its id."""
        return open_line(self.db, "probe_spend", "judge", judge, endpoint)

    def update_probe_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                           cost: float) -> None:
        """What a probe run has spent so far (its totals, not an increment)."""
        update_line(self.db, "probe_spend", run, calls, tokens_in, tokens_out, cost)

    def probe_spend(self) -> float:
        """USD spent by every probe run recorded in this store."""
        return float(self.conn.execute(
            "SELECT coalesce(sum(cost), 0) FROM probe_spend").fetchone()[0])


class ProbeStore(Protocol):
    """What a ProbeSink needs of a store: its probe tables and its spend (``LabelStore``)."""

    def add_probe_events(self, events: Sequence[LabelEvent]) -> int: ...
    def probe_outcomes(self, judge: str) -> Iterator[Outcome]: ...
    def claim_probes(self, judge: str, owner: str, items: Sequence[Item], lease: float,
                     since: float, gone: Callable[[str], bool] = ...
                     ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]]]: ...
    def renew_probe_claims(self, owner: str, lease: float) -> int: ...
    def release_probe_claims(self, owner: str, items: Sequence[Item] | None = None
                             ) -> None: ...
    def open_probe_spend(self, judge: str, endpoint: str) -> int: ...
    def update_probe_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                           cost: float) -> None: ...
    def total_spend(self) -> float: ...


class ProbeSink:
    """A probe run's sink (``judge.sink.JudgmentSink``) over a store's probe tables."""

    def __init__(self, store: ProbeStore):
        self.store = store

    def add_events(self, events: Sequence[LabelEvent]) -> int:
        """Store a probe run's answers."""
        return self.store.add_probe_events(events)

    def outcomes(self, source: str) -> Iterable[Outcome]:
        """What this judge's probe answers settled."""
        return self.store.probe_outcomes(source)

    def claim(self, judge: str, owner: str, items: Sequence[Item], lease: float,
              since: float, gone: Callable[[str], bool] = lambda _owner: False
              ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]]]:
        """Claim probe pairs for ``owner``."""
        return self.store.claim_probes(judge, owner, items, lease, since, gone)

    def renew_claims(self, owner: str, lease: float) -> int:
        """Extend this owner's probe claims."""
        return self.store.renew_probe_claims(owner, lease)

    def release_claims(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Give up this owner's probe claims."""
        self.store.release_probe_claims(owner, items)

    def open_spend(self, judge: str, endpoint: str) -> int:
        """A probe spend row."""
        return self.store.open_probe_spend(judge, endpoint)

    def update_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                     cost: float) -> None:
        """Set a probe spend row's counts so far."""
        self.store.update_probe_spend(run, calls, tokens_in, tokens_out, cost)

    def total_spend(self) -> float:
        """What labelling and probing spent in this store."""
        return self.store.total_spend()
