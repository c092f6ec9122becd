"""``reljudge labels copy SRC DST``: a whole store from SQLite to PostgreSQL and back.

Every table is copied row for row, ids kept: the same events (with their times, provenance,
failures and undos), texts and text history, samples and team assignments, derivations,
imports, spend ledger, Batch API records and probes; claims (leases of running processes) are
not. The copy is one transaction of the destination: all of it or none. Copying again adds
what the source gained since (append-only tables) and brings rows that change in place
(texts, the spend ledger, batch statuses) up to date; a destination whose events are not the
source's is refused, naming the first event that differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from reljudge.errors import StoreError
from reljudge.store.store import LabelStore
from reljudge.tables import ordinal

#: (table, key columns, rows that change in place): parents before children
TABLES = (
    ("queries", ("id",), True), ("passages", ("id",), True), ("sources", ("id",), False),
    ("imports", ("id",), False), ("samples", ("id",), False),
    ("sample_items", ("sample", "q", "d"), False), ("derivations", ("id",), False),
    ("spend", ("id",), True), ("batches", ("id",), True),
    ("batch_items", ("batch", "custom_id", "qid", "docid", "sample"), False),
    ("events", ("id",), False), ("text_history", ("rowid",), False), ("meta", ("key",), True),
    ("probes", ("id",), False), ("probe_events", ("id",), False), ("probe_spend", ("id",), True),
)
_CHUNK = 10_000
#: the columns that tell whether two events are the same one
_SAME = "id, q, d, source, sample, grade, failure, created_at"


@dataclass(frozen=True)
class CopyReport:
    """Rows written per table (0 where the destination had them all already)."""

    source: str
    destination: str
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def copy_store(src: LabelStore, dst: LabelStore) -> CopyReport:
    """Copy ``src`` into ``dst`` (both open; ``dst`` created if new): see the module's text."""
    _check_same_history(src, dst)
    written: dict[str, int] = {}
    try:
        _copy(src, dst, written)
    # a row the destination refuses: the stores diverged
    except _integrity_errors() as e:
        raise StoreError(f"{dst.path} holds rows that conflict with {src.path}'s ({e}); "
                         "nothing was copied: copy into an empty store, or into an earlier "
                         "copy of this one") from None
    return CopyReport(str(src.path), str(dst.path), written)


def _copy(src: LabelStore, dst: LabelStore, written: dict[str, int]) -> None:
    with dst.db.transaction():
        for table, key, mutable in TABLES:
            cols = _columns(src, table)
            if table == "meta":
                rows = [r for r in _rows(src, table, cols) if r[0] != "schema_version"]
            else:
                rows = _rows(src, table, cols)
            marks = ", ".join("?" * len(cols))
            update = [c for c in cols if c not in key]
            conflict = (f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in update)}"
                        if mutable and update else "DO NOTHING")
            sql = (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks}) "
                   f"ON CONFLICT ({', '.join(key)}) {conflict}")
            before = _count(dst, table)
            for i in range(0, len(rows), _CHUNK):
                dst.conn.executemany(sql, rows[i:i + _CHUNK])
            written[table] = _count(dst, table) - before
            if key == ("id",) or key == ("rowid",):
                dst.db.ids_taken(table, key[0])


def _integrity_errors() -> tuple[type[Exception], ...]:
    import sqlite3

    try:
        import psycopg
    except ImportError:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)


def _columns(store: LabelStore, table: str) -> list[str]:
    cols = store.db.columns(table)
    if table == "text_history" and "rowid" not in cols:
        # SQLite's implicit row id: the order of replacement
        cols = ["rowid", *cols]
    return cols


def _rows(store: LabelStore, table: str, cols: list[str]) -> list[tuple]:
    return [tuple(r) for r in store.conn.execute(f"SELECT {', '.join(cols)} FROM {table}")]


def _count(store: LabelStore, table: str) -> int:
    return int(store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _check_same_history(src: LabelStore, dst: LabelStore) -> None:
    """The destination's events must be the source's first ones (a copy made earlier), or
    none: a StoreError names the first that differs."""
    n = _count(dst, "events")
    if n == 0:
        return
    theirs = dst.conn.execute(f"SELECT {_SAME} FROM events ORDER BY id")
    ours = src.conn.execute(f"SELECT {_SAME} FROM events ORDER BY id")
    # dst: a prefix
    for k, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if tuple(a) != tuple(b):
            raise StoreError(f"{dst.path} holds events that are not {src.path}'s (event "
                             f"{a[0]} differs; the {ordinal(k + 1)} of {n}): copy into an empty "
                             "store, or into an earlier copy of this one")
    if n > _count(src, "events"):
        raise StoreError(f"{dst.path} holds {n} events, more than {src.path}: it is not an "
                         "earlier copy of it")
