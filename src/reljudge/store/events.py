"""The event log of a label store: append-only label events (grades, failures, undos) of
named sources, read back filtered, counted per source, and merged into final labels."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from reljudge.choices import DERIVED, Aggregate, DerivedVote
from reljudge.errors import InputError, StoreError
from reljudge.grades import check_grade, in_scale
from reljudge.labels import RETRACTED, FailureKind, LabelEvent
from reljudge.store.id_rows import COLUMNS, id_rows
from reljudge.store.merge import (
    Conflict,
    IdTexts,
    Merged,
    Votes,
    check_policy,
    conflicts_between,
    latest_votes,
    merge_ids,
    merge_rows,
    merge_votes,
    source_qrels,
)
from reljudge.store.texts import Texts
from reljudge.trec_data import Qrels


class Outcome(NamedTuple):
    """One event's (qid, docid, repeat), its grade or failure, and what its judge saw."""

    qid: str
    docid: str
    repeat: int
    grade: int | None
    failure_kind: str | None
    failure: str | None
    #: the digest of the texts the judge saw (None: not recorded)
    shown: str | None


class Standing(NamedTuple):
    """A source's standing grade of a pair (``EventLog.standing``)."""

    #: the event's id: what an adjudication links to
    event: int
    kind: str
    qid: str
    docid: str
    source: str
    repeat: int
    grade: int
    #: the latency recorded with it (a person's time on the pair)
    seconds: float | None
    meta: dict
    #: an LLM's answer text (its reasoning), an import's source line
    raw: str | None
    created_at: float


@dataclass(frozen=True)
class StandingColumns:
    """``EventLog.standing`` column by column, in event order, without metadata and raw
    texts (``EventLog.standing_columns``): what the annotator report reads."""

    #: the source's name (object arrays of str)
    source: np.ndarray
    qid: np.ndarray
    docid: np.ndarray
    #: the query's and passage's ids in the store
    q: np.ndarray
    d: np.ndarray
    grade: np.ndarray
    #: the latency recorded with it; NaN where none was
    seconds: np.ndarray
    event: np.ndarray


#: what joins the texts of ``EventLog._id_texts`` (the ASCII unit separator)
_SEPARATOR = "\x1f"

_EVENT_COLS = ("q, d, source, sample, grade, failure, raw, probs, expected, tokens_in, "
               "tokens_out, cost, latency, created_at, meta, batch, failure_kind, shown")

# An event ``e`` stands unless its source later retracted the pair (an undo, see RETRACTED):
# join this to ``events e`` and keep the rows where _STANDING holds. (Grouped with the pair
# last, SQLite reads the table straight through instead of walking the pair index.)
def _undone(e: str = "e", r: str = "r") -> str:
    """The join of events ``e`` to their source's latest undo ``r`` of the same pair."""
    return ("LEFT JOIN (SELECT q, d, source, sample, max(id) AS rid FROM events "
            f"WHERE failure = '{RETRACTED}' GROUP BY sample, source, q, d) {r} ON {r}.q = {e}.q "
            f"AND {r}.d = {e}.d AND {r}.source = {e}.source AND {r}.sample = {e}.sample")


_UNDONE = _undone()
_STANDING = "(r.rid IS NULL OR r.rid < e.id)"
# A source's counts (``EventLog.sources``; its one argument: RETRACTED).
_SOURCE_COUNTS = ("count(*), count(grade), count(*) FILTER (WHERE failure != ?), "
                  "coalesce(sum(cost), 0), coalesce(sum(tokens_in), 0), "
                  "coalesce(sum(tokens_out), 0)")


class SourceName(NamedTuple):
    """A label source's kind and name (``EventLog.source_list``)."""

    kind: str
    name: str


@dataclass(frozen=True)
class SourceStats:
    """Counts of one label source."""

    kind: str
    name: str
    events: int
    ok: int
    failed: int
    grades: dict[int, int]
    cost: float
    tokens_in: int
    tokens_out: int
    #: grades taken back by an undo (counted in events, not in ok/grades)
    retracted: int = 0


def _named(value: object) -> bool:
    return type(value) is str and bool(value) and not value.isspace()


def check_id(value: object, what: str, where: str) -> None:
    """Refuse an id or name (``what``) that is not a non-blank string: an InputError naming
    ``where``."""
    if not _named(value):
        raise InputError(f"{where}: a {what} is a non-empty string, found {value!r}")


