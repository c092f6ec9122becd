"""Samples recorded in a label store: which pairs humans are asked to grade, drawn with known
inclusion probabilities (``reljudge sample``), in the order they are shown."""

from __future__ import annotations

import json
import time

from reljudge.errors import StoreError
from reljudge.labels import Sample, SampleItem
from reljudge.store.part import StorePart


class Samples(StorePart):
    """Recorded samples of a store (a part of ``LabelStore``)."""

    def add_sample(self, sample: Sample) -> int:
        """Record a drawn sample and its items in one transaction; returns its id."""
        if sample.name in self.sample_names():
            raise StoreError(f"a sample named {sample.name!r} is already recorded; "
                             f"choose another name")
        with self.db.transaction():
            cur = self.conn.execute(
                "INSERT INTO samples (name, unit, design, seed, budget, params, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (sample.name, sample.unit, sample.design, sample.seed, sample.budget,
                 json.dumps(sample.params, sort_keys=True), time.time()))
            sid = cur.fetchone()[0]
            qids = self.db.intern("queries", "qid", (i.qid for i in sample.items))
            docids = self.db.intern("passages", "docid", (i.docid for i in sample.items))
            self.conn.executemany(
                "INSERT INTO sample_items (sample, q, d, position, prob, stratum) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                ((sid, qids[i.qid], docids[i.docid], i.position, i.prob, i.stratum)
                 for i in sample.items))
        return sid

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

    def sample(self, name: str) -> Sample:
        """A recorded sample, its items in position order."""
        sid, unit, design, seed, budget, params = self._sample_row(name)
        items = [SampleItem(*r) for r in self.conn.execute(
            "SELECT q.qid, p.docid, i.position, i.prob, i.stratum FROM sample_items i "
            "JOIN queries q ON q.id = i.q JOIN passages p ON p.id = i.d WHERE i.sample = ? "
            "ORDER BY i.position", (sid,))]
        return Sample(name, unit, design, seed, budget, items,
                      json.loads(params) if params else {})

    # -- team assignment (``reljudge assess --team ... --overlap F``) -----------------------
    def assign_sample(self, name: str, team: list[str], overlap: float) -> dict:
        """Record how a sample is shared by a team (its annotators and the share every one of
        them grades); the first record stands. Returns the recorded assignment; a different
        one already recorded is a StoreError naming it (one team per sample, so that the
        shares of all its members come from one split)."""
        self._sample_row(name)
        wanted = {"team": list(team), "overlap": float(overlap)}
        key = f"assignment:{name}"
        with self.db.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                         (key, json.dumps(wanted, sort_keys=True)))
            held = json.loads(conn.execute("SELECT value FROM meta WHERE key = ?",
                                           (key,)).fetchone()[0])
        if held != wanted:
            raise StoreError(f"sample {name!r} is already assigned to the team "
                             f"{','.join(held['team'])} with --overlap {held['overlap']:g}; "
                             "give the same --team and --overlap, or neither")
        return held

    def sample_assignment(self, name: str) -> dict | None:
        """The team assignment recorded for a sample ({"team": [...], "overlap": F}), or None."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?",
                                (f"assignment:{name}",)).fetchone()
        return json.loads(row[0]) if row else None
