"""The SQLite backend of a label store: one file, the settings it is opened with (WAL, a busy
timeout, foreign keys), the copy kept aside before a migration, and SQLite's id interning."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from reljudge.errors import StoreError
from reljudge.store import schema
from reljudge.store.backend import Backend

#: SQLite's result code of a full disk (sqlite3 names it from Python 3.11)
SQLITE_FULL = 13


def path_problem(path: Path) -> str | None:
    """What makes ``path`` no store file for any command, said after the path: a folder, or a
    folder above it that is not there (a store never makes folders: a typo there would hide
    the labels in a new, empty store elsewhere); None when there is nothing wrong."""
    if path.is_dir():
        return f"is a folder; give a file path such as {path / 'labels.sqlite'}"
    if not path.parent.is_dir():
        return (f"is in a folder that does not exist ({path.parent}); create it first (a "
                "store never makes folders)")
    return None


def check_location(path: Path, *, create: bool, readonly: bool) -> None:
    """Refuse, in one line, a store path SQLite cannot use as asked: ``path_problem``, a file
    that is not there (unless ``create``; a typo must not become an empty store), or a
    read-only file or folder for a command that writes."""
    problem = path_problem(path)
    if problem is not None:
        raise StoreError(f"{path} {problem}")
    if not path.is_file():
        if not create:
            raise StoreError(f"{path}: no such label store (label, labels import and run "
                             "create one)")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise StoreError(f"cannot create store {path}: folder {path.parent} is read-only")
    elif not readonly and not (os.access(path, os.W_OK)
                               and os.access(path.parent, os.W_OK | os.X_OK)):
        why = "the file" if not os.access(path, os.W_OK) else \
            f"its folder {path.parent} (SQLite writes its -wal and -shm files there)"
        raise StoreError(f"store {path} is read-only: this command writes to it, and {why} "
                         "cannot be written")


def _address(path: Path, readonly: bool) -> str:
    """The URI SQLite opens: the file as ever, or for a command that only reads a file or
    folder it may not write, read-only (``mode=ro``), and ``immutable`` when no -wal file is
    beside it (a WAL reader needs a -shm file it could not make; with no -wal there is no
    write under way whose pages it would miss)."""
    uri = path.absolute().as_uri()
    if not readonly or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)):
        return uri
    wal = Path(f"{path}-wal")
    return f"{uri}?mode=ro" + ("" if wal.exists() else "&immutable=1")


class SQLiteBackend(Backend):
    """A label store in one SQLite file (``store.backend.Backend``)."""

    path: Path
    write_errors = (sqlite3.OperationalError,)

    def __init__(self, path: Path, timeout: float = 60.0, readonly: bool = False):
        super().__init__()
        self.path = path
        self.backup = None
        made = not path.exists()
        try:
            # one thread at a time, not always the opening one: label_pairs called inside a
            # running event loop (Jupyter) writes from its worker thread while the caller waits
            self.sqlite = sqlite3.connect(_address(path, readonly), timeout=timeout,
                                          isolation_level=None, check_same_thread=False,
                                          uri=True)
            self.conn = self.sqlite
            self.sqlite.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            old, current = self.version(), schema.SCHEMA_VERSION
            # an empty file: no store to read, nor to upgrade
            if readonly and old == 0:
                raise StoreError(f"{path}: no label store in it (an empty file of "
                                 f"{path.stat().st_size} bytes, no tables); label, labels "
                                 "import and run create one")
            if readonly and old < current:
                raise StoreError(
                    f"{path}: the label store has schema version {old}, this reljudge reads "
                    f"version {current}; a command that only reads never upgrades it: "
                    f"run `reljudge labels upgrade --store {path}` once (the file as it is "
                    "now is kept beside it)")
            if not readonly:
                self.sqlite.execute("PRAGMA journal_mode = WAL")
                if 0 < old < current:
                    self.backup = self._copy_aside(old)
            self.sqlite.execute("PRAGMA foreign_keys = ON")
            self.sqlite.execute("PRAGMA synchronous = NORMAL")
            # 256 MB: fast bulk inserts
            self.sqlite.execute("PRAGMA cache_size = -262144")
            self.migrated_from = schema.migrate(self)
        except sqlite3.DatabaseError as e:
            # a store half made (a full disk) is no store: nothing is left behind
            if made:
                self._remove()
            raise StoreError(f"{path}: cannot {'create' if made else 'open'} the label store: "
                             f"{e}") from None

    def _remove(self) -> None:
        """Close and delete the store's file and SQLite's files beside it."""
        if hasattr(self, "sqlite"):
            self.sqlite.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def no_room(self, error: BaseException) -> bool:
        """Whether ``error`` is SQLite's full disk (SQLITE_FULL)."""
        if not isinstance(error, sqlite3.OperationalError):
            return False
        # Python 3.11 and later
        code = getattr(error, "sqlite_errorcode", None)
        return code == SQLITE_FULL if code is not None else "disk is full" in str(error)

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
            self.sqlite.backup(copy)
        finally:
            copy.close()
        return target

    # -- the dialect's part of migrations (``schema.migrate``) ------------------------------
    def version(self) -> int:
        """The schema version of the store (0: empty)."""
        has_meta = self.sqlite.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        if not has_meta:
            tables = self.sqlite.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
            if tables.fetchone()[0]:
                raise StoreError("this SQLite file is not a reljudge label store (no meta table)")
            return 0
        row = self.sqlite.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def run_ddl(self, script: str) -> None:
        """Run a migration script's statements (inside the migration's transaction)."""
        for statement in script.split(";"):
            if statement.strip():
                self.sqlite.execute(statement)

    def lock(self, name: str) -> None:
        """Nothing to do: SQLite's write transactions (BEGIN IMMEDIATE) already run one at a
        time."""

    def ids_taken(self, table: str, column: str) -> None:
        """Nothing to do: SQLite's next row id is always past the largest."""

    # -- ids ---------------------------------------------------------------------------------
    def intern(self, table: str, column: str, keys: Iterable[str]) -> dict[str, int]:
        """{key: row id} of a queries/passages column, inserting the keys it lacks (call it
        inside a transaction)."""
        cache = self._ids[table]
        missing = [k for k in dict.fromkeys(keys) if k not in cache]
        if missing:
            self.sqlite.executemany(f"INSERT OR IGNORE INTO {table} ({column}) VALUES (?)",
                                    ((k,) for k in missing))
            # one scan beats thousands of IN (...) look-ups
            if len(missing) > 20_000:
                cache.update(self.sqlite.execute(f"SELECT {column}, id FROM {table}"))
                return cache
            for i in range(0, len(missing), 900):
                part = missing[i:i + 900]
                marks = ",".join("?" * len(part))
                cache.update(self.sqlite.execute(
                    f"SELECT {column}, id FROM {table} WHERE {column} IN ({marks})", part))
        return cache
