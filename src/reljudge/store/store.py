"""``LabelStore``: every label kept, with where it came from, in one SQLite file.

Appends only: a correction is a new event. Each write is one transaction
(``Database.transaction``), so a killed process leaves either the whole batch or none of it;
WAL mode and a busy timeout let several processes append at once. The store's ideas live in
their own modules, which ``LabelStore`` puts together: the event log (``events``), texts
(``texts``), derived sources (``derived``), samples (``samples``), the spend ledger
(``spend``), claims of concurrent labellers (``claims``) and DataFrame views
(``dataframes``), over one connection (``connection``).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from reljudge.errors import StoreError
from reljudge.store.claims import Claims
from reljudge.store.connection import Database
from reljudge.store.dataframes import Frames
from reljudge.store.derived import Derived
from reljudge.store.events import EventLog, Outcome, SourceStats
from reljudge.store.samples import Samples
from reljudge.store.spend import Spend
from reljudge.store.texts import Texts

__all__ = ["LabelStore", "Outcome", "SourceStats"]

_log = logging.getLogger(__name__)


class LabelStore(EventLog, Texts, Derived, Samples, Spend, Claims, Frames):
    """One SQLite label store: queries, passages, sources and append-only label events."""

    def __init__(self, path: str | Path, *, timeout: float = 60.0, create: bool = True,
                 readonly: bool = False, schema: str | None = None):
        """Open (``create``: or create) the store at ``path``: a SQLite file, or a PostgreSQL
        URL (``postgresql://USER@HOST:PORT/DB``, its ``schema`` from ``schema`` or
        ``?schema=``, default ``reljudge``: see ``store.postgres``). A store of an older
        schema is upgraded in place, a SQLite file as it was kept beside it (``self.backup``)
        and a line logged; ``readonly``, for commands that only read, refuses an older schema
        instead and never writes."""
        from reljudge.store.postgres import is_url

        if is_url(path):
            from reljudge.store.postgres import PgDatabase, locate

            location = locate(str(path), schema)
            self.path = location.shown
            self.db = PgDatabase(location, timeout, readonly=readonly, create=create)
            self.migrated_from, self.backup = self.db.migrated_from, None
            return
        self.path = Path(path)
        if not create and not self.path.is_file():  # a typo must not become an empty store
            what = "is a directory" if self.path.is_dir() else "no such label store"
            raise StoreError(f"{self.path}: {what} (label, labels import and run create one)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = Database(self.path, timeout, readonly=readonly)
        self.migrated_from = self.db.migrated_from
        self.backup = self.db.backup
        if self.backup is not None:
            from reljudge.store.schema import SCHEMA_VERSION

            _log.warning(f"reljudge: {self.path}: label store upgraded from schema "
                         f"{self.migrated_from} to {SCHEMA_VERSION}; the file as it was is "
                         f"kept as {self.backup}")

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection: SQLite's, or ``store.postgres.PgConnection`` (reads; writes go
        through ``self.db.transaction()``)."""
        return self.db.conn

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
