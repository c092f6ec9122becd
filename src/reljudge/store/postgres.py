"""A label store on PostgreSQL: the same store, for a team (``--store postgresql://...``).

``LabelStore("postgresql://USER@HOST:PORT/DB?schema=NAME")`` opens a store kept in one schema
of a database (default ``reljudge``). ``PostgresBackend`` implements ``store.backend.Backend``;
everything above it is one code path for both engines, its portable SQL spoken to psycopg 3 by
``PgConnection`` (``pg_sql``). The schema is the same migrations, column types translated
(``pg_ddl``), run by writing commands only, one process at a time (an advisory lock).

We never write the password: libpq reads it from the URL, ``PGPASSWORD``, ``~/.pgpass`` or a
service file; every text we show names the store by ``masked(url)``. Without ``connect_timeout`` an unanswered connection is given up on
after ``CONNECT_TIMEOUT`` seconds (libpq would wait for ever).
"""

from __future__ import annotations

import re
import urllib.parse
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeGuard

from reljudge.errors import ConfigError, StoreError
from reljudge.store import schema
from reljudge.store.backend import Backend
from reljudge.store.pg_references import use_statement_checks

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

SCHEMES = ("postgresql://", "postgres://")
DEFAULT_SCHEMA = "reljudge"
#: seconds to wait for a server to answer a new connection (libpq's default is for ever)
CONNECT_TIMEOUT = 10
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def is_url(spec: object) -> TypeGuard[str]:
    """True when a store is named by a PostgreSQL URL rather than a SQLite file."""
    return isinstance(spec, str) and spec.startswith(SCHEMES)


def one_line(message: str) -> str:
    """A server's message (libpq's run over several lines) on one line, passwords masked."""
    return " ".join(masked(message).split())


_URL = re.compile(r"postgres(?:ql)?://[^\s'\"]*")
_QUERY_PARAM = re.compile(r"([?&])([^=&#]*)=([^&#]*)")
#: the settings libpq takes a secret in: the password, and the client key's passphrase
_SECRETS = ("password", "sslpassword")
#: libpq's keyword form: password=value, the value bare or in single quotes (\' and '' inside)
_KEYWORD_PASSWORD = re.compile(r"(\b(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.|'')*'|[^\s&'\"]*)")


def masked(text: str) -> str:
    """``text`` with every password libpq would read in it replaced by ``***``: a PostgreSQL
    URL's ``user:password@`` and ``?password=`` (its key percent-encoded too), and the
    ``password=`` of a keyword/value connection string (``sslpassword`` too)."""
    return _KEYWORD_PASSWORD.sub(r"\1***", _URL.sub(lambda m: _masked_url(m.group()), text))


def _masked_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    cut = re.search(r"[/?#]", rest)
    netloc, tail = (rest[:cut.start()], rest[cut.start():]) if cut else (rest, "")
    user, at, hosts = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.partition(':')[0]}:***@{hosts}"
    tail = _QUERY_PARAM.sub(lambda m: f"{m[1]}{m[2]}=***"
                            if urllib.parse.unquote(m[2]) in _SECRETS else m[0], tail)
    return f"{scheme}://{netloc}{tail}"


@dataclass(frozen=True)
class Location:
    """Where a PostgreSQL store is: libpq's connection string and the schema."""

    #: the URL without our own ``schema`` parameter (may hold a password)
    conninfo: str
    schema: str
    #: the URL as we show it: password masked, schema named
    shown: str

    def __str__(self) -> str:
        return self.shown


def locate(url: str, schema: str | None = None) -> Location:
    """The location of ``url``; ``schema`` (``--store-schema``) wins over ``?schema=``."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in query if k == "schema"]
    schema = schema or (given[-1] if given else DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigError(f"store schema {schema!r}: a schema name is 1-63 lower-case letters, "
                          "digits and underscores, not starting with a digit")
    rest = [(k, v) for k, v in query if k != "schema"]
    conninfo = _unsplit(parts, urllib.parse.urlencode(rest))
    shown = masked(_unsplit(parts, urllib.parse.urlencode([*rest, ("schema", schema)])))
    return Location(conninfo, schema, shown)


def _unsplit(parts: urllib.parse.SplitResult, query: str) -> str:
    """The URL of these parts with this query, ``//`` kept when it names no host (libpq's
    local socket form ``postgresql:///db``, which ``urlunsplit`` shortens to ``:/db``)."""
    url = f"{parts.scheme}://{parts.netloc}{parts.path}"
    return url + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment
                                                    else "")


