"""What a label event refers to (its query, passage, source and import) is there, on both
backends: an event naming a row that is not there is refused, with nothing of its statement
written; a query, passage, source or import that events name cannot be deleted nor renumbered.
On PostgreSQL an import's events are checked once per statement over the new rows (a foreign
key checks each row: 3.5x SQLite's import time at 1,000,000 events)."""

from __future__ import annotations

import pytest

from reljudge.cli import main
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from tests.backends import BACKENDS, empty_store, integrity_errors, pg_url

COLS = "q, d, source, grade, created_at, batch"


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with LabelStore(empty_store(request, tmp_path)) as s:
        s.add_grades([("q1", "d1", 1), ("q2", "d2", 2)], "human", "ann",
                     batch_info={"path": "f", "sha256": "x"})
        yield s


def _insert(store: LabelStore, rows: list[tuple]) -> None:
    with store.db.transaction():
        store.conn.executemany(f"INSERT INTO events ({COLS}) VALUES (?, ?, ?, ?, ?, ?)", rows)


@pytest.mark.parametrize("bad", [(99, 1, 1, 0, 0.0, None), (1, 99, 1, 0, 0.0, None),
                                 (1, 1, 99, 0, 0.0, None), (1, 1, 1, 0, 0.0, 99)],
                         ids=["query", "passage", "source", "import"])
@pytest.mark.parametrize("n", [1, 2, 500, 1500])
def test_events_naming_a_row_that_is_not_there_are_refused_whole(store, bad, n):
    before = store.count()
    good = (2, 2, 1, 3, 0.0, 1)
    with pytest.raises(integrity_errors(), match="(?i)foreign key"):
        _insert(store, [good] * (n - 1) + [bad])
    assert store.count() == before
    _insert(store, [good] * n)  # the same rows without the bad one go in
    assert store.count() == before + n


@pytest.mark.parametrize("table", ["queries", "passages", "sources", "imports"])
def test_a_row_events_name_is_neither_deleted_nor_renumbered(store, table):
    with pytest.raises(integrity_errors(), match="(?i)foreign key"), store.db.transaction():
        store.conn.execute(f"DELETE FROM {table} WHERE id = 1")
    with pytest.raises(integrity_errors(), match="(?i)foreign key"), store.db.transaction():
        store.conn.execute(f"UPDATE {table} SET id = 77 WHERE id = 1")
    assert store.count() == 2
    if table in ("queries", "passages"):  # a row nothing names goes
        store.db.intern(table, "qid" if table == "queries" else "docid", ["free"])
        with store.db.transaction():
            store.conn.execute(f"DELETE FROM {table} WHERE id = 3")


def test_an_import_on_postgresql_checks_its_events_references_once(pg_server, tmp_path):
    """One check of the 500 new rows, not one per row: today's foreign keys (four per row)
    made PostgreSQL's import 3.5x SQLite's."""
    with LabelStore(pg_url(pg_server, "once")) as store:
        with store.db.transaction():
            store.conn.execute("SET LOCAL track_functions = 'pl'")
            store.add_grades([(f"q{i % 7}", f"d{i}", i % 4) for i in range(500)], "llm", "j",
                             batch_info={"path": "f", "sha256": "x"})
            calls = store.conn.execute(
                "SELECT pg_stat_get_xact_function_calls('events_references'::regproc)"
            ).fetchone()[0]
        assert calls == 1 and store.count() == 500


def test_a_postgresql_import_of_a_file_with_a_bad_line_writes_nothing(pg_server, tmp_path,
                                                                       capsys):
    f = tmp_path / "labels.qrels"
    f.write_text("".join(f"q{i % 5} 0 d{i} {i % 4}\n" for i in range(999)) + "q1 0 dx two\n")
    url = pg_url(pg_server, "bad")
    with LabelStore(url) as store:
        store.add_grades([("q1", "d1", 1)], "human", "ann")
    assert main(["labels", "import", str(f), "--store", url, "--source-kind", "human",
                 "--source-name", "nist"]) == 2
    assert f"{f}:1000" in capsys.readouterr().err
    with LabelStore(url, create=False) as store:
        assert store.count() == 1 and [s.name for s in store.sources()] == ["ann"]


def _writing(url: str, qid: str):
    """A store in the middle of a transaction that has written an event naming ``qid``."""
    store = LabelStore(url)
    store.conn.execute("BEGIN")  # add_events joins it
    store.add_events([LabelEvent(qid, "d1", 1, "llm", "j")])
    return store


def test_events_being_written_lock_none_of_the_rows_they_name(pg_server):
    """A foreign key locks each row an event names (a write to it: a labeller's batch of 64
    locked some 115 rows, and concurrent labellers each locked their shared source again);
    in READ COMMITTED the checks lock none, another transaction may lock them all."""
    import psycopg

    url = pg_url(pg_server, "nolocks")
    with LabelStore(url) as store:
        store.add_events([LabelEvent("q1", "d1", 0, "llm", "j")])  # the rows, committed
    writer = _writing(url, "q1")
    try:
        with psycopg.connect(url.split("?")[0], autocommit=True) as other:
            schema = url.rsplit("=", 1)[1]
            for table in ("queries", "passages", "sources"):
                other.execute(f"BEGIN; SELECT * FROM {schema}.{table} FOR UPDATE NOWAIT")
                other.execute("ROLLBACK")
    finally:
        writer.conn.execute("COMMIT")
        writer.close()