def check_event(event: LabelEvent, where: str) -> None:
    """Refuse what no reader of the store could make sense of, as the CLI does: an empty
    query or passage id, a grade off the 0-3 scale or not an integer, a failure without its
    kind (an undo is its own kind), a blank source name."""
    check_id(event.qid, "query id", where)
    check_id(event.docid, "passage id", where)
    check_id(event.source_name, "source name", where)
    if event.grade is not None:
        check_grade(event.grade, where)
    elif event.failure_kind is None and event.failure != RETRACTED:
        raise InputError(f"{where}: a failure needs its failure_kind (one of "
                         f"{', '.join(k.value for k in FailureKind)}), found none")


def check_rows(rows: Sequence[tuple[str, str, int]], name: str) -> None:
    """``check_event`` for plain (qid, docid, grade) rows of one source (``add_grades``)."""
    check_id(name, "source name", "add_grades")
    for i, row in enumerate(rows):
        if len(row) == 3 and type(row[2]) is int and in_scale(row[2]) \
                and _named(row[0]) and _named(row[1]):
            # the usual row, checked without building a message
            continue
        where = f"row {i} {tuple(row)!r}"
        if len(row) != 3:
            raise InputError(f"{where}: expected (qid, docid, grade)")
        check_id(row[0], "query id", where)
        check_id(row[1], "passage id", where)
        check_grade(row[2], where)