def _psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise ConfigError("a PostgreSQL label store needs the 'postgres' extra: "
                          "pip install 'reljudge[postgres]'") from None
    return psycopg


# -- SQL: the store's portable dialect, as PostgreSQL reads it -------------------------------
_CACHE: dict[str, str] = {}


def pg_sql(sql: str) -> str:
    """A statement of the store's dialect in PostgreSQL's: ``?`` placeholders to ``%s`` (a
    literal ``%`` doubled), ``INSERT OR IGNORE`` to ``ON CONFLICT DO NOTHING``, ``BEGIN
    IMMEDIATE`` to ``BEGIN``, ``group_concat(X)`` to ``string_agg((X)::text, ',')`` (and
    ``group_concat(X, ?)`` to ``string_agg((X)::text, %s)``). Quoted
    strings are left alone."""
    out = _CACHE.get(sql)
    if out is not None:
        return out
    # odd pieces are quoted literals
    pieces = re.split(r"('(?:[^']|'')*')", sql)
    for k in range(0, len(pieces), 2):
        piece = re.sub(r"\bgroup_concat\(([^(),]*), %s\)", r"string_agg((\1)::text, %s)",
                       pieces[k].replace("%", "%%").replace("?", "%s"))
        pieces[k] = re.sub(r"\bgroup_concat\(([^()]*)\)", r"string_agg((\1)::text, ',')", piece)
    for k in range(1, len(pieces), 2):
        pieces[k] = pieces[k].replace("%", "%%")
    out = "".join(pieces)
    if re.match(r"\s*INSERT OR IGNORE INTO", out, re.I):
        out = re.sub(r"INSERT OR IGNORE INTO", "INSERT INTO", out, count=1, flags=re.I)
        out = out.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    if re.fullmatch(r"\s*BEGIN IMMEDIATE\s*", out, re.I):
        out = "BEGIN"
    _CACHE[sql] = out
    return out


def pg_ddl(statement: str) -> str:
    """A migration statement with SQLite's column types in PostgreSQL's: an ``INTEGER PRIMARY
    KEY`` is an identity column, integers are ``BIGINT``, ``REAL`` is ``DOUBLE PRECISION``
    (PostgreSQL's REAL is 4 bytes), and ``text_history`` gets the ``rowid`` SQLite gives
    every table (its order of replacement)."""
    out = re.sub(r"\bINTEGER PRIMARY KEY\b", "BIGINT GENERATED BY DEFAULT AS IDENTITY "
                 "PRIMARY KEY", statement)
    out = re.sub(r"\bINTEGER\b", "BIGINT", out)
    out = re.sub(r"\bREAL\b", "DOUBLE PRECISION", out)
    if re.match(r"\s*CREATE TABLE text_history \(", out):
        out = out.replace("CREATE TABLE text_history (",
                          "CREATE TABLE text_history (rowid BIGINT GENERATED BY DEFAULT AS "
                          "IDENTITY PRIMARY KEY, ", 1)
    return out


_PLAIN_INSERT = re.compile(r"\s*INSERT INTO (\w+) \(([\w, ]+)\) VALUES \(\?(?:, ?\?)*\)"
                           r"(\s+ON CONFLICT \([\w, ]+\) DO NOTHING)?\s*", re.I)
#: rows from which an INSERT goes as one COPY (one statement: the events' references are
#: checked once, store.pg_references) instead of a statement each
COPY_FROM = 2


#: {type oid: the Python types a COPY sends to it in binary}: BIGINT, DOUBLE PRECISION, TEXT
_BINARY: dict[int | None, set[type]] = {20: {int, type(None)}, 701: {int, float, type(None)},
                                        25: {str, type(None)}}


