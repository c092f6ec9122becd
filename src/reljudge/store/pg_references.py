"""On PostgreSQL, what each label event refers to (its query, passage, source and import) is
checked once per statement over the new rows, not once per row.

The schema's migrations give ``events`` four foreign keys, as on SQLite. PostgreSQL checks a
foreign key with a trigger per row and per key: four queries for each event, which made an
import of 1,000,000 events 3.5x SQLite's time. ``use_statement_checks`` replaces those four
with the same rules kept by triggers once per statement (``REFERENCING NEW TABLE``):

- the rows the new events refer to are locked ``FOR KEY SHARE``, as a foreign key locks
  them (no other transaction deletes them before this one commits), then one anti-join finds
  any reference to a row that is not there: the whole statement fails with
  ``foreign_key_violation`` and the message a foreign key gives;
- a query, passage, source or import that events refer to cannot be deleted, renumbered or
  truncated (a trigger per deleted row: the store never deletes them).

A small statement's checks run with plans kept by the function (planned for a few rows); a
large one's are planned for its size each time (``EXECUTE``), so an import's plan is never
reused for a labeller's few rows, nor the reverse.
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


_NEW_EVENTS = f"""
CREATE OR REPLACE FUNCTION events_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing record;
BEGIN
    IF (SELECT count(*) FROM new_events) < {LARGE} THEN
        {_LOCK}
        FOR missing IN {_MISSING} LOOP
            {_RAISE}
        END LOOP;
    ELSE
        {_execute(_LOCK)}
        FOR missing IN EXECUTE {_quote(_MISSING)} LOOP
            {_RAISE}
        END LOOP;
    END IF;
    RETURN NULL;
END $$"""

# TG_ARGV[0]: the column of events that refers to the table the trigger is on.
_REFERRED = """
CREATE OR REPLACE FUNCTION events_referred() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    used boolean;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        used := EXISTS (SELECT 1 FROM events);
    ELSIF TG_OP = 'UPDATE' AND NEW.id = OLD.id THEN
        RETURN NULL;
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


def use_statement_checks(db: Backend) -> None:
    """Replace the foreign keys of ``events`` by the checks once per statement (see the
    module's text), in one transaction; nothing to do when they are in place. A user who may
    not alter the store's tables (not their owner) keeps its foreign keys: the same rules,
    checked per row."""
    import psycopg

    keys = "SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'f'"
    if not db.conn.execute(keys).fetchall():
        return
    try:
        with db.transaction() as conn:
            db.lock("migrate")
            names = [r[0] for r in conn.execute(keys).fetchall()]  # another may have done it
            if names:
                conn.execute("ALTER TABLE events " + ", ".join(
                    f'DROP CONSTRAINT "{name}"' for name in names))
                for statement in CHECKS:
                    conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege:
        pass
