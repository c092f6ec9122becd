"""The spend ledger of a label store: what each labelling job paid, kept up to date as it runs."""

from __future__ import annotations

import time

from reljudge.store.backend import Backend
from reljudge.store.part import StorePart


def open_line(db: Backend, ledger: str, judge_column: str, judge: int | str,
              endpoint: str) -> int:
    """Start a job's line in a ledger (``spend``, a labelling job's by source id, or
    ``probe_spend``, a probe run's by judge name); returns its id."""
    now = time.time()
    with db.transaction() as conn:
        cur = conn.execute(f"INSERT INTO {ledger} ({judge_column}, endpoint, started_at, "
                           "updated_at) VALUES (?,?,?,?) RETURNING id",
                           (judge, endpoint, now, now))
        return int(cur.fetchone()[0])


def update_line(db: Backend, ledger: str, run: int, calls: int, tokens_in: int,
                tokens_out: int, cost: float) -> None:
    """What the run of line ``run`` of a ledger has spent so far (its totals)."""
    db.execute(f"UPDATE {ledger} SET calls = ?, tokens_in = ?, tokens_out = ?, cost = ?, "
               "updated_at = ? WHERE id = ?",
               (calls, tokens_in, tokens_out, cost, time.time(), run))


class Spend(StorePart):
    """The spend ledger of a store (a part of ``LabelStore``)."""

    def open_spend(self, judge: str, endpoint: str) -> int:
        """Start a labelling job's line in the spend ledger; returns its id."""
        with self.db.transaction():
            return open_line(self.db, "spend", "source", self.db.source_id("llm", judge),
                             endpoint)

    def update_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                     cost: float) -> None:
        """What a run has spent so far (its totals, not an increment)."""
        update_line(self.db, "spend", run, calls, tokens_in, tokens_out, cost)

    def total_spend(self) -> float:
        """USD spent by every labelling and probe run recorded in this store (what
        --max-total-cost caps: money, whatever it bought)."""
        return float(self.conn.execute(
            "SELECT (SELECT coalesce(sum(cost), 0) FROM spend) + "
            "(SELECT coalesce(sum(cost), 0) FROM probe_spend)").fetchone()[0])

    def spend(self) -> list[tuple[str, int, int, int, int, float]]:
        """Per judge: (source, jobs, calls, tokens in, tokens out, USD spent), by source name
        (sorted here: a server's collation must not change the order)."""
        return sorted(self.conn.execute(
            "SELECT s.name, count(*), sum(l.calls), sum(l.tokens_in), sum(l.tokens_out), "
            "sum(l.cost) FROM spend l JOIN sources s ON s.id = l.source "
            "GROUP BY s.name").fetchall())
