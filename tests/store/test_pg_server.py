"""The test PostgreSQL server (tests/pg.py) itself: it starts as an unprivileged user on
127.0.0.1, takes connections from psycopg, keeps databases and schemas apart, and runs the
row locking the team store's claims will rest on (FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import psycopg


def test_the_server_answers_on_loopback_as_a_superuser_not_root(pg_server):
    with psycopg.connect(pg_server.url) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()[0]
        addr = conn.execute("SELECT inet_server_addr()").fetchone()[0]
        owner = conn.execute("SELECT pg_catalog.pg_get_userbyid(datdba) FROM pg_database "
                             "WHERE datname = 'postgres'").fetchone()[0]
    assert int(version) >= 120000
    assert str(addr) == "127.0.0.1"
    assert owner == "reljudge"
    data_owner = pg_server.data.stat().st_uid
    assert data_owner != 0  # initdb ran as an unprivileged user


def test_databases_and_schemas_keep_projects_apart(pg_server):
    url = pg_server.database("projects")
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in ("alpha", "beta"):
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(f'CREATE TABLE "{schema}".events (id bigint)')
        conn.execute("INSERT INTO alpha.events VALUES (1), (2)")
        assert conn.execute("SELECT count(*) FROM beta.events").fetchone()[0] == 0
        conn.execute("SET search_path TO alpha")
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 2


def test_two_sessions_claim_disjoint_rows_with_skip_locked(pg_server):
    url = pg_server.database("claims")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
        conn.execute("INSERT INTO items SELECT generate_series(1, 10)")
    with psycopg.connect(url) as a, psycopg.connect(url) as b:
        got_a = [r[0] for r in a.execute("SELECT id FROM items ORDER BY id LIMIT 6 "
                                         "FOR UPDATE SKIP LOCKED")]
        got_b = [r[0] for r in b.execute("SELECT id FROM items ORDER BY id LIMIT 6 "
                                         "FOR UPDATE SKIP LOCKED")]
        assert got_a == [1, 2, 3, 4, 5, 6] and got_b == [7, 8, 9, 10]
        a.rollback()
        b.rollback()
