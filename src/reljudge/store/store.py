"""``LabelStore``: every label kept, with where it came from, in one SQLite file.

Appends only: a correction is a new event. Each write is one transaction, so a killed process
leaves either the whole batch or none of it; WAL mode and a busy timeout let several processes
append at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from reljudge.errors import StoreError
from reljudge.grades import most_probable
from reljudge.labels import RETRACTED, SOURCE_KINDS, LabelEvent
from reljudge.store.schema import migrate


class Outcome(NamedTuple):
    """One event's (qid, docid, sample) and its grade or failure."""

    qid: str
    docid: str
    sample: int
    grade: int | None
    failure_kind: str | None
    failure: str | None


_EVENT_COLS = ("q, d, source, sample, grade, failure, raw, probs, expected, tokens_in, "
               "tokens_out, cost, latency, created_at, meta, batch, failure_kind")

# An event ``e`` stands unless its source later retracted the pair (an undo, see RETRACTED):
# join this to ``events e`` and keep the rows where _STANDING holds.
_UNDONE = ("LEFT JOIN (SELECT q, d, source, sample, max(id) AS rid FROM events "
           f"WHERE failure = '{RETRACTED}' GROUP BY q, d, source, sample) r "
           "ON r.q = e.q AND r.d = e.d AND r.source = e.source AND r.sample = e.sample")
_STANDING = "(r.rid IS NULL OR r.rid < e.id)"


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
    retracted: int = 0  # grades taken back by an undo (counted in events, not in ok/grades)