class PgConnection:
    """``store.backend.Connection`` (the slice of ``sqlite3.Connection`` the store uses) over
    a psycopg connection in autocommit mode (transactions are the store's explicit BEGIN ... COMMIT).

    Fewer statements and less of the client's time, same rows: a BEGIN waits for the
    transaction's first statement (a transaction that does nothing sends nothing); BEGIN,
    COMMIT and ROLLBACK go straight through libpq (psycopg's pipeline that sent a BEGIN with
    the first statement took more of the client's time than a round trip of its own); a
    many-row INSERT (no ``RETURNING``) goes as one ``COPY ... FROM STDIN`` (one ``ON CONFLICT
    (...) DO NOTHING`` through a temporary table: ``COPY`` into it, then one ``INSERT ...
    SELECT``), and a one-row ``executemany`` as a plain statement."""

    def __init__(self, conn: psycopg.Connection[TupleRow], name: str) -> None:
        self._conn = conn
        # the store, as messages name it (password masked)
        self._name = name
        # a BEGIN waiting for the next statement
        self._begin = False
        # {table: {column: type oid}}
        self._types: dict[str, dict[str, int]] = {}

    @contextmanager
    def _server_errors(self) -> Iterator[None]:
        """A server gone or failing mid-command is one StoreError naming the store (constraint
        and programming errors pass through: callers handle them)."""
        psycopg = _psycopg()
        try:
            yield
        except psycopg.OperationalError as e:
            what = ("lost the connection to the PostgreSQL store"
                    if self._conn.broken or self._conn.closed else "the PostgreSQL store failed")
            raise StoreError(f"{self._name}: {what}: {one_line(str(e))}; what was committed "
                             "before is kept: run the command again to go on") from None

    def execute(self, sql: str, args: Sequence[Any] = (), /) -> psycopg.Cursor[TupleRow]:
        """Run one statement; the cursor (iterate it, fetchone, fetchall, rowcount,
        description)."""
        with self._server_errors():
            return self._execute(pg_sql(sql), args)

    def _execute(self, statement: str, args: Sequence[Any]) -> psycopg.Cursor[TupleRow]:
        if statement == "BEGIN":
            self._begin = True
            return self._conn.cursor()
        # nothing was done
        if self._begin and statement in ("COMMIT", "ROLLBACK"):
            self._begin = False
            return self._conn.cursor()
        self._send_begin()
        if statement in ("COMMIT", "ROLLBACK"):
            self._command(statement)
            return self._conn.cursor()
        return self._conn.execute(statement, tuple(args))

    def _command(self, command: str) -> None:
        """BEGIN, COMMIT or ROLLBACK straight through libpq: a third of the client's time of
        a psycopg statement; a failure raised as psycopg raises it (OperationalError when the
        connection is lost)."""
        psycopg = _psycopg()
        # as psycopg's own statements take it
        with self._conn.lock:
            result = self._conn.pgconn.exec_(command.encode())
        if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
            error = psycopg.errors.error_from_result(result, encoding=self._conn.info.encoding)
            raise psycopg.OperationalError(str(error)) if self._conn.broken else error

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /
                    ) -> psycopg.Cursor[TupleRow]:
        """One statement over many rows."""
        given = [tuple(r) for r in rows]
        if len(given) == 1:
            return self.execute(sql, given[0])
        plain = _PLAIN_INSERT.fullmatch(sql) if len(given) >= COPY_FROM else None
        with self._server_errors():
            if plain is not None:
                return self._copy(plain.group(1), plain.group(2), given, plain.group(3))
            self._send_begin()
            cur = self._conn.cursor()
            if given:
                cur.executemany(pg_sql(sql), given)
            return cur

    def _send_begin(self) -> None:
        """Send a pending BEGIN now."""
        if self._begin:
            self._begin = False
            self._command("BEGIN")

    def _copy(self, table: str, columns: str, rows: list[tuple[Any, ...]],
              on_conflict: str | None = None) -> psycopg.Cursor[TupleRow]:
        self._send_begin()
        cur = self._conn.cursor()
        target = table if on_conflict is None else f"reljudge_new_{table}"
        # its columns, none of its constraints; gone at COMMIT
        if on_conflict is not None:
            cur.execute(f"CREATE TEMPORARY TABLE {target} ON COMMIT DROP AS SELECT {columns} "
                        f"FROM {table} WITH NO DATA")
        types = self._binary_types(table, columns, rows)
        binary = " (FORMAT BINARY)" if types else ""
        with cur.copy(f"COPY {target} ({columns}) FROM STDIN{binary}") as copy:
            if types:
                copy.set_types(types)
            for row in rows:
                copy.write_row(row)
        if on_conflict is not None:
            cur.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {target}"
                        f"{on_conflict}; DROP TABLE {target}")
        return cur

    def _binary_types(self, table: str, columns: str, rows: list[tuple[Any, ...]]
                      ) -> list[int] | None:
        """The columns' type oids when each is a BIGINT, DOUBLE PRECISION or TEXT column and
        every value is of the Python type that goes to it in binary (a COPY in binary takes a
        third less of the client's time than in text, and less of the server's); else None:
        the COPY goes in text, as the server reads what it gets (a bool, an int into a
        text column)."""
        types = self._types.get(table)
        if types is None:
            types = self._types[table] = dict(self._conn.execute(
                "SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attnum > 0 AND NOT attisdropped", (table,)).fetchall())
        oids = [types.get(c.strip()) for c in columns.split(",")]
        if any(len(row) != len(oids) for row in rows):
            return None
        if all(oid in _BINARY and set(map(type, values)) <= _BINARY[oid]
               for oid, values in zip(oids, zip(*rows, strict=True), strict=True)):
            return [oid for oid in oids if oid is not None]
        return None

    @property
    def in_transaction(self) -> bool:
        """True between BEGIN and COMMIT / ROLLBACK."""
        from psycopg.pq import TransactionStatus

        return self._begin or self._conn.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def _numeric_loader(psycopg: ModuleType) -> type:
    """PostgreSQL's ``sum`` of integers is NUMERIC; read a whole one as int, any other as
    float, as SQLite returns them (never Decimal)."""
    from psycopg.adapt import Loader

    class NumericLoader(Loader):
        def load(self, data: Any) -> int | float:
            text = bytes(data).decode()
            return int(text) if re.fullmatch(r"-?\d+", text) else float(text)

    return NumericLoader


