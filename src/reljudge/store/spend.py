"""The spend ledger of a label store: what each labelling run paid, kept up to date as it runs."""

from __future__ import annotations

import time

from reljudge.store.part import StorePart


class Spend(StorePart):
    """The spend ledger of a store (a part of ``LabelStore``)."""

    def open_spend(self, judge: str, endpoint: str) -> int:
        """Start a labelling run's line in the spend ledger; returns its id."""
        now = time.time()
        with self.db.transaction():
            cur = self.conn.execute(
                "INSERT INTO spend (source, endpoint, started_at, updated_at) VALUES (?,?,?,?) "
                "RETURNING id", (self.db.source_id("llm", judge), endpoint, now, now))
            run = int(cur.fetchone()[0])
        return run

    def update_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                     cost: float) -> None:
        """What a run has spent so far (its totals, not an increment)."""
        self.conn.execute("UPDATE spend SET calls = ?, tokens_in = ?, tokens_out = ?, cost = ?, "
                          "updated_at = ? WHERE id = ?",
                          (calls, tokens_in, tokens_out, cost, time.time(), run))

    def total_spend(self) -> float:
        """USD spent by every labelling and probe run recorded in this store (what
        --max-total-cost caps: money, whatever it bought)."""
        return float(self.conn.execute(
            "SELECT (SELECT coalesce(sum(cost), 0) FROM spend) + "
            "(SELECT coalesce(sum(cost), 0) FROM probe_spend)").fetchone()[0])

    def spend(self) -> list[tuple[str, int, int, int, int, float]]:
        """Per judge: (source, runs, calls, tokens in, tokens out, USD spent), by source name
        (sorted here: a server's collation must not change the order)."""
        return sorted(self.conn.execute(
            "SELECT s.name, count(*), sum(l.calls), sum(l.tokens_in), sum(l.tokens_out), "
            "sum(l.cost) FROM spend l JOIN sources s ON s.id = l.source "
            "GROUP BY s.name").fetchall())
