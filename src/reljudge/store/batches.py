"""The store's record of Batch API jobs: every provider id written as soon as it is known.

A batch row is inserted (with the items it holds) before its input file is uploaded; the
input file id, the batch id and the status follow as each becomes known. These rows are the
resume point of ``reljudge label --batch`` (see ``reljudge.judge.batch``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reljudge.labels import LabelEvent
from reljudge.store.store import LabelStore

#: batch statuses after which the provider does nothing more
TERMINAL = ("completed", "expired", "failed", "cancelled")

_COLS = ("id, provider_id, input_file_id, output_file_id, error_file_id, endpoint, status, "
         "total, completed, failed, reserved, config, collected, created_at, updated_at, intent")
#: BatchRecord's fields of the same names
_NAMES = [c.strip() for c in _COLS.split(",")]


@dataclass(frozen=True)
class BatchRecord:
    """One recorded batch (``id`` is ours, ``provider_id`` the provider's)."""

    id: int
    provider_id: str | None
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    endpoint: str
    status: str
    total: int
    completed: int
    failed: int
    reserved: float
    config: dict
    collected: bool
    created_at: float
    updated_at: float
    source: str = ""
    #: names the input file and batch metadata (recorded first)
    intent: str | None = None

    @property
    def open(self) -> bool:
        """Not yet collected (its items must not be put in another batch)."""
        return not self.collected


def _record(row: tuple[Any, ...], source: str) -> BatchRecord:
    fields = dict(zip(_NAMES, row, strict=True))
    fields["config"] = json.loads(fields["config"] or "{}")
    fields["collected"] = bool(fields["collected"])
    return BatchRecord(**fields, source=source)


class BatchLog:
    """The batches and batch_items tables of one label store."""

    def __init__(self, store: LabelStore):
        self.store = store
        self.conn = store.conn

    def create(self, judge: str, endpoint: str, config: dict,
               items: Sequence[tuple[str, str, str, int]], reserved: float = 0.0,
               intent: str | None = None) -> int:
        """Record a batch about to be uploaded with its (custom_id, qid, docid, repeat) items
        and its intent (the name its file and batch will carry); returns our id."""
        now = time.time()

        with self.store.db.transaction():
            source = self.store.db.source_id("llm", judge)
            cur = self.conn.execute(
                "INSERT INTO batches (endpoint, source, status, total, reserved, config, "
                "created_at, updated_at, intent) VALUES (?, ?, 'uploading', ?, ?, ?, ?, ?, ?) "
                "RETURNING id",
                (endpoint, source, len(items), reserved, json.dumps(config, sort_keys=True),
                 now, now, intent))
            bid = int(cur.fetchone()[0])
            self.conn.executemany("INSERT OR IGNORE INTO batch_items VALUES (?, ?, ?, ?, ?)",
                                  ((bid, *it) for it in items))
        return bid

    def update(self, bid: int, **fields: Any) -> None:
        """Set provider ids, status or counts of a recorded batch (committed at once)."""
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.conn.execute(f"UPDATE batches SET {cols}, updated_at = ? WHERE id = ?",
                          (*fields.values(), time.time(), bid))

    def collected(self, bid: int, events: Sequence[LabelEvent],
                  spend: tuple[str, str, int, int, int, float] | None = None) -> None:
        """Append a batch's events, mark it collected and record its spend (judge, endpoint,
        calls, tokens in, tokens out, cost), in one transaction."""
        now = time.time()
        # add_events joins it
        with self.store.db.transaction():
            statements: list[tuple[str, tuple[object, ...]]] = [("UPDATE batches SET collected = 1, updated_at = ? WHERE id = ?",
                           (now, bid))]
            if spend is not None:
                judge, endpoint, *counts = spend
                statements.append((
                    "INSERT INTO spend (source, endpoint, started_at, updated_at, calls, "
                    "tokens_in, tokens_out, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (self.store.db.source_id("llm", judge), endpoint, now, now, *counts)))
            self.store.add_events(events, commit_with=statements)

    def batches(self, judge: str | None = None, *, open_only: bool = False) -> list[BatchRecord]:
        """Recorded batches (of one judge), oldest first."""
        where, args = [], []
        if judge is not None:
            where.append("s.name = ?")
            args.append(judge)
        if open_only:
            where.append("b.collected = 0")
        return self._select(where, args)

    def get(self, bid: int) -> BatchRecord:
        """One recorded batch, by our id."""
        found = self._select(["b.id = ?"], [bid])
        if not found:
            raise KeyError(f"no batch {bid} is recorded in {self.store.path}")
        return found[0]

    def _select(self, where: list[str], args: list) -> list[BatchRecord]:
        sql = (f"SELECT {', '.join('b.' + c for c in _NAMES)}, s.name "
               "FROM batches b JOIN sources s ON s.id = b.source")
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [_record(r[:-1], r[-1]) for r in self.conn.execute(sql + " ORDER BY b.id", args)]

    def items(self, bid: int) -> list[tuple[str, str, str, int]]:
        """(custom_id, qid, docid, repeat) of a batch."""
        return self.conn.execute("SELECT custom_id, qid, docid, sample FROM batch_items "
                                 "WHERE batch = ?", (bid,)).fetchall()

    def pending(self, judge: str) -> set[tuple[str, str, int]]:
        """(qid, docid, repeat) held by this judge's batches not yet collected."""
        return {tuple(r) for r in self.conn.execute(
            "SELECT i.qid, i.docid, i.sample FROM batch_items i JOIN batches b ON b.id = i.batch "
            "JOIN sources s ON s.id = b.source WHERE b.collected = 0 AND s.name = ?", (judge,))}
