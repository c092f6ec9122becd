"""One SQLite connection to a label store: the settings it is opened with, the one
``transaction()`` every write goes through, and the id caches a rolled-back write must forget.

Every write of the store (events, texts, samples, the spend ledger, batches, imports, schema
migrations) is one ``with db.transaction():`` block: BEGIN IMMEDIATE, then COMMIT, or on any
exception ROLLBACK and forget every cached id (query, passage and source ids), since a cached
id may name a row the rollback removed. A transaction opened inside another joins it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reljudge.errors import StoreError
from reljudge.labels import SOURCE_KINDS


class Database:
    """The store's connection: ``transaction()``, ``execute``, ``executemany``, id interning."""

    def __init__(self, path: Path, timeout: float = 60.0, readonly: bool = False):
        from reljudge.store.schema import SCHEMA_VERSION, current_version, migrate

        self.path = path
        self.backup: Path | None = None  # the file as it was before a migration
        try:
            # one thread at a time, not always the opening one: label_pairs called inside a
            # running event loop (Jupyter) writes from its worker thread while the caller waits
            self.conn = sqlite3.connect(path, timeout=timeout, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            old = current_version(self.conn)
            if readonly and old < SCHEMA_VERSION:
                raise StoreError(
                    f"{path}: the label store has schema version {old}, this reljudge reads "
                    f"version {SCHEMA_VERSION}; a command that only reads never upgrades it: "
                    f"run `reljudge labels upgrade --store {path}` once (the file as it is "
                    "now is kept beside it)")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode = WAL")
                if 0 < old < SCHEMA_VERSION:
                    self.backup = self._copy_aside(old)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA cache_size = -262144")  # 256 MB: fast bulk inserts
            self._ids: dict[str, dict[str, int]] = {"queries": {}, "passages": {}}
            self._sources: dict[tuple[str, str], int] = {}
            self.migrated_from = migrate(self)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: cannot open the label store: {e}") from None

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def _copy_aside(self, version: int) -> Path:
        """A consistent copy of the store as it is (SQLite's backup), before a migration:
        ``NAME.vVERSION.bak`` (``.bak2``, ... when that exists)."""
        target = self.path.with_name(f"{self.path.name}.v{version}.bak")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.v{version}.bak{n}")
        copy = sqlite3.connect(target)
        try:
            self.conn.backup(copy)
        finally:
            copy.close()
        return target

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; on an exception ROLLBACK, forget the cached ids and
        re-raise. Inside a transaction already open, the block joins it."""
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            try:
                self.conn.execute("ROLLBACK")
            finally:
                self.forget()
            raise

    # -- the dialect's part of migrations (``schema.migrate``) ------------------------------
    def version(self) -> int:
        """The schema version of the store (0: empty)."""
        from reljudge.store.schema import current_version

        return current_version(self.conn)

    def run_ddl(self, script: str) -> None:
        """Run a migration script's statements (inside the migration's transaction)."""
        from reljudge.store.schema import _run

        _run(self.conn, script)

    def lock(self, name: str) -> None:
        """Serialise the rest of this transaction with other processes doing ``name``:
        nothing to do on SQLite, whose write transactions (BEGIN IMMEDIATE) already are."""

    def ids_taken(self, table: str, column: str) -> None:
        """Rows were written with their ids given (``labels copy``): later rows must get
        new ones. SQLite's next row id is always past the largest: nothing to do."""

    def forget(self) -> None:
        """Drop the id caches (they may hold ids of rolled-back rows)."""
        for cache in self._ids.values():
            cache.clear()
        self._sources.clear()

    def execute(self, sql: str, args: Sequence[Any] | dict = ()) -> sqlite3.Cursor:
        """One statement (committed at once outside a transaction)."""
        return self.conn.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        """One statement over many rows."""
        return self.conn.executemany(sql, rows)

    # -- ids ---------------------------------------------------------------------------------
    def intern(self, table: str, column: str, keys: Iterable[str]) -> dict[str, int]:
        """{key: row id} of a queries/passages column, inserting the keys it lacks (call it
        inside a transaction)."""
        cache = self._ids[table]
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

    def source_id(self, kind: str, name: str) -> int:
        """The id of a label source, inserting it if new (call it inside a transaction)."""
        key = (kind, name)
        if key not in self._sources:
            if kind not in SOURCE_KINDS:
                raise StoreError(f"source kind must be one of {', '.join(SOURCE_KINDS)}, "
                                 f"found {kind!r}")
            self.conn.execute("INSERT OR IGNORE INTO sources (kind, name) VALUES (?, ?)", key)
            self._sources[key] = self.conn.execute(
                "SELECT id FROM sources WHERE kind = ? AND name = ?", key).fetchone()[0]
        return self._sources[key]

    def select_in(self, sql: str, column: str, keys: list[str]) -> list[tuple]:
        """The rows of ``sql WHERE column IN keys``, in chunks SQLite accepts."""
        rows: list[tuple] = []
        for i in range(0, len(keys), 900):
            part = keys[i:i + 900]
            rows += self.conn.execute(f"{sql} WHERE {column} IN ({','.join('?' * len(part))})",
                                      part).fetchall()
        return rows