def _waits_then_fails(action, release) -> list[Exception]:
    """Run ``action`` in a thread, see it still waiting after half a second, ``release`` what
    it waits for; the integrity errors it raised once it went on."""
    import threading

    errors = []

    def run():
        try:
            action()
        except integrity_errors() as e:
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(0.5)
    assert t.is_alive()  # waiting
    release()
    t.join(10)
    assert not t.is_alive()
    return errors


def test_a_delete_waits_for_the_events_being_written_and_is_refused_when_they_name_the_row(
        pg_server):
    url = pg_url(pg_server, "waits")
    with LabelStore(url) as store:
        store.db.intern("queries", "qid", ["q1"])  # a row no event names yet: deletable
    writer = _writing(url, "q1")

    def delete():
        with LabelStore(url) as other, other.db.transaction():
            other.conn.execute("DELETE FROM queries WHERE qid = 'q1'")

    def commit():
        writer.conn.execute("COMMIT")
        writer.close()

    errors = _waits_then_fails(delete, commit)
    assert len(errors) == 1 and "foreign key" in str(errors[0])
    with LabelStore(url) as store:
        assert store.count() == 1 and [e.qid for e in store.events()] == ["q1"]


def test_an_event_naming_a_row_deleted_meanwhile_is_refused(pg_server):
    url = pg_url(pg_server, "deleted")
    with LabelStore(url) as store:
        store.add_events([LabelEvent("q0", "d0", 1, "llm", "j")])
    writer = LabelStore(url)
    writer.db.intern("queries", "qid", ["q1"])  # committed, no event names it: its id cached
    deleter = LabelStore(url)
    deleter.conn.execute("BEGIN")
    deleter.conn.execute("DELETE FROM queries WHERE qid = 'q1'")

    def commit():
        deleter.conn.execute("COMMIT")
        deleter.close()

    errors = _waits_then_fails(lambda: writer.add_events([LabelEvent("q1", "d0", 2, "llm", "j")]),
                               commit)
    writer.close()
    assert len(errors) == 1 and "foreign key" in str(errors[0])
    with LabelStore(url) as store:
        assert store.count() == 1 and not store.conn.execute(
            "SELECT 1 FROM queries WHERE qid = 'q1'").fetchall()


def test_outside_read_committed_events_lock_their_rows_and_deletes_are_refused(pg_server):
    import psycopg

    url = pg_url(pg_server, "rr")
    with LabelStore(url) as store:
        store.add_events([LabelEvent("q0", "d0", 1, "llm", "j")])
        store.db.intern("queries", "qid", ["q1"])
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="READ COMMITTED"), \
                store.db.transaction():
            store.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            store.conn.execute("DELETE FROM queries WHERE qid = 'q1'")
        with store.db.transaction():
            store.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            store.add_events([LabelEvent("q0", "d0", 2, "llm", "j")])
            with psycopg.connect(url.split("?")[0], autocommit=True) as other, \
                    pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute(f"SELECT * FROM {url.rsplit('=', 1)[1]}.sources FOR UPDATE NOWAIT")
        assert store.count() == 2


def test_a_store_whose_checks_an_earlier_reljudge_wrote_gets_todays(pg_server):
    from reljudge.store.pg_references import _BODIES, _IN_PLACE

    url = pg_url(pg_server, "earlier")
    with LabelStore(url) as store:
        store.conn.execute("CREATE OR REPLACE FUNCTION events_referred() RETURNS trigger "
                           "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$")
        assert store.conn.execute(_IN_PLACE).fetchone()[1] != _BODIES
    with LabelStore(url) as store:
        assert store.conn.execute(_IN_PLACE).fetchone() == ([], _BODIES)


def test_a_labellers_batch_reads_no_table_through_to_check_its_events(pg_server):
    """A batch of 64 events looks each reference up by its row's key: the checks' plan kept
    for a few rows hashed the whole of queries (5,000 rows: 1.5 ms a batch) each time."""
    with LabelStore(pg_url(pg_server, "probes")) as store:
        store.add_grades([(f"q{i}", f"d{i}", i % 4) for i in range(3000)], "human", "ann")
        scans = ("SELECT relname, seq_scan FROM pg_stat_xact_user_tables "
                 "WHERE relname IN ('queries', 'passages', 'events') ORDER BY relname")
        for b in range(3):  # the function's plans kept, as a labeller's are
            with store.db.transaction():
                before = store.conn.execute(scans).fetchall()  # the counts not yet flushed
                store.add_events([LabelEvent(f"q{i}", f"new{b}-{i}", i % 4, "llm", "j")
                                  for i in range(64)])
                assert store.conn.execute(scans).fetchall() == before
