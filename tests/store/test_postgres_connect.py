"""Reaching a PostgreSQL store: every form of password libpq accepts masked wherever a URL is
shown, libpq's local socket form kept whole, a server that never answers given up on soon
with one line, and processes creating one new schema at the same instant."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from reljudge.cli import main
from reljudge.errors import StoreError
from reljudge.store import LabelStore
from reljudge.store.postgres import locate, masked
from tests.backends import pg_url

CONNECT_TIMEOUT = 10  # seconds: the default wait for a server that accepts and never answers


def test_every_form_of_password_libpq_accepts_is_masked():
    assert masked("postgresql://ann:s3cret@h/db") == "postgresql://ann:***@h/db"
    assert masked("postgresql://ann@h/db?sslmode=require&password=s3cret&schema=x") == \
        "postgresql://ann@h/db?sslmode=require&password=***&schema=x"
    assert masked("postgres://h/db?pass%77ord=s%40cret") == "postgres://h/db?pass%77ord=***"
    assert masked("host=h dbname=db password=s3cret user=ann") == \
        "host=h dbname=db password=*** user=ann"
    assert masked("postgresql://h/db?sslkey=k.pem&sslpassword=s3cret host=h sslpassword=s3") == \
        "postgresql://h/db?sslkey=k.pem&sslpassword=*** host=h sslpassword=***"
    assert masked("host=h password = 'it''s a \\'secret\\'' user=ann") == \
        "host=h password = *** user=ann"
    assert masked('store = "postgresql://ann@h/db?password=s3cret"') == \
        'store = "postgresql://ann@h/db?password=***"'
    # the rest is left as it is: a port is no password, nor is an @ after the host
    assert masked("postgresql://h:5432/db?application_name=a@b") == \
        "postgresql://h:5432/db?application_name=a@b"
    assert masked("password authentication failed for user ann") == \
        "password authentication failed for user ann"
    shown = str(locate("postgresql://ann@h/db?password=s3cret&schema=proj"))
    assert shown == "postgresql://ann@h/db?password=***&schema=proj"


def test_the_local_socket_form_keeps_its_slashes():
    loc = locate("postgresql:///db?host=/run/postgresql&schema=proj")
    assert loc.conninfo == "postgresql:///db?host=%2Frun%2Fpostgresql"
    assert str(loc) == "postgresql:///db?host=%2Frun%2Fpostgresql&schema=proj"
    assert locate("postgresql:///db").conninfo == "postgresql:///db"


def test_a_store_reached_by_its_local_socket_opens(pg_server):
    url = (f"postgresql:///postgres?host={pg_server.dir}&port={pg_server.port}"
           "&user=reljudge&schema=by_socket")
    with LabelStore(url) as store:
        assert store.count() == 0
        assert str(store.path).startswith("postgresql:///postgres?")


def test_labels_copy_and_connection_errors_never_show_a_query_password(pg_server, tmp_path,
                                                                       capsys):
    url = pg_url(pg_server, "pw") + "&password=s3cret-pw"
    LabelStore(url).close()
    assert main(["labels", "copy", url, str(tmp_path / "copy.sqlite")]) == 0
    unreachable = "postgresql://ann@127.0.0.1:1/none?password=s3cret-pw"
    assert main(["labels", "stats", "--store", unreachable]) == 2
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err
    assert "password=***" in out and "password=***" in err


@pytest.mark.slow  # waits for a server that never answers
def test_a_server_that_never_answers_is_given_up_on_soon_with_one_line():
    """Given up on after the store's timeout (short here: what happens then is the point; the
    default's length is the test below)."""
    with socket.socket() as listener:  # accepts connections, never says a word
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(StoreError) as e:
            LabelStore(f"postgresql://ann:s3cret@127.0.0.1:{port}/db", timeout=2)
        took = time.monotonic() - start
    assert 1 < took < 2 + 5
    message = str(e.value)
    assert "\n" not in message and "s3cret" not in message
    assert "no answer within 2 s" in message and "connect_timeout" in message


def test_by_default_a_connection_waits_connect_timeout_seconds(monkeypatch):
    """The default wait handed to libpq, and the line it gives up with."""
    import psycopg

    asked = {}

    def connect(conninfo, **kwargs):
        asked.update(kwargs)
        raise psycopg.errors.ConnectionTimeout("connection timeout expired")

    monkeypatch.setattr(psycopg, "connect", connect)
    with pytest.raises(StoreError, match=f"no answer within {CONNECT_TIMEOUT} s; check its host"):
        LabelStore("postgresql://ann:s3cret@127.0.0.1:1/db")
    assert asked["connect_timeout"] == CONNECT_TIMEOUT


@pytest.mark.slow  # waits for a server that never answers
def test_connect_timeout_in_the_url_is_honoured():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(StoreError, match="no answer within 2 s"):
            LabelStore(f"postgresql://ann@127.0.0.1:{port}/db?connect_timeout=2")
        assert time.monotonic() - start < 5


def test_processes_opening_one_new_schema_at_once_all_open_it(pg_server):
    errors: list[BaseException] = []

    def open_store(url: str, start: threading.Barrier) -> None:
        start.wait()
        try:
            LabelStore(url).close()
        except BaseException as e:  # collected, asserted below
            errors.append(e)

    for round_ in range(4):  # 8 at once on a new schema, 4 times
        url = pg_url(pg_server, f"race{round_}")
        start = threading.Barrier(8)
        threads = [threading.Thread(target=open_store, args=(url, start)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