class LabelStore:
    """One SQLite label store: queries, passages, sources and append-only label events."""

    def __init__(self, path: str | Path, *, timeout: float = 60.0, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():  # a typo must not become an empty store
            what = "is a directory" if self.path.is_dir() else "no such label store"
            raise StoreError(f"{self.path}: {what} (label, labels import and run create one)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # one thread at a time, not always the opening one: label_pairs called inside a
            # running event loop (Jupyter) writes from its worker thread while the caller waits
            self.conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA cache_size = -262144")  # 256 MB: fast bulk inserts
            self.migrated_from = migrate(self.conn)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot open the label store: {e}") from None
        self._qids: dict[str, int] = {}
        self._docids: dict[str, int] = {}
        self._sources: dict[tuple[str, str], int] = {}

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    # -- interning ------------------------------------------------------------------------
    def _intern(self, table: str, column: str, cache: dict[str, int],
                keys: Iterable[str]) -> dict[str, int]:
        missing = [k for k in dict.fromkeys(keys) if k not in cache]
        if missing:
            self.conn.executemany(f"INSERT OR IGNORE INTO {table} ({column}) VALUES (?)",
                                  ((k,) for k in missing))
            if len(missing) > 20_000:  # one scan beats thousands of IN (...) look-ups
                cache.update(self.conn.execute(f"SELECT {column}, id FROM {table}"))
                return cache
            for i in range(0, len(missing), 900):
                part = missing[i:i + 900]
                marks = ",".join("?" * len(part))
                cache.update(self.conn.execute(
                    f"SELECT {column}, id FROM {table} WHERE {column} IN ({marks})", part))
        return cache

    def _source_id(self, kind: str, name: str) -> int:
        key = (kind, name)
        if key not in self._sources:
            if kind not in SOURCE_KINDS:
                raise StoreError(f"source kind must be one of {', '.join(SOURCE_KINDS)}, "
                                 f"found {kind!r}")
            self.conn.execute("INSERT OR IGNORE INTO sources (kind, name) VALUES (?, ?)", key)
            self._sources[key] = self.conn.execute(
                "SELECT id FROM sources WHERE kind = ? AND name = ?", key).fetchone()[0]
        return self._sources[key]

    # -- writing --------------------------------------------------------------------------
    def add_queries(self, queries: Mapping[str, str]) -> None:
        """Insert or update query texts."""
        self._begin()
        try:
            self.conn.executemany(
                "INSERT INTO queries (qid, text) VALUES (?, ?) "
                "ON CONFLICT (qid) DO UPDATE SET text = excluded.text", queries.items())
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def add_passages(self, passages: Mapping[str, str | Mapping[str, str]]) -> None:
        """Insert or update passage texts (a text, or a {"text": ..., "title"?: ...} record)."""
        def rows():
            for docid, p in passages.items():
                text, title = (p, None) if isinstance(p, str) else (p.get("text", ""),
                                                                     p.get("title") or None)
                yield docid, text, hashlib.sha256(text.encode()).hexdigest()[:16], title

        self._begin()
        try:
            self.conn.executemany(
                "INSERT INTO passages (docid, text, text_sha, title) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (docid) DO UPDATE SET text = excluded.text, "
                "text_sha = excluded.text_sha, title = excluded.title", rows())
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def add_events(self, events: Iterable[LabelEvent], *, batch: int | None = None,
                   commit_with: Sequence[tuple[str, tuple]] = ()) -> int:
        """Append label events in one transaction; returns how many were written.
        ``commit_with``: more (sql, args) statements run in the same transaction."""
        events = list(events)
        if not events and not commit_with:
            return 0
        now = time.time()
        self._begin()
        try:
            qids = self._intern("queries", "qid", self._qids, (e.qid for e in events))
            docids = self._intern("passages", "docid", self._docids, (e.docid for e in events))
            metas: dict[int, str] = {}  # events often share one meta dict: encode it once

            def meta(m: dict) -> str:
                text = metas.get(id(m))
                if text is None:
                    text = metas[id(m)] = json.dumps(m, sort_keys=True)
                return text

            rows = [(qids[e.qid], docids[e.docid], self._source_id(e.source_kind, e.source_name),
                     e.sample, e.grade, e.failure, e.raw,
                     None if e.probs is None else json.dumps(list(e.probs)),
                     e.expected_grade, e.tokens_in, e.tokens_out, e.cost, e.latency,
                     e.created_at if e.created_at is not None else now,
                     None if e.meta is None else meta(e.meta), batch, e.failure_kind)
                    for e in events]
            self.conn.executemany(f"INSERT INTO events ({_EVENT_COLS}) VALUES "
                                  f"({','.join('?' * 17)})", rows)
            for statement in commit_with:
                self.conn.execute(*statement)
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback_and_forget()
            raise
        return len(rows)

    def add_grades(self, rows: Sequence[tuple[str, str, int]], kind: str, name: str, *,
                   raw: Sequence[str] | None = None, batch_info: dict | None = None) -> int:
        """Append plain (qid, docid, grade) labels of one source in one transaction (fast path
        for imports). ``batch_info`` (path, sha256, clipped) records the import itself."""
        now = time.time()
        self._begin()
        try:
            source = self._source_id(kind, name)
            batch = None
            if batch_info is not None:
                cur = self.conn.execute(
                    "INSERT INTO imports (path, sha256, source, events, clipped, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (batch_info["path"], batch_info["sha256"], source, len(rows),
                     batch_info.get("clipped", 0), now))
                batch = cur.lastrowid
            qids = self._intern("queries", "qid", self._qids, (r[0] for r in rows))
            docids = self._intern("passages", "docid", self._docids, (r[1] for r in rows))
            raws = raw if raw is not None else [None] * len(rows)
            self.conn.executemany(
                "INSERT INTO events (q, d, source, grade, raw, created_at, batch) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((qids[q], docids[d], source, g, r, now, batch)
                 for (q, d, g), r in zip(rows, raws, strict=False)))
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback_and_forget()
            raise
        return len(rows)

    def add_derived(self, name: str, pairs: Sequence[tuple[str, str]],
                    probs: Sequence[Sequence[float]], *, method: str, fitted_on: dict) -> int:
        """Append a derived source (kind 'llm': a calibrated judge, a panel) with one grade
        distribution per pair and the record of what it was fitted on, in one transaction;
        returns the derivation id. Each event's grade is the most probable grade."""
        rows = [[float(x) for x in p] for p in probs]
        if len(rows) != len(pairs):
            raise StoreError(f"{len(pairs)} pairs but {len(rows)} grade distributions")
        if any(len(p) != 4 or abs(sum(p) - 1.0) > 1e-6 or min(p) < 0 for p in rows):
            raise StoreError("each derived label needs 4 grade probabilities summing to 1")
        now = time.time()
        self._begin()
        try:
            source = self._source_id("llm", name)
            plain = self.conn.execute(
                "SELECT count(*) FROM events WHERE source = ? AND source NOT IN "
                "(SELECT source FROM derivations)", (source,)).fetchone()[0]
            if plain:
                raise StoreError(f"source {name!r} already holds labels that were not derived; "
                                 "choose another name")
            cur = self.conn.execute(
                "INSERT INTO derivations (source, method, fitted_on, created_at) "
                "VALUES (?, ?, ?, ?)", (source, method, json.dumps(fitted_on, sort_keys=True),
                                        now))
            derivation = cur.lastrowid
            meta = json.dumps({"derivation": derivation})
            qids = self._intern("queries", "qid", self._qids, (q for q, _ in pairs))
            docids = self._intern("passages", "docid", self._docids, (d for _, d in pairs))
            self.conn.executemany(
                "INSERT INTO events (q, d, source, grade, probs, expected, created_at, meta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ((qids[q], docids[d], source, most_probable(p), json.dumps(p),
                  sum(g * x for g, x in enumerate(p)), now, meta)
                 for (q, d), p in zip(pairs, rows, strict=True)))
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback_and_forget()
            raise
        return derivation

    def derivations(self) -> list[dict]:
        """Every derivation: id, source name, method, what it was fitted on, time."""
        return [{"id": i, "source": name, "method": method, "fitted_on": json.loads(f),
                 "created_at": t} for i, name, method, f, t in self.conn.execute(
                    "SELECT d.id, s.name, d.method, d.fitted_on, d.created_at FROM derivations d "
                    "JOIN sources s ON s.id = d.source ORDER BY d.id")]

    def distributions(self, source: str) -> dict[tuple[str, str], tuple[float, ...]]:
        """{(qid, docid): grade probabilities} of one source, the latest event of each pair."""
        return {(q, d): tuple(json.loads(p)) for q, d, p in self.conn.execute(
            "SELECT q.qid, p.docid, e.probs FROM events e JOIN queries q ON q.id = e.q "
            "JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source "
            "WHERE s.name = ? AND e.probs IS NOT NULL ORDER BY e.id", (source,))}

    def _rollback_and_forget(self) -> None:
        """Roll back and drop the id caches, which may hold ids of rolled-back rows."""
        try:
            self.conn.execute("ROLLBACK")
        finally:
            self._qids.clear()
            self._docids.clear()
            self._sources.clear()

    def find_import(self, sha256: str, kind: str, name: str) -> int | None:
        """Events of an earlier import of the same file into the same source, or None."""
        row = self.conn.execute(
            "SELECT i.events FROM imports i JOIN sources s ON s.id = i.source "
            "WHERE i.sha256 = ? AND s.kind = ? AND s.name = ?", (sha256, kind, name)).fetchone()
        return None if row is None else row[0]

    # -- reading --------------------------------------------------------------------------
    def count(self) -> int:
        """Number of label events."""
        return self.conn.execute("SELECT count(*) FROM events").fetchone()[0]

    def fingerprint(self) -> str:
        """Changes whenever an event is added (for pipeline stage fingerprints)."""
        n, last = self.conn.execute("SELECT count(*), max(id) FROM events").fetchone()
        return f"{n}:{last}"

    def queries(self) -> dict[str, str | None]:
        """{qid: text or None} of every query the store knows."""
        return dict(self.conn.execute("SELECT qid, text FROM queries"))

    def query_texts(self, qids: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
        """{qid: (text, narrative)} of the given queries the store knows (narrative is None
        unless the store's queries table has a narrative column)."""
        cols = {r[1] for r in self.conn.execute("PRAGMA table_info(queries)")}
        narrative = "narrative" if "narrative" in cols else "NULL"
        return {r[0]: (r[1], r[2]) for r in self._select_in(
            f"SELECT qid, text, {narrative} FROM queries", "qid", list(qids))}

    def passage_texts(self, docids: Iterable[str]) -> dict[str, str]:
        """{docid: text} of the given passages whose text the store holds."""
        return {r[0]: r[1] for r in self._select_in(
            "SELECT docid, text FROM passages", "docid", list(docids)) if r[1] is not None}

    def _select_in(self, sql: str, column: str, keys: list[str]) -> list[tuple]:
        rows: list[tuple] = []
        for i in range(0, len(keys), 900):
            part = keys[i:i + 900]
            rows += self.conn.execute(f"{sql} WHERE {column} IN ({','.join('?' * len(part))})",
                                      part).fetchall()
        return rows

    def passages_with_text(self) -> set[str]:
        """Docids whose text the store holds."""
        return {r[0] for r in self.conn.execute(
            "SELECT docid FROM passages WHERE text IS NOT NULL")}

    def labelled_pairs(self, source_names: Sequence[str] | None = None,
                       ok_only: bool = True) -> set[tuple[str, str]]:
        """(qid, docid) pairs with at least one label (from the named sources, if given);
        a retracted label does not count."""
        sql = ("SELECT DISTINCT q.qid, p.docid FROM events e JOIN queries q ON q.id = e.q "
               "JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source "
               f"{_UNDONE} WHERE {_STANDING} AND e.failure IS NOT '{RETRACTED}'")
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
               "e.created_at, e.meta, e.failure_kind FROM events e "
               "JOIN queries q ON q.id = e.q "
               "JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source WHERE 1")
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
                             None if r[15] is None else json.loads(r[15]), r[16])

    def outcomes(self, source: str) -> Iterator[Outcome]:
        """What each event of one source settled, in the order added (what a resumed labelling
        run needs, without decoding the rest of the events)."""
        sql = ("SELECT q.qid, p.docid, e.sample, e.grade, e.failure_kind, e.failure FROM events e "
               "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
               "JOIN sources s ON s.id = e.source WHERE s.name = ? ORDER BY e.id")
        return map(Outcome._make, self.conn.execute(sql, (source,)))

    def label_rows(self) -> list[tuple[str, str, str, str, int, int | None, int]]:
        """Every successful label not retracted since, as (qid, docid, kind, source, sample,
        grade, event id)."""
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.kind, s.name, e.sample, e.grade, e.id FROM events e "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            f"JOIN sources s ON s.id = e.source {_UNDONE} "
            f"WHERE e.grade IS NOT NULL AND {_STANDING}").fetchall()

    def sources(self) -> list[SourceStats]:
        """Counts, grade distribution, tokens and cost of every source (retracted grades and
        the undo events themselves are neither ok nor failed)."""
        out = []
        for sid, kind, name in self.conn.execute("SELECT id, kind, name FROM sources ORDER BY id"):
            n, ok, failed, cost, tin, tout = self.conn.execute(
                "SELECT count(*), count(grade), count(*) FILTER (WHERE failure != ?), "
                "coalesce(sum(cost), 0), coalesce(sum(tokens_in), 0), "
                "coalesce(sum(tokens_out), 0) FROM events WHERE source = ?",
                (RETRACTED, sid)).fetchone()
            grades = dict(self.conn.execute(
                f"SELECT e.grade, count(*) FROM events e {_UNDONE} WHERE e.source = ? AND "
                f"e.grade IS NOT NULL AND {_STANDING} GROUP BY e.grade ORDER BY e.grade",
                (sid,)))
            standing = sum(grades.values())
            out.append(SourceStats(kind, name, n, standing, failed, grades, cost, tin, tout,
                                   ok - standing))
        return out

    def failures(self) -> list[tuple[str, str, str, str, str | None]]:
        """Failed judgments: (qid, docid, source, reason, raw answer)."""
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.name, e.failure, e.raw FROM events e "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            "JOIN sources s ON s.id = e.source WHERE e.failure IS NOT NULL AND e.failure != ? "
            "ORDER BY e.id", (RETRACTED,)).fetchall()

    # -- DataFrames (pandas optional: a ReljudgeError naming `pip install pandas` without it) --
    def labels_dataframe(self):
        """Every event (grades, failures, undos) as a pandas DataFrame, LabelEvent's fields as
        columns, in the order they were added."""
        from reljudge.store.views import events_frame

        return events_frame(self)

    def provenance_dataframe(self, policy: str = "human-first", aggregate: str = "majority",
                             fractional: bool = False, derived: str = "mode"):
        """The merged labels with provenance as a pandas DataFrame: the records
        ``labels merge --provenance`` writes (sources and votes as lists)."""
        from reljudge.frames import dataframe
        from reljudge.store.views import PROVENANCE_COLUMNS

        rows = self.merge(policy, aggregate, fractional, derived).provenance_rows()
        return dataframe(PROVENANCE_COLUMNS, [[r[c] for c in PROVENANCE_COLUMNS] for r in rows])

    def failures_dataframe(self, history: bool = False):
        """Failed judgments as a pandas DataFrame: those still without a grade (qid, docid,
        source, sample, kind, detail; kind None when recorded before kinds had a column), or
        with ``history`` every failed event (qid, docid, source, failure, raw)."""
        from reljudge.frames import dataframe
        from reljudge.store import views

        if history:
            return dataframe(views.FAILURE_HISTORY_COLUMNS, self.failures())
        return dataframe(views.CURRENT_FAILURE_COLUMNS, self.current_failures())

    def conflicts_dataframe(self, aggregate: str = "majority", min_diff: float = 1.0):
        """Human/LLM conflicts with query and passage text and the judge's raw answers, as a
        pandas DataFrame (the rows of ``labels conflicts --with-text``)."""
        from reljudge.store.views import conflicts_frame, conflicts_with_text

        return conflicts_frame(conflicts_with_text(self, aggregate, min_diff))

    # -- samples for human labelling -------------------------------------------------------
    def add_sample(self, sample) -> int:
        """Record a drawn ``infer.sample.Sample`` and its items in one transaction; its id."""
        if sample.name in self.sample_names():
            raise StoreError(f"a sample named {sample.name!r} is already recorded; "
                             f"choose another name")
        self._begin()
        try:
            cur = self.conn.execute(
                "INSERT INTO samples (name, unit, design, seed, budget, params, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sample.name, sample.unit, sample.design, sample.seed, sample.budget,
                 json.dumps(sample.params, sort_keys=True), time.time()))
            sid = cur.lastrowid
            qids = self._intern("queries", "qid", self._qids, (i.qid for i in sample.items))
            docids = self._intern("passages", "docid", self._docids,
                                  (i.docid for i in sample.items))
            self.conn.executemany(
                "INSERT INTO sample_items (sample, q, d, position, prob, stratum) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                ((sid, qids[i.qid], docids[i.docid], i.position, i.prob, i.stratum)
                 for i in sample.items))
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback_and_forget()
            raise
        return sid

    def source_grades(self, name: str, kind: str | None = None,
                      pairs: Sequence[tuple[str, str]] | None = None
                      ) -> dict[tuple[str, str], int]:
        """{(qid, docid): grade} of one source's latest successful label per pair that the
        source has not taken back since (an undo in ``assess``)."""
        sql = ("SELECT q.qid, p.docid, e.grade FROM events e JOIN queries q ON q.id = e.q "
               f"JOIN passages p ON p.id = e.d JOIN sources s ON s.id = e.source {_UNDONE} "
               f"WHERE e.grade IS NOT NULL AND {_STANDING} AND s.name = ?")
        args: list = [name]
        if kind is not None:
            sql += " AND s.kind = ?"
            args.append(kind)
        out = {(q, d): g for q, d, g in self.conn.execute(sql + " ORDER BY e.id", args)}
        if not out and not self.conn.execute("SELECT 1 FROM sources WHERE name = ?",
                                             (name,)).fetchone():
            known = ", ".join(s.name for s in self.sources()) or "none"
            raise StoreError(f"no label source named {name!r} in {self.path}; "
                             f"known sources: {known}")
        if pairs is not None:
            wanted = set(pairs)
            out = {p: g for p, g in out.items() if p in wanted}
        return out

    def sample_names(self) -> list[str]:
        """Names of the recorded samples, oldest first."""
        return [r[0] for r in self.conn.execute("SELECT name FROM samples ORDER BY id")]

    def _sample_row(self, name: str) -> tuple:
        row = self.conn.execute("SELECT id, unit, design, seed, budget, params FROM samples "
                                "WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = ", ".join(self.sample_names()) or "none"
            raise StoreError(f"no sample named {name!r} in {self.path}; known samples: {known}")
        return row

    def sample_pairs(self, name: str) -> list[tuple[str, str]]:
        """(qid, docid) of a recorded sample in position order (the order people grade in)."""
        sid = self._sample_row(name)[0]
        return self.conn.execute(
            "SELECT q.qid, p.docid FROM sample_items i JOIN queries q ON q.id = i.q "
            "JOIN passages p ON p.id = i.d WHERE i.sample = ? ORDER BY i.position",
            (sid,)).fetchall()

    def sample(self, name: str):
        """A recorded sample as an ``infer.sample.Sample``."""
        from reljudge.labels import Sample, SampleItem

        sid, unit, design, seed, budget, params = self._sample_row(name)
        items = [SampleItem(*r) for r in self.conn.execute(
            "SELECT q.qid, p.docid, i.position, i.prob, i.stratum FROM sample_items i "
            "JOIN queries q ON q.id = i.q JOIN passages p ON p.id = i.d WHERE i.sample = ? "
            "ORDER BY i.position", (sid,))]
        return Sample(name, unit, design, seed, budget, items,
                      json.loads(params) if params else {})

    def texts(self, pairs: Sequence[tuple[str, str]], *, titles: bool = False
              ) -> tuple[dict[str, str | None], dict[str, Any]]:
        """Query and passage texts the store holds for these pairs: ({qid: text}, {docid: text});
        with ``titles``, a passage with a title is a {"text": ..., "title": ...} record, as the
        labeller takes it."""
        qs = {q for q, _ in pairs}
        ds = {d for _, d in pairs}
        queries = {q: t for q, t in self.conn.execute("SELECT qid, text FROM queries")
                   if q in qs}
        passages = {d: ({"text": t, "title": title} if titles and title and t is not None
                        else t)
                    for d, t, title in self.conn.execute("SELECT docid, text, title FROM passages")
                    if d in ds}
        return queries, passages

    def current_failures(self) -> list[tuple[str, str, str, int, str, str]]:
        """Judgments whose latest event failed and that no grade settled (per pair, source
        and sample): (qid, docid, source, sample, kind, detail). Kind is None for failures
        recorded before kinds had a column."""
        return self.conn.execute(
            "SELECT q.qid, p.docid, s.name, e.sample, e.failure_kind, e.failure FROM events e "
            "JOIN (SELECT max(id) AS id, max(grade IS NOT NULL) AS graded FROM events "
            "GROUP BY q, d, source, sample) last ON last.id = e.id "
            "JOIN queries q ON q.id = e.q JOIN passages p ON p.id = e.d "
            "JOIN sources s ON s.id = e.source WHERE e.failure IS NOT NULL AND NOT last.graded "
            "ORDER BY e.id").fetchall()

    # -- the spend ledger --------------------------------------------------------------------
    def open_spend(self, judge: str, endpoint: str) -> int:
        """Start a labelling run's line in the spend ledger; returns its id."""
        now = time.time()
        self._begin()
        try:
            cur = self.conn.execute(
                "INSERT INTO spend (source, endpoint, started_at, updated_at) VALUES (?,?,?,?)",
                (self._source_id("llm", judge), endpoint, now, now))
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback_and_forget()
            raise
        return int(cur.lastrowid)

    def update_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                     cost: float) -> None:
        """What a run has spent so far (its totals, not an increment)."""
        self.conn.execute("UPDATE spend SET calls = ?, tokens_in = ?, tokens_out = ?, cost = ?, "
                          "updated_at = ? WHERE id = ?",
                          (calls, tokens_in, tokens_out, cost, time.time(), run))

    def total_spend(self) -> float:
        """USD spent by every labelling run recorded in this store."""
        return float(self.conn.execute("SELECT coalesce(sum(cost), 0) FROM spend").fetchone()[0])

    def spend(self) -> list[tuple[str, int, int, int, int, float]]:
        """Per judge: (source, runs, calls, tokens in, tokens out, USD spent)."""
        return self.conn.execute(
            "SELECT s.name, count(*), sum(l.calls), sum(l.tokens_in), sum(l.tokens_out), "
            "sum(l.cost) FROM spend l JOIN sources s ON s.id = l.source "
            "GROUP BY l.source ORDER BY s.name").fetchall()

    # -- merging --------------------------------------------------------------------------
    def merge(self, policy: str = "human-first", aggregate: str = "majority",
              fractional: bool = False, derived: str = "mode"):
        """Final labels under a named policy and aggregation, with provenance (see merge).
        ``derived``: a derived source votes with its most probable grade (``mode``) or its
        expected grade (``expected``; fractional, so rounded half up unless ``fractional``)."""
        from reljudge.grades import round_half_up
        from reljudge.store.merge import DERIVED, merge_rows

        rows = self.label_rows()
        if derived not in DERIVED:
            raise StoreError(f"unknown derived-label choice {derived!r}; expected one of "
                             f"{', '.join(DERIVED)}")
        if derived == "expected":
            expected = dict(self.conn.execute(
                "SELECT id, expected FROM events WHERE expected IS NOT NULL AND source IN "
                "(SELECT source FROM derivations)"))
            if not fractional:
                expected = {k: round_half_up(v) for k, v in expected.items()}
            rows = [r if r[6] not in expected else (*r[:5], expected[r[6]], r[6]) for r in rows]
        return merge_rows(rows, policy, aggregate, fractional)
