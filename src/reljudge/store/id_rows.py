"""The store's grades by their ids as one int64 array, read two integers a row.

A read of every standing grade (150k rows on the LLMJudge store) spends most of its time
making a Python tuple of six integers a row. Two integers hold the same: the source, query
and passage ids in one (mixed radix over the largest ids), the event id, sample and grade in
the other. A store whose ids, samples or grades do not fit is read six integers a row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the (source, query id, passage id, sample, event id, grade) columns of events ``e``
COLUMNS = "e.source, e.q, e.d, e.sample, e.id, e.grade"
SAMPLES, GRADES = 1 << 10, 1 << 6  # what the second integer holds of each: 0 .. n - 1
_EVENTS = 1 << 47  # event ids below this: id * SAMPLES * GRADES stays below 2 ** 63


def id_rows(conn, sql: str, args: Sequence = ()) -> np.ndarray:
    """The rows (source, query id, passage id, sample, event id, grade) of ``sql``, a
    ``SELECT {COLUMNS} FROM events e ...``, as an (n, 6) int64 array in its order."""
    spans = conn.execute(" UNION ALL ".join(f"SELECT min(id), max(id) FROM {table}" for table
                                            in ("sources", "queries", "passages"))).fetchall()
    sources, queries, passages = ((high or 0) + 1 for _, high in spans)
    if min(low or 0 for low, _ in spans) >= 0 and sources * queries * passages < 1 << 62:
        pair = f"(e.source * {queries} + e.q) * {passages} + e.d"
        rest = (f"CASE WHEN e.id < {_EVENTS} AND e.sample BETWEEN 0 AND {SAMPLES - 1} AND "
                f"e.grade BETWEEN 0 AND {GRADES - 1} THEN (e.id * {SAMPLES} + e.sample) * "
                f"{GRADES} + e.grade ELSE -1 END")
        packed = np.asarray(conn.execute(sql.replace(COLUMNS, f"{pair}, {rest}", 1), args)
                            .fetchall(), dtype=np.int64).reshape(-1, 2)
        if not (packed[:, 1] < 0).any():
            ids, rest_ = packed[:, 0], packed[:, 1]
            return np.column_stack([ids // (queries * passages), ids // passages % queries,
                                    ids % passages, rest_ // GRADES % SAMPLES,
                                    rest_ // (SAMPLES * GRADES), rest_ % GRADES])
    return np.asarray(conn.execute(sql, args).fetchall(), dtype=np.int64).reshape(-1, 6)
