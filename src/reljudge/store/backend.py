"""The one interface of a label store's database, which both backends implement: SQLite
(``store.sqlite``) and PostgreSQL (``store.postgres``).

Every write of the store (events, texts, samples, the spend ledger, batches, imports, schema
migrations) is one ``with db.transaction():`` block: BEGIN IMMEDIATE, then COMMIT, or on any
exception ROLLBACK and forget every cached id (query, passage and source ids), since a cached
id may name a row the rollback removed. A transaction opened inside another joins it.

The store's modules write one portable dialect: ``?`` placeholders, ``INSERT OR IGNORE``,
``ON CONFLICT ... DO UPDATE``, ``RETURNING``. A backend's connection speaks it (SQLite's own
does; ``store.postgres.PgConnection`` translates it).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from reljudge.errors import StoreError
from reljudge.labels import SOURCE_KINDS
from reljudge.store.names import model_of


class Cursor(Protocol):
    """What the store reads from a statement it ran (sqlite3's and psycopg's cursors)."""

    @property
    def rowcount(self) -> int:
        """Rows an UPDATE or DELETE changed."""
        ...

    @property
    def description(self) -> Sequence[Sequence[Any]] | None:
        """One entry per column of a SELECT, its name first."""
        ...

    # A row is a tuple of the column values as the database typed them: the DB-API's rows
    # are untyped (sqlite3's stubs say Any), and so are they here.
    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The rows left."""
        ...

    def __iter__(self) -> Iterator[Any]:
        ...


class Connection(Protocol):
    """The slice of a DB-API connection the store uses (``sqlite3.Connection`` is one)."""

    def execute(self, sql: str, args: Sequence[Any] = ..., /) -> Cursor:
        """Run one statement."""
        ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Cursor:
        """Run one statement over many rows."""
        ...

    @property
    def in_transaction(self) -> bool:
        """True between BEGIN and COMMIT / ROLLBACK."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


class Backend(ABC):
    """A label store's database: ``transaction()``, ``execute``, ``executemany``, id interning,
    chunked look-ups, and the dialect's part of schema migrations (``store.schema.migrate``)."""

    conn: Connection
    #: what messages name: the SQLite file, or the URL (password masked)
    path: Path | str
    #: the file as it was before a migration (SQLite only)
    backup: Path | None
    #: the schema version found when opened (0: a new store)
    migrated_from: int
    #: the driver's errors of a failed write (a full disk, a lock held too long) that
    #: ``transaction`` reports as a StoreError naming the store
    write_errors: tuple[type[Exception], ...] = ()

    def __init__(self) -> None:
        self._ids: dict[str, dict[str, int]] = {"queries": {}, "passages": {}}
        self._sources: dict[tuple[str, str], int] = {}

    # -- what each backend does its own way ---------------------------------------------------
    @abstractmethod
    def version(self) -> int:
        """The schema version of the store (0: empty)."""

    @abstractmethod
    def run_ddl(self, script: str) -> None:
        """Run a migration script's statements (inside the migration's transaction)."""

    @abstractmethod
    def lock(self, name: str) -> None:
        """Serialise the rest of this transaction with other processes doing ``name``."""

    @abstractmethod
    def ids_taken(self, table: str, column: str) -> None:
        """Rows were written with their ids given (``labels copy``): later rows must get
        new ones."""

    @abstractmethod
    def intern(self, table: str, column: str, keys: Iterable[str]) -> dict[str, int]:
        """{key: row id} of a queries/passages column, inserting the keys it lacks (call it
        inside a transaction)."""

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # -- the same on both ---------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN IMMEDIATE ... COMMIT; on an exception ROLLBACK, forget the cached ids and
        re-raise (a driver's ``write_errors`` as a StoreError). Inside a transaction already
        open, the block joins it."""
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as error:
            # the first error is the one that says why
            with contextlib.suppress(Exception):
                # SQLite ends it itself on a full disk
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
            self.forget()
            if self.no_room(error):
                raise StoreError(f"{self.path}: cannot be written, the disk is full "
                                 "(nothing of this write was kept)") from None
            if isinstance(error, self.write_errors):
                raise StoreError(f"{self.path}: the write failed ({error}); nothing of it was "
                                 "kept") from error
            raise

    def no_room(self, error: BaseException) -> bool:
        """Whether ``error`` says the database's disk is full."""
        return False

    def forget(self) -> None:
        """Drop the id caches (they may hold ids of rolled-back rows)."""
        for cache in self._ids.values():
            cache.clear()
        self._sources.clear()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        """One statement (committed at once outside a transaction)."""
        return self.conn.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        """One statement over many rows."""
        return self.conn.executemany(sql, rows)

    def columns(self, table: str) -> list[str]:
        """The column names of ``table``, in order."""
        return [c[0] for c in self.conn.execute(f"SELECT * FROM {table} LIMIT 0").description
                or ()]

    def source_id(self, kind: str, name: str) -> int:
        """The id of a label source, inserting it if new (call it inside a transaction); a
        new source may not take the name, or the model name, of a source of another kind
        (every command names a source by its name alone: ``names.resolve_source``)."""
        key = (kind, name)
        if key not in self._sources:
            if kind not in SOURCE_KINDS:
                raise StoreError(f"source kind must be one of {', '.join(SOURCE_KINDS)}, "
                                 f"found {kind!r}")
            found = self.conn.execute("SELECT id FROM sources WHERE kind = ? AND name = ?",
                                      key).fetchone()
            if found is None:
                # PostgreSQL: one process adds a source at a time
                self.lock("sources")
                self.check_new_source(kind, name)
                self.conn.execute("INSERT OR IGNORE INTO sources (kind, name) VALUES (?, ?)",
                                  key)
                found = self.conn.execute("SELECT id FROM sources WHERE kind = ? AND "
                                          "name = ?", key).fetchone()
            self._sources[key] = found[0]
        return self._sources[key]

    def check_new_source(self, kind: str, name: str) -> None:
        """Refuse a new source of ``kind`` named as a source of another kind is, or as its
        model: commands name a source by its name alone, and would read the wrong one."""
        for other_kind, other in self.conn.execute(
                "SELECT kind, name FROM sources WHERE kind != ?", (kind,)).fetchall():
            if name in (other, model_of(other)):
                raise StoreError(f"{self.path}: {name!r} names the {other_kind} source "
                                 f"{other!r}; give this {kind} source another name")

    def select_in(self, sql: str, column: str, keys: Sequence[str] | Sequence[int]
                  ) -> list[tuple[Any, ...]]:
        """The rows of ``sql WHERE column IN keys``, in chunks SQLite accepts."""
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(keys), 900):
            part = keys[i:i + 900]
            rows += self.conn.execute(f"{sql} WHERE {column} IN ({','.join('?' * len(part))})",
                                      part).fetchall()
        return rows
