"""On PostgreSQL, what label events refer to (query, passage, source, import) is checked
once per statement over the new rows, not once per row.

A foreign key checks each row (an import in 3.5x SQLite's time); the
triggers of ``use_statement_checks`` keep its rules once per statement (``REFERENCING NEW
TABLE``): a reference to a missing row fails as a foreign key does; a referenced row cannot
be deleted, renumbered or truncated; a delete waits for the transactions writing events
(``LOCK TABLE events IN SHARE MODE``) instead of each event locking its rows. That takes READ
COMMITTED (the default; other levels lock rows as a foreign key does). Small statements
reuse the function's plans; large ones are planned for their size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reljudge.store.backend import Backend

#: (column of events, the table it refers to)
REFERENCES = (("q", "queries"), ("d", "passages"), ("source", "sources"), ("batch", "imports"))
#: new rows from which a statement's checks are planned for its size
LARGE = 1000

_LOCK = "\n".join(f"PERFORM 1 FROM {table} WHERE id IN (SELECT {col} FROM new_events) "
                  "FOR KEY SHARE;" for col, table in REFERENCES)
_MISSING = " UNION ALL ".join(
    f"SELECT '{col}' AS col, n.{col} AS ref, '{table}' AS parent FROM new_events n "
    f"WHERE n.{col} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {table} WHERE id = n.{col})"
    for col, table in REFERENCES) + " LIMIT 1"
# A few rows' references are looked up one by one (a subquery per reference, an index probe
# each): as a join, the plan kept for a few rows hashed the whole of queries every time.
_MISSING_FEW = " UNION ALL ".join(
    f"SELECT '{col}' AS col, n.{col} AS ref, '{table}' AS parent FROM new_events n "
    f"WHERE n.{col} IS NOT NULL AND (SELECT id FROM {table} WHERE id = n.{col}) IS NULL"
    for col, table in REFERENCES) + " LIMIT 1"
_RAISE = """RAISE foreign_key_violation USING
            MESSAGE = format('insert or update on table "events" violates foreign key '
                             'constraint "events_%s_fkey"', missing.col),
            DETAIL = format('Key (%s)=(%s) is not present in table "%s".', missing.col,
                            missing.ref, missing.parent);"""


def _execute(statements: str) -> str:
    """The lock statements as dynamic SQL (planned each time)."""
    return "\n".join(f"EXECUTE {_quote('SELECT ' + s.removeprefix('PERFORM ').rstrip(';'))};"
                     for s in statements.splitlines())


def _quote(sql: str) -> str:
    return "'" + sql.replace("'", "''") + "'"


_READ_COMMITTED = "current_setting('transaction_isolation') = 'read committed'"

_NEW_EVENTS = f"""
CREATE OR REPLACE FUNCTION events_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing record;
    small boolean := (SELECT count(*) FROM new_events) < {LARGE};
BEGIN
    IF small AND NOT {_READ_COMMITTED} THEN
        {_LOCK}
    ELSIF NOT {_READ_COMMITTED} THEN
        {_execute(_LOCK)}
    END IF;
    IF small THEN
        FOR missing IN {_MISSING_FEW} LOOP
            {_RAISE}
        END LOOP;
    ELSE
        FOR missing IN EXECUTE {_quote(_MISSING)} LOOP
            {_RAISE}
        END LOOP;
    END IF;
    RETURN NULL;
END $$"""

# TG_ARGV[0]: the column of events that refers to the table the trigger is on.
_REFERRED = f"""
CREATE OR REPLACE FUNCTION events_referred() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    used boolean;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.id = OLD.id THEN
        RETURN NULL;
    END IF;
    IF NOT {_READ_COMMITTED} THEN
        RAISE feature_not_supported USING
            MESSAGE = format('%s on table "%s": rows label events may refer to are deleted or '
                             'renumbered only in a READ COMMITTED transaction', TG_OP,
                             TG_TABLE_NAME);
    END IF;
    LOCK TABLE events IN SHARE MODE;  -- the events being written, committed: seen below
    IF TG_OP = 'TRUNCATE' THEN
        used := EXISTS (SELECT 1 FROM events);
    ELSE
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM events WHERE %I = $1)', TG_ARGV[0])
            INTO used USING OLD.id;
    END IF;
    IF used THEN
        RAISE foreign_key_violation USING
            MESSAGE = format('update or delete on table "%s" violates foreign key constraint '
                             '"events_%s_fkey" on table "events"', TG_TABLE_NAME, TG_ARGV[0]),
            DETAIL = CASE WHEN TG_OP = 'TRUNCATE' THEN 'Table "events" refers to it.'
                     ELSE format('Key (id)=(%s) is still referenced from table "events".',
                                 OLD.id) END;
    END IF;
    RETURN NULL;
END $$"""

#: the statements that put the checks in place, in order
CHECKS = (
    _NEW_EVENTS, _REFERRED,
    *(f"CREATE TRIGGER events_{op.lower()}_references AFTER {op} ON events REFERENCING NEW "
      "TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION events_references()"
      for op in ("INSERT", "UPDATE")),
    *(f"CREATE TRIGGER {table}_events_references AFTER DELETE OR UPDATE OF id ON {table} "
      f"FOR EACH ROW EXECUTE FUNCTION events_referred('{col}')" for col, table in REFERENCES),
    *(f"CREATE TRIGGER {table}_events_truncate BEFORE TRUNCATE ON {table} FOR EACH STATEMENT "
      f"EXECUTE FUNCTION events_referred('{col}')" for col, table in REFERENCES),
)


#: the checks' functions (``CREATE OR REPLACE``), and their bodies as the server keeps them
FUNCTIONS = (_NEW_EVENTS, _REFERRED)
_BODIES = [f.split("$$")[1] for f in FUNCTIONS]
_KEYS = "SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'f'"
_IN_PLACE = (f"SELECT ARRAY({_KEYS}), ARRAY(SELECT prosrc FROM pg_proc WHERE oid = "
             "to_regproc('events_references') UNION ALL SELECT prosrc FROM pg_proc WHERE oid = "
             "to_regproc('events_referred'))")


def use_statement_checks(db: Backend) -> None:
    """Replace the foreign keys of ``events`` by the checks once per statement (see the
    module's text), in one transaction; nothing to do when they are in place, their
    functions replaced when an earlier reljudge wrote them. A user who may not alter the
    store's tables (not their owner) keeps its foreign keys, or the checks as they are: the
    same rules."""
    import psycopg

    keys, bodies = db.conn.execute(_IN_PLACE).fetchone()
    if not keys and bodies == _BODIES:
        return
    try:
        with db.transaction() as conn:
            db.lock("migrate")
            # another may have done it
            names = [r[0] for r in conn.execute(_KEYS).fetchall()]
            if names:
                conn.execute("ALTER TABLE events " + ", ".join(
                    f'DROP CONSTRAINT "{name}"' for name in names))
                for statement in CHECKS:
                    conn.execute(statement)
            else:
                for statement in FUNCTIONS:
                    conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege:
        pass
