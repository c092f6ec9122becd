"""Schema migrations on both backends: a store of the previous version, built by the real
migrations up to that version, is upgraded in place and reads back what the new version
promises (version 9: every failed judgment has its kind, none is read from its text)."""

from __future__ import annotations

import pytest

from reljudge.judge.failures import asked_again
from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore, schema
from tests.backends import BACKENDS, store_location
from tests.helpers import store_at_version

#: failure texts as reljudge wrote them before kinds had a column, and the kind each has
LEGACY = [
    ("gave up after 3 attempts (connection reset by peer)", "connection"),
    ("gave up after 3 attempts (HTTP 503)", "http_status"),
    ("gave up after 2 attempts (Connection reset)", "http_status"),  # "connection" is cased
    ("malformed response: connection closed mid-answer", "connection"),
    ("malformed response: not JSON", "http_status"),
    ("timeout after 30 s", "timeout"),
    ("Timeout after 30 s", "unparseable"),  # prefixes are case-sensitive, as they were
    ("connection error: [Errno 111] refused", "connection"),
    ("HTTP 500: upstream failed", "http_status"),
    ("refused: content_filter", "refused"),
    ("no grade in the answer", "unparseable"),
    ("50% ? maybe: 'quoted'", "unparseable"),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_failures_of_a_version_8_store_get_their_kind_when_it_is_upgraded(
        backend, request, tmp_path, monkeypatch):
    location = store_location(request, tmp_path, backend=backend)
    old = [LabelEvent("q", f"d{i}", None, "llm", "judge", failure=text)
           for i, (text, _) in enumerate(LEGACY)]
    kept = LabelEvent("q", "k", None, "llm", "judge", failure="no grade in the answer",
                      failure_kind="http_status")  # a recorded kind is never replaced
    undo = [LabelEvent("q", "h", 2, "human", "ann"),
            LabelEvent("q", "h", None, "human", "ann", failure=RETRACTED)]
    store_at_version(location, 8, [*old, kept, *undo], monkeypatch)
    with LabelStore(location) as s:
        assert s.migrated_from == 8 and s.db.version() == schema.SCHEMA_VERSION == 10
        kinds = {e.docid: (e.failure, e.failure_kind) for e in s.events() if e.grade is None}
        assert [kinds[f"d{i}"] for i in range(len(LEGACY))] == LEGACY
        assert kinds["k"] == ("no grade in the answer", "http_status")
        assert kinds["h"] == (RETRACTED, None)  # an undo is no failed judgment: no kind
        assert {(d, kind) for _, d, _, _, kind, _ in s.current_failures()} == \
            {(f"d{i}", kind) for i, (_, kind) in enumerate(LEGACY)} | {("k", "http_status")}
        assert [tuple(o)[4] for o in s.outcomes("judge")] == \
            [kind for _, kind in LEGACY] + ["http_status"]


def test_a_failure_written_by_a_version_4_store_has_its_kind_after_the_upgrade(tmp_path,
                                                                               monkeypatch):
    import sqlite3

    path = tmp_path / "v4.sqlite"
    store_at_version(path, 4, [], monkeypatch)
    conn = sqlite3.connect(path)  # as reljudge wrote a failure then: no kind column at all
    conn.execute("INSERT INTO queries (qid) VALUES ('q')")
    conn.execute("INSERT INTO passages (docid) VALUES ('d')")
    conn.execute("INSERT INTO sources (kind, name) VALUES ('llm', 'j')")
    conn.execute("INSERT INTO events (q, d, source, failure, created_at) "
                 "VALUES (1, 1, 1, 'timeout after 30 s', 0)")
    conn.commit()
    conn.close()
    with LabelStore(path) as s:
        assert s.migrated_from == 4
        assert [(e.failure, e.failure_kind) for e in s.events()] == \
            [("timeout after 30 s", "timeout")]


def test_a_version_8_store_opened_read_only_is_refused_and_keeps_its_failures_unkinded(
        tmp_path, monkeypatch):
    from reljudge.errors import StoreError

    path = tmp_path / "old.sqlite"
    store_at_version(path, 8, [LabelEvent("q", "d", None, "llm", "j", failure="HTTP 500")],
                     monkeypatch)
    with pytest.raises(StoreError, match="schema version 8, this reljudge reads version "
                       f"{schema.SCHEMA_VERSION}"):
        LabelStore(path, readonly=True)
    with LabelStore(path) as s:  # upgraded by a command that writes
        assert [e.failure_kind for e in s.events()] == ["http_status"]
        assert s.backup is not None and s.backup.name == "old.sqlite.v8.bak"


def test_a_failure_is_asked_again_by_its_kind_alone():
    assert asked_again("connection", retry_failed=False)
    assert asked_again("some_future_kind", retry_failed=False)  # counted as an HTTP failure
    assert not asked_again("unparseable", retry_failed=False)
    assert not asked_again(None, retry_failed=False)  # written without a kind: not a call's
    assert asked_again(None, retry_failed=True) and asked_again("refused", retry_failed=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_labels_upgrade_says_it_upgraded_on_either_backend(backend, request, tmp_path,
                                                          monkeypatch, capsys):
    """A PostgreSQL schema is upgraded in its transaction with nothing kept aside: the command
    still says it upgraded, and names a copy only where SQLite kept one."""
    from reljudge.cli import main

    location = store_location(request, tmp_path, backend=backend)
    store_at_version(location, 8, [LabelEvent("q", "d", 2, "human", "ann")], monkeypatch)
    assert main(["labels", "upgrade", "--store", str(location)]) == 0
    out = capsys.readouterr().out
    assert f"upgraded from schema 8 to {schema.SCHEMA_VERSION}" in out
    assert ("kept as" in out) == (backend == "sqlite")
    assert main(["labels", "upgrade", "--store", str(location)]) == 0
    assert "nothing to upgrade" in capsys.readouterr().out