class PostgresBackend(Backend):
    """A label store in one schema of a PostgreSQL database (``store.backend.Backend``): the
    same transactions and chunked look-ups (inherited), over ``PgConnection``."""

    def __init__(self, location: Location, timeout: float = 60.0, readonly: bool = False,
                 create: bool = True):
        super().__init__()
        psycopg = _psycopg()
        self.location = location
        # what messages name (the password masked)
        self.path = location.shown
        # a migration is one transaction: nothing to keep aside
        self.backup = None
        raw = self._connect(psycopg, timeout)
        raw.adapters.register_loader("numeric", _numeric_loader(psycopg))
        self.conn = PgConnection(raw, self.path)
        try:
            old, current = self.version(), schema.SCHEMA_VERSION
            if old == 0 and not create:
                raise StoreError(f"{self.path}: no label store in schema {location.schema!r} "
                                 "(label, labels import and run create one)")
            if readonly and old < current:
                raise StoreError(
                    f"{self.path}: the label store has schema version {old}, this reljudge "
                    f"reads version {current}; a command that only reads never "
                    f"upgrades it: run `reljudge labels upgrade --store URL` once")
            if old < current:
                # processes creating it at one instant take turns
                with raw.transaction():
                    raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._key("schema"),))
                    raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{location.schema}"')
            raw.execute(f'SET search_path TO "{location.schema}"')
            self.migrated_from = schema.migrate(self)
            if readonly:
                raw.execute("SET default_transaction_read_only = on")
            else:
                use_statement_checks(self)
        except psycopg.Error as e:
            raw.close()
            raise StoreError(f"{self.path}: {one_line(str(e))}") from None
        except BaseException:
            raw.close()
            raise

    def _connect(self, psycopg: ModuleType, timeout: float) -> psycopg.Connection[TupleRow]:
        """The connection: one StoreError line when there is none, a server that never
        answers given up on after CONNECT_TIMEOUT seconds (the URL's ``connect_timeout``, or
        ``PGCONNECT_TIMEOUT``, when given)."""
        given = _given_connect_timeout(psycopg, self.location.conninfo)
        wait = max(1, int(min(timeout, CONNECT_TIMEOUT)))
        try:
            return psycopg.connect(self.location.conninfo, autocommit=True,
                                   **({} if given else {"connect_timeout": wait}))
        except psycopg.errors.ConnectionTimeout:
            raise StoreError(f"{self.path}: cannot connect to the PostgreSQL store: no answer "
                             f"within {given or wait} s; check its host and port, or wait "
                             "longer with ?connect_timeout=SECONDS in the URL") from None
        except psycopg.Error as e:
            raise StoreError(f"{self.path}: cannot connect to the PostgreSQL store: "
                             f"{one_line(str(e))}") from None

    def version(self) -> int:
        """The schema version of the store (0: no ``meta`` table in its schema)."""
        row = self.conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND "
            "table_name = 'meta'", (self.location.schema,)).fetchone()
        if row is None:
            return 0
        row = self.conn.execute(
            f'SELECT value FROM "{self.location.schema}".meta WHERE key = ?',
            ("schema_version",)).fetchone()
        return int(row[0]) if row else 0

    def run_ddl(self, script: str) -> None:
        """Run a migration script's statements, their column types translated (``pg_ddl``)."""
        for statement in script.split(";"):
            if statement.strip():
                self.conn.execute(pg_ddl(statement))

    def intern(self, table: str, column: str, keys: Iterable[str]) -> dict[str, int]:
        """``Backend.intern`` in one round trip when the keys are new: the missing keys go as
        one array, inserted (``ON CONFLICT DO NOTHING``) with their ids returned; the keys
        that were there already, or that another transaction committed meanwhile (invisible
        to that statement's snapshot), are looked up by a second statement."""
        cache = self._ids[table]
        missing = [k for k in dict.fromkeys(keys) if k not in cache]
        insert = (f"INSERT INTO {table} ({column}) SELECT unnest(?::text[]) "
                  "ON CONFLICT DO NOTHING")
        # as on SQLite: one scan beats a look-up per key
        if len(missing) > 20_000:
            self.conn.execute(insert, (missing,))
            cache.update(self.conn.execute(f"SELECT {column}, id FROM {table}"))
        elif missing:
            cache.update(self.conn.execute(f"{insert} RETURNING {column}, id",
                                           # fetchall: in C
                                           (missing,)).fetchall())
            there = [k for k in missing if k not in cache]
            if there:
                cache.update(self.conn.execute(
                    f"SELECT {column}, id FROM {table} WHERE {column} = ANY(?)", (there,)))
        return cache

    def lock(self, name: str) -> None:
        """A transaction-level advisory lock on (schema, name): released at COMMIT."""
        self.conn.execute("SELECT pg_advisory_xact_lock(?)", (self._key(name),))

    def _key(self, name: str) -> int:
        """The advisory lock key of (schema, name)."""
        return zlib.crc32(f"reljudge:{self.location.schema}:{name}".encode())

    def ids_taken(self, table: str, column: str) -> None:
        """Move the identity column's sequence past the largest id written."""
        self.conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                          f"(SELECT coalesce(max({column}), 0) + 1 FROM {table}), false)")


def _given_connect_timeout(psycopg: ModuleType, conninfo: str) -> str | None:
    """The connect timeout the user gave: the URL's or keyword string's ``connect_timeout``,
    else libpq's own default (``PGCONNECT_TIMEOUT``, read by libpq, not by us)."""
    given = psycopg.conninfo.conninfo_to_dict(conninfo).get("connect_timeout")
    if given is None:
        defaults = {o.keyword: o.val for o in psycopg.pq.Conninfo.get_defaults()}
        given = (defaults.get(b"connect_timeout") or b"").decode() or None
    return None if given is None else str(given)