class EventLog(Texts):
    """The label events of a store (a part of ``LabelStore``; labels rest on the texts the
    store holds: ``Texts``)."""

    def add_events(self, events: Iterable[LabelEvent], *, batch: int | None = None,
                   commit_with: Sequence[tuple[str, tuple]] = ()) -> int:
        """Append label events in one transaction; returns how many were written.
        ``commit_with``: more (sql, args) statements run in the same transaction."""
        events = list(events)
        # every one checked before any is written
        for i, e in enumerate(events):
            check_event(e, f"label event {i} ({e.qid!r}, {e.docid!r})")
        if not events and not commit_with:
            return 0
        now = time.time()
        with self.db.transaction():
            qids = self.db.intern("queries", "qid", (e.qid for e in events))
            docids = self.db.intern("passages", "docid", (e.docid for e in events))
            # events often share one meta dict: encode it once
            metas: dict[int, str] = {}

            def meta(m: dict) -> str:
                text = metas.get(id(m))
                if text is None:
                    text = metas[id(m)] = json.dumps(m, sort_keys=True)
                return text

            rows = [(qids[e.qid], docids[e.docid], self.db.source_id(e.source_kind, e.source_name),
                     e.repeat, e.grade, e.failure, e.raw,
                     None if e.probs is None else json.dumps(list(e.probs)),
                     e.expected_grade, e.tokens_in, e.tokens_out, e.cost, e.latency,
                     e.created_at if e.created_at is not None else now,
                     None if e.meta is None else meta(e.meta), batch, e.failure_kind,
                     e.shown)
                    for e in events]
            self.conn.executemany(f"INSERT INTO events ({_EVENT_COLS}) VALUES "
                                  f"({','.join('?' * 18)})", rows)
            for statement in commit_with:
                self.conn.execute(*statement)
        return len(rows)

    def add_grades(self, rows: Sequence[tuple[str, str, int]], kind: str, name: str, *,
                   raw: Sequence[str] | None = None, batch_info: dict | None = None) -> int:
        """Append plain (qid, docid, grade) labels of one source in one transaction (fast path
        for imports). ``batch_info`` (path, sha256, clipped) records the import itself. Each
        label rests on the texts the store holds now for its pair (its ``shown`` digest), when
        it holds them. A row the CLI would refuse (``check_rows``) is an InputError, and
        nothing is written."""
        check_rows(rows, name)
        now = time.time()
        with self.db.transaction():
            source = self.db.source_id(kind, name)
            batch = None
            if batch_info is not None:
                cur = self.conn.execute(
                    "INSERT INTO imports (path, sha256, source, events, clipped, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                    (batch_info["path"], batch_info["sha256"], source, len(rows),
                     batch_info.get("clipped", 0), now))
                batch = cur.fetchone()[0]
            qids = self.db.intern("queries", "qid", (r[0] for r in rows))
            docids = self.db.intern("passages", "docid", (r[1] for r in rows))
            raws = raw if raw is not None else [None] * len(rows)
            # the texts the store holds, if any
            shown = self.shown_now((q, d) for q, d, _ in rows)
            self.conn.executemany(
                "INSERT INTO events (q, d, source, grade, raw, created_at, batch, shown) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ((qids[q], docids[d], source, g, r, now, batch, shown.get((q, d)))
                 for (q, d, g), r in zip(rows, raws, strict=False)))
        return len(rows)

    def find_import(self, sha256: str, kind: str, name: str) -> int | None:
        """Events of an earlier import of the same file into the same source, or None."""
        row = self.conn.execute(
            "SELECT i.events FROM imports i JOIN sources s ON s.id = i.source "
            "WHERE i.sha256 = ? AND s.kind = ? AND s.name = ?", (sha256, kind, name)).fetchone()
        return None if row is None else row[0]

    def count(self) -> int:
        """Number of label events."""
        return self.conn.execute("SELECT count(*) FROM events").fetchone()[0]

    def fingerprint(self) -> str:
        """Changes whenever an event is added (for pipeline stage fingerprints)."""
        n, last = self.conn.execute("SELECT count(*), max(id) FROM events").fetchone()
        return f"{n}:{last}"

    def judged_pairs(self, source_names: Sequence[str] | None = None,
                     ok_only: bool = True) -> set[tuple[str, str]]:
        """(qid, docid) pairs judged: with at least one grade (from the named sources, if
        given; with ``ok_only`` false, a failed attempt counts too); a retracted label does
        not count."""
        sql = ("SELECT DISTINCT q.qid, p.docid FROM events e JOIN queries q ON q.id = e.q "
               "JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source "
               f"{_UNDONE} WHERE {_STANDING} AND (e.failure IS NULL OR e.failure != '{RETRACTED}')")
        args: list = []
        if ok_only:
            sql += " AND e.grade IS NOT NULL"
        if source_names is not None:
            sql += f" AND s.name IN ({','.join('?' * len(source_names))})"
            args += list(source_names)
        return set(self.conn.execute(sql, args))

    def events(self, *, kind: str | None = None, source: str | None = None,
               failed: bool | None = None) -> Iterator[LabelEvent]:
        """Label events in the order they were added, optionally filtered."""
        sql = ("SELECT q.qid, p.docid, e.grade, s.kind, s.name, e.sample, e.raw, e.probs, "
               "e.expected, e.tokens_in, e.tokens_out, e.cost, e.latency, e.failure, "
               "e.created_at, e.meta, e.failure_kind, e.shown FROM events e "
               "JOIN queries q ON q.id = e.q "
               "JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source WHERE 1 = 1")
        args: list = []
        if kind is not None:
            sql += " AND s.kind = ?"
            args.append(kind)
        if source is not None:
            sql += " AND s.name = ?"
            args.append(source)
        if failed is not None:
            sql += " AND e.failure IS NOT NULL" if failed else " AND e.grade IS NOT NULL"
        for r in self.conn.execute(sql + " ORDER BY e.id", args):
            yield LabelEvent(r[0], r[1], r[2], r[3], r[4], r[5], r[6],
                             None if r[7] is None else tuple(json.loads(r[7])), r[8], r[9],
                             r[10], r[11], r[12], r[13], r[14],
                             None if r[15] is None else json.loads(r[15]), r[16], r[17])

    def cost_rows(self, kind: str) -> list[tuple[str, str | None, float | None, int | None,
                                                int | None]]:
        """(source, meta as stored (JSON text), cost, tokens in, tokens out) of each event of
        the sources of one kind that records a cost or tokens, in the order added: what the
        costs need, nothing decoded."""
        return self.conn.execute(
            "SELECT s.name, e.meta, e.cost, e.tokens_in, e.tokens_out FROM events e "
            "JOIN sources s ON s.id = e.source WHERE s.kind = ? AND (e.cost != 0 OR "
            "coalesce(e.tokens_in, 0) + coalesce(e.tokens_out, 0) != 0) ORDER BY e.id",
            (kind,)).fetchall()

    def meta_counts(self, kind: str) -> list[tuple[str, str | None, int]]:
        """(source, meta as stored, events) of the sources of one kind, in the order of each
        (source, meta)'s first event."""
        # grouped by the source's id: no name joined to each event
        return self.conn.execute(
            "SELECT s.name, m.meta, m.n FROM (SELECT source, meta, count(*) AS n, min(id) AS "
            "first FROM events GROUP BY source, meta) m JOIN sources s ON s.id = m.source "
            "WHERE s.kind = ? ORDER BY m.first", (kind,)).fetchall()

    def outcomes(self, source: str) -> Iterator[Outcome]:
        """What each event of one source settled, in the order added (what a resumed labelling
        run needs, without decoding the rest of the events)."""
        sql = ("SELECT q.qid, p.docid, e.sample, e.grade, e.failure_kind, e.failure, e.shown "
               "FROM events e JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
               "JOIN sources s ON s.id = e.source WHERE s.name = ? ORDER BY e.id")
        return map(Outcome._make, self.conn.execute(sql, (source,)))

    def label_rows(self) -> list[tuple[str, str, str, str, int, int, int]]:
        """Every successful label not retracted since, as (qid, docid, kind, source, sample,
        grade, event id)."""
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.kind, s.name, e.sample, e.grade, e.id FROM events e "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            f"JOIN sources s ON s.id = e.source {_UNDONE} "
            f"WHERE e.grade IS NOT NULL AND {_STANDING}").fetchall()

    def standing(self, kind: str = "human") -> list[Standing]:
        """Each source's standing grade of each pair (its latest grade, not retracted since),
        for sources of one kind, with the event's id, seconds spent, metadata and raw text:
        what the annotator report and adjudication read (merges need only ``label_rows``)."""
        rows = self.conn.execute(
            "SELECT e.id, q.qid, p.docid, s.name, e.sample, e.grade, e.latency, e.meta, e.raw, "
            "e.created_at FROM events e JOIN queries q ON q.id = e.q "
            "JOIN passages p ON p.id = e.d "
            f"JOIN sources s ON s.id = e.source {_UNDONE} "
            f"WHERE s.kind = ? AND e.grade IS NOT NULL AND {_STANDING} ORDER BY e.id",
            (kind,)).fetchall()
        latest: dict[tuple, Standing] = {}
        for eid, qid, docid, name, repeat, grade, latency, meta, raw, created in rows:
            latest[(qid, docid, name, repeat)] = Standing(
                eid, kind, qid, docid, name, repeat, grade, latency,
                json.loads(meta) if meta else {}, raw, created)
        return sorted(latest.values(), key=lambda s: s.event)

    def standing_columns(self, kind: str = "human", standing: np.ndarray | None = None,
                         votes: Votes | None = None) -> StandingColumns:
        """``standing(kind)`` column by column (no metadata nor raw text), from the store's ids;
        ``standing`` and ``votes``: ``standing_ids()`` and ``votes()`` when the caller has
        them already (the votes name the ids)."""
        sources = {i: name for i, (k, name) in self.source_kinds().items() if k == kind}
        if votes is not None:
            # the votes are each (source, pair, sample)'s latest grade already
            ids = votes.rows[np.isin(votes.rows[:, 0], list(sources)), :6]
        else:
            ids = self.standing_ids() if standing is None else standing
            ids = ids[np.isin(ids[:, 0], list(sources))]
            ids = ids[np.lexsort((ids[:, 4], ids[:, 3], ids[:, 2], ids[:, 1], ids[:, 0]))]
            ids = ids[np.r_[(ids[1:, :4] != ids[:-1, :4]).any(axis=1), True]] if len(ids) else ids
        ids = ids[np.argsort(ids[:, 4])]
        seconds = np.full(len(ids), np.nan)
        if len(ids):
            timed = np.array(self.conn.execute(
                "SELECT id, latency FROM events WHERE latency IS NOT NULL AND grade IS NOT NULL "
                f"AND source IN ({','.join('?' * len(sources))})", list(sources)).fetchall(),
                dtype=np.float64).reshape(-1, 2)
            at = np.searchsorted(ids[:, 4], timed[:, 0])
            found = at < len(ids)
            found[found] = ids[at[found], 4] == timed[found, 0]
            seconds[at[found]] = timed[found, 1]
        if votes is None:
            queries, passages = self.pair_ids()
            qtext, dtext = _texts(queries), _texts(passages)
        else:
            qtext, dtext = votes.qtext, votes.dtext
        name = np.array([sources.get(i, "") for i in range(max(sources, default=0) + 1)],
                        dtype=object)
        return StandingColumns(name[ids[:, 0]], qtext[ids[:, 1]], dtext[ids[:, 2]], ids[:, 1],
                               ids[:, 2], ids[:, 5], seconds, ids[:, 4])

    def stale_labels(self) -> set[tuple[str, str, str, str]]:
        """(qid, docid, kind, source) of each standing label (a source's latest grade of a
        pair) given to texts that have changed since: its ``shown`` digest is not that of the
        texts the store holds now. Only a pair whose query or passage text was replaced (the
        text history) can be stale; a label without a digest (imported before the store held
        its texts, or older than digests) cannot be told stale."""
        if not self.conn.execute("SELECT 1 FROM text_history LIMIT 1").fetchone():
            # no text was ever replaced: no label can be stale
            return set()
        latest: dict[tuple, str | None] = {}
        for q, d, kind, src, repeat, shown in self.conn.execute(
                "SELECT q.qid, p.docid, s.kind, s.name, e.sample, e.shown FROM events e "
                "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
                f"JOIN sources s ON s.id = e.source {_UNDONE} "
                f"WHERE e.grade IS NOT NULL AND {_STANDING} AND (e.q IN (SELECT ref FROM "
                "text_history WHERE kind = 'query') OR e.d IN (SELECT ref FROM text_history "
                "WHERE kind = 'passage')) ORDER BY e.id"):
            latest[(q, d, kind, src, repeat)] = shown
        known = {k: shown for k, shown in latest.items() if shown is not None}
        now = self.shown_now({k[:2] for k in known})
        return {k[:4] for k, shown in known.items() if now.get(k[:2], shown) != shown}

    def source_list(self) -> list[SourceName]:
        """Every label source, (kind, name) in the order added: what naming one takes
        (``store.names.resolve_source``), without counting its events as ``sources`` does."""
        return [SourceName(kind, name) for kind, name in
                self.conn.execute("SELECT kind, name FROM sources ORDER BY id")]

    def standing_ids(self, policy: str | None = None) -> np.ndarray:
        """Every successful label not retracted since, by the store's ids: rows (source id,
        query id, passage id, sample, event id, grade), in no order (``merge`` and
        ``sources`` can share one read); with ``policy``, only those the merge policy can
        choose (``merge`` under it gives the same labels from them)."""
        sql = f"SELECT {COLUMNS} FROM events e WHERE e.grade IS NOT NULL"
        args: tuple = ()
        if policy is not None and policy.startswith("source="):
            sql += " AND e.source IN (SELECT id FROM sources WHERE name = ?)"
            args = (policy[len("source="):],)
        elif policy in ("human-only", "llm-only"):
            sql += " AND e.source IN (SELECT id FROM sources WHERE kind = ?)"
            args = (policy[:-len("-only")],)
        rows = self._not_undone(id_rows(self.conn, sql, args))
        # a pair with a human grade: those
        if policy in ("human-first", "adjudicated-first"):
            human = np.isin(rows[:, 0], [i for i, (kind, _) in self.source_kinds().items()
                                         if kind == "human"])
            pair = rows[:, 1] * (int(rows[:, 2].max(initial=0)) + 1) + rows[:, 2]
            rows = rows[human | ~np.isin(pair, pair[human])]
        return rows

    def _not_undone(self, rows: np.ndarray) -> np.ndarray:
        """The ``standing_ids`` rows whose source has not retracted the pair since (an undo:
        a later event of the same source, pair and sample, ``RETRACTED``)."""
        # the latest undo of each (source, pair, sample), grouped here: grouped in SQL, SQLite
        # walked the source index, a row lookup an event, where a plain scan takes half
        undone: dict[tuple, int] = {}
        for source, q, d, sample, eid in self.conn.execute(
                "SELECT source, q, d, sample, id FROM events WHERE failure = ?", (RETRACTED,)):
            key = (source, q, d, sample)
            undone[key] = max(eid, undone.get(key, eid))
        if not undone:
            return rows
        undos = [(*key, eid) for key, eid in undone.items()]
        width = int(max(rows[:, 2].max(initial=0), max(u[2] for u in undos))) + 1
        pair = rows[:, 1] * width + rows[:, 2]
        maybe = np.flatnonzero(np.isin(pair, [u[1] * width + u[2] for u in undos]))
        gone = [i for i, (*key, eid) in zip(maybe.tolist(), rows[maybe, :5].tolist(),
                                            strict=True)
                if undone.get(tuple(key), -1) > eid]
        return np.delete(rows, gone, axis=0)

    def source_counts(self) -> dict[int, tuple]:
        """{source id: (events, grades, failed judgments, cost, tokens in, tokens out)} of
        each source with events: the pass over every event ``sources`` makes."""
        return {row[0]: row[1:] for row in self.conn.execute(
            f"SELECT source, {_SOURCE_COUNTS} FROM events GROUP BY source", (RETRACTED,))}

    def sources(self, standing: np.ndarray | None = None,
                counts: dict[int, tuple] | None = None) -> list[SourceStats]:
        """Counts, grade distribution, tokens and cost of every source (retracted grades and
        the undo events themselves are neither ok nor failed); ``standing`` and ``counts``:
        ``standing_ids()`` and ``source_counts()`` when the caller has read them already."""
        counts = self.source_counts() if counts is None else counts
        grades: dict[int, dict[int, int]] = {}
        if standing is None:
            found = self.conn.execute(
                f"SELECT e.source, e.grade, count(*) FROM events e {_UNDONE} WHERE "
                f"e.grade IS NOT NULL AND {_STANDING} GROUP BY e.source, e.grade "
                "ORDER BY e.source, e.grade").fetchall()
        # the same counts from the rows read
        else:
            ids = np.asarray(standing, dtype=np.int64).reshape(-1, 6)
            low = int(ids[:, 5].min()) if len(ids) else 0
            span = int(ids[:, 5].max()) - low + 1 if len(ids) else 1
            tally = np.bincount(ids[:, 0] * span + ids[:, 5] - low)
            found = [(k // span, k % span + low, int(tally[k]))
                     for k in np.flatnonzero(tally).tolist()]
        for sid, grade, n in found:
            grades.setdefault(sid, {})[grade] = n
        out = []
        for sid, kind, name in self.conn.execute("SELECT id, kind, name FROM sources ORDER BY id"):
            n, ok, failed, cost, tin, tout = counts.get(sid) or self.conn.execute(
                # no event: its zeros
                f"SELECT {_SOURCE_COUNTS} FROM events WHERE source = ?",
                (RETRACTED, sid)).fetchone()
            mine = grades.get(sid, {})
            held = sum(mine.values())
            out.append(SourceStats(kind, name, n, held, failed, mine, cost, tin, tout,
                                   ok - held))
        return out

    def failures(self) -> list[tuple[str, str, str, str, str | None]]:
        """Failed judgments: (qid, docid, source, reason, raw answer)."""
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.name, e.failure, e.raw FROM events e "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            "JOIN sources s ON s.id = e.source WHERE e.failure IS NOT NULL AND e.failure != ? "
            "ORDER BY e.id", (RETRACTED,)).fetchall()

    def current_failures(self) -> list[tuple[str, str, str, int, str | None, str]]:
        """Judgments whose latest event failed and that no grade settled (per pair, source
        and sample): (qid, docid, source, sample, kind, detail). Kind is None only for a
        failure written without one (``LabelEvent.failure_kind``)."""
        if not self.conn.execute("SELECT 1 FROM events WHERE failure IS NOT NULL LIMIT 1"
                                 ).fetchone():
            # no failure nor undo at all: spare the grouping of every event
            return []
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.name, e.sample, e.failure_kind, e.failure FROM events e "
            "JOIN (SELECT max(id) AS id, max(CASE WHEN grade IS NOT NULL THEN 1 ELSE 0 END) "
            "AS graded FROM events GROUP BY q, d, source, sample) last ON last.id = e.id "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            "JOIN sources s ON s.id = e.source WHERE e.failure IS NOT NULL AND last.graded = 0 "
            "ORDER BY e.id").fetchall()

    def source_grades(self, name: str, kind: str | None = None,
                      pairs: Sequence[tuple[str, str]] | None = None
                      ) -> dict[tuple[str, str], int]:
        """{(qid, docid): grade} of one source's latest successful label per pair that the
        source has not taken back since (an undo in ``assess``)."""
        of = "SELECT id FROM sources WHERE name = ?" + (" AND kind = ?" if kind else "")
        sql = ("SELECT q.qid, p.docid, e.grade FROM events e JOIN queries q ON q.id = e.q "
               f"JOIN passages p ON p.id = e.d {_UNDONE} WHERE e.grade IS NOT NULL AND "
               # its events alone
               f"{_STANDING} AND e.source IN ({of}) ORDER BY e.id")
        out = {(q, d): g for q, d, g in self.conn.execute(sql, [name, kind] if kind else [name])}
        if not out and not self.conn.execute("SELECT 1 FROM sources WHERE name = ?",
                                             (name,)).fetchone():
            known = ", ".join(s.name for s in self.sources()) or "none"
            raise StoreError(f"no label source named {name!r} in {self.path}; "
                             f"known sources: {known}")
        if pairs is not None:
            wanted = set(pairs)
            out = {p: g for p, g in out.items() if p in wanted}
        return out

    def merge(self, policy: str = "human-first", aggregate: Aggregate = "majority",
              fractional: bool = False, derived: DerivedVote = "recorded", *,
              stale: Set[tuple[str, str, str, str]] | None = None,
              rows: Sequence[tuple] | None = None,
              standing: np.ndarray | None = None, votes: Votes | None = None) -> Merged:
        """Final labels under a named policy and aggregation, with provenance (see merge).
        ``derived``: a derived source votes with the grade its derivation's decision rule
        recorded (``recorded``), its most probable grade (``mode``), its median (``median``)
        or its expected grade (``expected``; fractional, so rounded half up unless
        ``fractional``). ``stale``, ``rows``, ``standing`` and ``votes``: ``stale_labels()``,
        ``label_rows()``, ``standing_ids()`` and ``votes()`` when the caller has them already."""
        from reljudge.grades import decide, round_half_up

        if derived not in DERIVED:
            raise StoreError(f"unknown derived-label choice {derived!r}; expected one of "
                             f"{', '.join(DERIVED)}")
        # event id: the grade a derived source votes with under ``derived``
        by_id: dict = {}
        if derived == "expected":
            by_id = dict(self.conn.execute(
                "SELECT id, expected FROM events WHERE expected IS NOT NULL AND source IN "
                "(SELECT source FROM derivations)"))
            if not fractional:
                by_id = {k: round_half_up(v) for k, v in by_id.items()}
        elif derived in ("mode", "median"):
            found = self.conn.execute(
                "SELECT id, probs FROM events WHERE probs IS NOT NULL AND source IN "
                "(SELECT source FROM derivations)").fetchall()
            if found:
                grades = decide(np.array([json.loads(p) for _, p in found]), derived)
                by_id = dict(zip([i for i, _ in found], grades.tolist(), strict=True))
        stale = self.stale_labels() if stale is None else stale
        if rows is not None:
            rows = [r if r[6] not in by_id else (*r[:5], by_id[r[6]], r[6]) for r in rows]
            return merge_rows(rows, policy, aggregate, fractional, stale)
        # before reading every event
        check_policy(policy)
        if votes is not None:
            return merge_votes(votes, self.source_kinds(), policy, aggregate, fractional, stale,
                               by_id)
        return merge_ids(self.standing_ids(policy) if standing is None else standing,
                         *self.id_names(), policy, aggregate, fractional, stale, by_id)

    def resolve_policy(self, policy: str, option: str = "") -> str:
        """``policy`` with the NAME of ``source=NAME`` as users type it (the model alone, a
        prefix: ``names.resolve_source``) made the full name of the one source it names, or a
        StoreError naming the known sources (``option``: the flag that gave it). ``merge``
        takes full names only: a name no source has merges nothing there."""
        from reljudge.store.names import resolve_source

        if not policy.startswith("source="):
            return policy
        name = policy[len("source="):]
        known = self.source_list()
        # a full name (of two kinds in an old store)
        if any(s.name == name for s in known):
            return policy
        return "source=" + resolve_source(known, name, where=str(self.path),
                                          option=option).name

    def conflicts(self, aggregate: Aggregate = "majority", *, standing: np.ndarray | None = None,
                  votes: Votes | None = None) -> list[Conflict]:
        """``merge.conflicts`` of the standing labels, merged from the store's ids;
        ``standing`` and ``votes``: ``standing_ids()`` and ``votes()`` when the caller has
        them already."""
        # sorted once for both sides
        votes = self.votes(standing) if votes is None else votes
        sources = self.source_kinds()
        return conflicts_between(*(merge_votes(votes, sources, policy, aggregate)
                                   for policy in ("human-only", "llm-only")))

    def votes(self, standing: np.ndarray | None = None) -> Votes:
        """The candidate votes of every merge (``merge.latest_votes``) of the standing
        labels; ``standing``: ``standing_ids()`` when the caller has read them already."""
        return latest_votes(self.standing_ids() if standing is None else standing,
                            self._id_columns("queries", "qid"),
                            self._id_columns("passages", "docid"))

    def id_names(self) -> tuple[dict[int, tuple[str, str]], list[tuple], list[tuple]]:
        """What names the store's ids: {source id: (kind, name)}, (id, qid) of each query and
        (id, docid) of each passage."""
        return (self.source_kinds(), *self.pair_ids())

    def pair_ids(self) -> tuple[list[tuple], list[tuple]]:
        """(id, qid) of each query and (id, docid) of each passage (``id_names``' last parts;
        read after the events they name, so that every id the events hold is in them)."""
        return self._id_texts("queries", "qid"), self._id_texts("passages", "docid")

    def _id_texts(self, table: str, column: str) -> list[tuple[int, str]]:
        """(id, text) of each row of ``table`` (``_id_columns`` a row at a time)."""
        ids, texts = self._id_columns(table, column)
        return list(zip(ids.tolist(), texts.tolist(), strict=True))

    def _id_columns(self, table: str, column: str) -> IdTexts:
        """The ids and texts of the rows of ``table``: read as two joined texts (a Python tuple
        a row took 0.7 s for 500k passages), or a row at a time when a text holds the
        separator."""
        n, ids, texts = self.conn.execute(f"SELECT count(*), group_concat(id), "
                                          f"group_concat({column}, ?) FROM {table}",
                                          (_SEPARATOR,)).fetchone()
        parts = texts.split(_SEPARATOR) if n else []
        if len(parts) != n:
            rows = self.conn.execute(f"SELECT id, {column} FROM {table}").fetchall()
            return IdTexts(np.array([i for i, _ in rows], dtype=np.int64),
                           _objects([t for _, t in rows]))
        return IdTexts(np.fromstring(ids or "", dtype=np.int64, sep=","), _objects(parts))

    def source_kinds(self) -> dict[int, tuple[str, str]]:
        """{source id: (kind, name)} (``id_names``' first part, without the queries and
        passages)."""
        return {i: (k, n) for i, k, n in self.conn.execute("SELECT id, kind, name FROM sources")}

    def qrels(self, source: str, aggregate: Aggregate = "majority") -> Qrels:
        """The labels of one source alone (its annotators' or samples' grades aggregated)."""
        return self.source_qrels([source], aggregate)[source]

    def source_qrels(self, sources: Sequence[str], aggregate: Aggregate = "majority"
                     ) -> dict[str, Qrels]:
        """{source: its labels alone} for each of ``sources`` (as ``qrels``), read in one go."""
        wanted = set(sources)
        names = {sid: name for sid, name in self.conn.execute("SELECT id, name FROM sources")
                 if name in wanted}
        rows = id_rows(self.conn, f"SELECT {COLUMNS} FROM events e {_UNDONE} WHERE e.grade IS "
                       f"NOT NULL AND {_STANDING} AND e.source IN ({','.join('?' * len(names))})",
                       list(names)) if names else np.zeros((0, 6), np.int64)
        found = source_qrels(rows, names, *self.pair_ids(), aggregate)
        # a name no source has
        none = Qrels.from_arrays([], [], np.zeros(0, np.int64))
        return {name: found.get(name, none) for name in sources}


def _objects(texts: list[str]) -> np.ndarray:
    """``texts`` as a one-dimensional object array."""
    out = np.empty(len(texts), dtype=object)
    out[:] = texts
    return out


def _texts(pairs: list[tuple]) -> np.ndarray:
    """{id: text} of (id, text) pairs as an object array indexed by id."""
    out = np.empty(max((i for i, _ in pairs), default=0) + 1, dtype=object)
    for i, text in pairs:
        out[i] = text
    return out
