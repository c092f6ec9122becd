"""``LabelStore``: every label kept, with where it came from, in a SQLite file or a schema of
a PostgreSQL database.

Appends only: a correction is a new event. Each write is one transaction
(``Backend.transaction``), so a killed process leaves the whole batch or none of it; WAL mode
and a busy timeout (SQLite), or the server (PostgreSQL), let several processes append at once.
``LabelStore`` puts together the store's parts, each a ``StorePart`` over one backend
(``sqlite`` or ``postgres``): the event log (``events``), texts, derived sources, samples, the
spend ledger, claims of concurrent labellers, DataFrame views (``dataframes``) and probes of
a judge, apart from every label (``probes``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType

from reljudge.store.backend import Backend
from reljudge.store.claims import Claims
from reljudge.store.dataframes import Frames
from reljudge.store.derived_sources import DerivedSources
from reljudge.store.events import EventLog, Outcome, SourceStats
from reljudge.store.probes import Probes
from reljudge.store.samples import Samples
from reljudge.store.spend import Spend
from reljudge.store.sqlite import check_location
from reljudge.store.texts import Texts

__all__ = ["LabelStore", "Outcome", "SourceStats"]

_log = logging.getLogger(__name__)


class LabelStore(Frames, EventLog, Texts, DerivedSources, Samples, Spend, Claims, Probes):
    """One label store (SQLite or PostgreSQL): queries, passages, sources and append-only
    label events."""

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
            from reljudge.store.postgres import PostgresBackend, locate

            location = locate(str(path), schema)
            self.path = location.shown
            self.db = PostgresBackend(location, timeout, readonly=readonly, create=create)
        else:
            self.db = self._open_file(Path(path), timeout, create=create, readonly=readonly)
            self.path = self.db.path
        self.migrated_from = self.db.migrated_from
        self.backup = self.db.backup

    @staticmethod
    def _open_file(path: Path, timeout: float, *, create: bool, readonly: bool) -> Backend:
        """The SQLite store at ``path``; a line logged when it was upgraded."""
        from reljudge.store.schema import SCHEMA_VERSION
        from reljudge.store.sqlite import SQLiteBackend

        check_location(path, create=create, readonly=readonly)
        db = SQLiteBackend(path, timeout, readonly=readonly)
        if db.backup is not None:
            _log.warning(f"reljudge: {path}: label store upgraded from schema "
                         f"{db.migrated_from} to {SCHEMA_VERSION}; the file as it was is "
                         f"kept as {db.backup}")
        return db

    def __repr__(self) -> str:
        backend = "sqlite" if isinstance(self.path, Path) else "postgresql"
        return f"LabelStore({str(self.path)!r}, backend={backend!r})"

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
