"""Claims: which labelling process is asking about which item right now.

Before a process sends an item (qid, docid, repeat) it claims it: a row with its owner id and
a lease, written in one transaction that skips items another live process holds and items the
store has settled meanwhile. The process renews its leases while it works and releases each
claim once the item's event is stored. A killed process stops renewing: when its leases run
out, the others take its items over. So N processes on one store ask about each item once
(only a killed process's calls in flight are asked again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence, Set
from typing import TypeVar

from reljudge.store.events import _STANDING, _UNDONE
from reljudge.store.part import StorePart

#: (qid, docid, repeat)
Item = tuple[str, str, int]
#: an item's key in a claims table
K = TypeVar("K", bound=Hashable)


def partition(items: Mapping[K, Item], done: Mapping[K, bool], others: Set[K]
              ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]], list[K]]:
    """Items (by their key in the claims table) split into those to claim, those another live
    owner holds, and those settled (with whether graded); and the keys to claim."""
    got: list[Item] = []
    held: list[Item] = []
    settled: list[tuple[Item, bool]] = []
    claimed: list[K] = []
    for key, item in items.items():
        if key in done:
            settled.append((item, done[key]))
        elif key in others:
            held.append(item)
        else:
            got.append(item)
            claimed.append(key)
    return got, held, settled, claimed


class Claims(StorePart):
    """Claims of a store (a part of ``LabelStore``)."""

    def claim(self, judge: str, owner: str, items: Sequence[Item], lease: float,
              since: float, gone: Callable[[str], bool] = lambda _owner: False
              ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]]]:
        """Claim ``items`` for ``owner`` for ``lease`` seconds, in one transaction; returns
        (claimed, held by another live process, settled: (item, graded) of those answered,
        graded or not, at or after ``since``, when the caller read what was settled: a grade
        older than that is one the caller means to replace, a stale one). An expired claim is taken over;
        the owner's own are renewed, and so is a live one whose owner ``gone`` says has ended
        (a process of this machine that no longer runs)."""
        now = time.time()
        if not items:
            return [], [], []
        with self.db.transaction():
            # PostgreSQL: one claimer of a judge at a time
            self.db.lock(f"claims:{judge}")
            source = self.db.source_id("llm", judge)
            qids = self.db.intern("queries", "qid", (q for q, _, _ in items))
            docids = self.db.intern("passages", "docid", (d for _, d, _ in items))
            keys = {(qids[q], docids[d], s): (q, d, s) for q, d, s in items}
            qs = sorted({k[0] for k in keys})
            qmarks = ",".join("?" * len(qs))
            others = {(q, d, s) for q, d, s, who, until in self.conn.execute(
                f"SELECT q, d, sample, owner, expires FROM claims WHERE source = ? AND q IN "
                f"({qmarks})", (source, *qs))
                if who != owner and until > now and not gone(who)}
            done = {(q, d, s): bool(graded) for q, d, s, graded in self.conn.execute(
                f"SELECT e.q, e.d, e.sample, max(CASE WHEN e.grade IS NOT NULL AND {_STANDING} "
                "THEN 1 ELSE 0 END) FROM "
                f"events e {_UNDONE} WHERE e.source = ? AND e.q IN ({qmarks}) AND "
                "e.created_at >= ? GROUP BY e.q, e.d, e.sample", (source, *qs, since))}
            got, held, settled, claimed = partition(keys, done, others)
            rows = [(source, *key, owner, now + lease) for key in claimed]
            self.conn.executemany(
                "INSERT INTO claims (source, q, d, sample, owner, expires) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT (source, q, d, sample) DO UPDATE SET owner = excluded.owner, "
                "expires = excluded.expires", rows)
        return got, held, settled

    def renew_claims(self, owner: str, lease: float) -> int:
        """Extend every claim of ``owner`` by ``lease`` seconds from now; how many."""
        with self.db.transaction():
            return self.conn.execute("UPDATE claims SET expires = ? WHERE owner = ?",
                                     (time.time() + lease, owner)).rowcount

    def release_claims(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Drop the claims of ``owner`` (on these items only, when given)."""
        with self.db.transaction():
            if items is None:
                self.conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
                return
            for q, d, s in items:
                self.conn.execute(
                    "DELETE FROM claims WHERE owner = ? AND sample = ? AND q = (SELECT id FROM "
                    "queries WHERE qid = ?) AND d = (SELECT id FROM passages WHERE docid = ?)",
                    (owner, s, q, d))

    def live_claims(self, gone: Callable[[str], bool] | None = None
                    ) -> list[tuple[str, str, int]]:
        """(source, owner, items) of the claims whose lease has not run out, by source and
        owner (sorted here: a server's collation must not change the order); ``gone``: tells
        an owner known to have ended (a killed process of this machine), whose claims are
        left out."""
        rows = self.conn.execute(
            "SELECT s.name, c.owner, count(*) FROM claims c JOIN sources s ON s.id = c.source "
            "WHERE c.expires > ? GROUP BY s.name, c.owner", (time.time(),)).fetchall()
        return sorted(tuple(r) for r in rows if gone is None or not gone(r[1]))
