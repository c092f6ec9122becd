"""What every part of ``LabelStore`` works on: the store's backend and the name it goes by."""

from __future__ import annotations

from pathlib import Path

from reljudge.store.backend import Backend, Connection


class StorePart:
    """The base of ``LabelStore``'s parts (events, texts, derived sources, samples, spend,
    claims, DataFrames): ``db``, the backend every write goes through (``db.transaction()``),
    its connection ``conn`` for reads, and ``path``, the store as messages name it."""

    db: Backend
    #: the SQLite file, or the PostgreSQL URL with its password masked
    path: Path | str

    @property
    def conn(self) -> Connection:
        """The backend's connection: SQLite's, or ``store.postgres.PgConnection`` (reads;
        writes go through ``self.db.transaction()``)."""
        return self.db.conn
