"""Derived sources of a label store: a calibrated judge or a panel, one grade distribution per
pair, with the record of what each derivation was fitted on."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from reljudge.errors import StoreError
from reljudge.grades import N_GRADES, SCALE, check_grade, most_probable
from reljudge.store.part import StorePart


class DerivedSources(StorePart):
    """Derivations of a store (a part of ``LabelStore``)."""

    def add_derived(self, name: str, pairs: Sequence[tuple[str, str]],
                    probs: Sequence[Sequence[float]], *, method: str, fitted_on: dict,
                    grades: Sequence[int] | None = None) -> int:
        """Append a derived source (kind 'llm': a calibrated judge, a panel) with one grade
        distribution per pair and the record of what it was fitted on, in one transaction;
        returns the derivation id. Each event's grade is ``grades`` (the grade the
        derivation's decision rule reads off each distribution; what ``merge`` takes by
        default), else the most probable grade."""
        rows = [[float(x) for x in p] for p in probs]
        if len(rows) != len(pairs):
            raise StoreError(f"{len(pairs)} pairs but {len(rows)} grade distributions")
        if not all(len(p) == N_GRADES and all(0.0 <= x <= 1.0 for x in p)
                   # nan fails every one
                   and abs(sum(p) - 1.0) <= 1e-6 for p in rows):
            raise StoreError(f"each derived label needs {N_GRADES} grade probabilities "
                             "(finite, >= 0) summing to 1")
        chosen = [most_probable(p) for p in rows] if grades is None else \
            [check_grade(int(g), "a derived grade") for g in grades]
        if len(chosen) != len(pairs):
            raise StoreError(f"{len(pairs)} pairs but {len(chosen)} grades")
        now = time.time()
        with self.db.transaction():
            source = self.db.source_id("llm", name)
            plain = self.conn.execute(
                "SELECT count(*) FROM events WHERE source = ? AND source NOT IN "
                "(SELECT source FROM derivations)", (source,)).fetchone()[0]
            if plain:
                raise StoreError(f"source {name!r} already holds labels that were not derived; "
                                 "choose another name")
            cur = self.conn.execute(
                "INSERT INTO derivations (source, method, fitted_on, created_at) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (source, method, json.dumps(fitted_on, sort_keys=True), now))
            derivation = cur.fetchone()[0]
            meta = json.dumps({"derivation": derivation})
            qids = self.db.intern("queries", "qid", (q for q, _ in pairs))
            docids = self.db.intern("passages", "docid", (d for _, d in pairs))
            self.conn.executemany(
                "INSERT INTO events (q, d, source, grade, probs, expected, created_at, meta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                ((qids[q], docids[d], source, g, json.dumps(p),
                  sum(v * x for v, x in zip(SCALE, p, strict=True)), now, meta)
                 for (q, d), p, g in zip(pairs, rows, chosen, strict=True)))
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
            "JOIN passages p ON p.id = e.d WHERE e.source IN (SELECT id FROM sources WHERE "
            "name = ?) AND e.probs IS NOT NULL ORDER BY e.id", (source,))}
