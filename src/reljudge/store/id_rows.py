"""The store's grades by their ids as one int64 array, read a column at a time.

A read of every standing grade (150k rows on the LLMJudge store) spent most of its time
making a Python tuple of six integers a row. Each column comes instead as one text of its
values joined by commas (``group_concat``; PostgreSQL's ``string_agg``), which numpy parses:
the six aggregates of one statement step through the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reljudge.store.backend import Connection

#: the (source, query id, passage id, sample, event id, grade) columns of events ``e``
COLUMNS = "e.source, e.q, e.d, e.sample, e.id, e.grade"


def id_rows(conn: Connection, sql: str, args: Sequence = ()) -> np.ndarray:
    """The rows (source, query id, passage id, sample, event id, grade) of ``sql``, a
    ``SELECT {COLUMNS} FROM events e ...`` whose rows have no NULL in them, as an (n, 6)
    int64 array, in no order."""
    joined = ", ".join(f"group_concat({c})" for c in COLUMNS.split(", "))
    texts = conn.execute(sql.replace(COLUMNS, joined, 1), args).fetchone()
    try:
        columns = [np.fromstring(t or "", dtype=np.int64, sep=",") for t in texts]
    # a value that is not a whole number (a grade of 2.5 written by hand)
    except ValueError:
        columns = []
    if columns and len({len(c) for c in columns}) == 1:
        return np.column_stack(columns)
    return np.asarray(conn.execute(sql, args).fetchall(), dtype=np.int64).reshape(-1, 6)
