"""The two store backends for parametrised tests: a SQLite file, or a fresh schema of a real
PostgreSQL server (tests/pg.py). ``store_location(request, tmp_path)`` gives what
``LabelStore`` opens for the backend the test is parametrised with (``BACKENDS``)."""

from __future__ import annotations

import atexit
import itertools
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

BACKENDS = ["sqlite", "postgresql"]
_schemas = itertools.count()
_databases: dict[int, str] = {}

def store_location(request, tmp_path, name: str = "labels", backend: str | None = None):
    """A new, empty store location for ``backend`` (default ``request.param``): a SQLite
    path, or a PostgreSQL URL naming a schema no other test uses."""
    if (backend or request.param) == "sqlite":
        return tmp_path / f"{name}.sqlite"
    return pg_url(request.getfixturevalue("pg_server"), name)


def pg_url(server, name: str = "labels") -> str:
    """A new, empty PostgreSQL store on the test ``server``: a schema no other test uses."""
    base = _databases.get(id(server))
    if base is None:
        base = _databases[id(server)] = server.database("stores")
    return f"{base}?schema=t{next(_schemas)}_{name}"

_empty: list[Path] = []


def empty_sqlite(path: Path) -> Path:
    """``path`` made a new, empty SQLite label store, a copy of one made once per process:
    making a store runs its schema and syncs the file (some 70 ms of waiting each, on this
    machine; the copy takes 4)."""
    from reljudge.store import LabelStore

    if not _empty:
        folder = tempfile.mkdtemp(prefix="reljudge-empty-store-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        LabelStore(Path(folder) / "empty.sqlite").close()
        _empty.append(Path(folder) / "empty.sqlite")
    shutil.copyfile(_empty[0], path)
    return path


def empty_store(request, tmp_path):
    """``store_location``'s store for the test's backend: an empty SQLite store copied there
    (``empty_sqlite``), or the URL of a new schema (the store made when first opened)."""
    location = store_location(request, tmp_path)
    return empty_sqlite(location) if isinstance(location, Path) else location


def integrity_errors() -> tuple[type[BaseException], ...]:
    """What each backend raises when a row breaks a constraint."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.IntegrityError)

backend = pytest.mark.parametrize  # (readability at use sites is plain pytest)
