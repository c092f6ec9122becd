"""Two paths, one answer: the same event stream written to a SQLite store and to a PostgreSQL
store (a real server, tests/pg.py) reads back the same: events, merges under every policy
and aggregation, exported qrels byte for byte, source stats, failures, standing grades,
samples, derivations, spend and claims. Hypothesis draws the streams: grades, failures,
undos, several sources of each kind and sample indices, in any order and batching."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.grades import AGGREGATES
from reljudge.io.trec import format_qrels
from reljudge.store import LabelStore
from tests.backends import empty_sqlite
from tests.strategies import event

_names = itertools.count()
_reused: dict[int, str] = {}


def emptied_pg_store(server) -> str:
    """The URL of a PostgreSQL store as new, made once per server and emptied for each use:
    every table but the schema's version truncated, its ids counted from 1 again (a new
    schema runs every migration: half a second of the server's time)."""
    from tests.backends import pg_url

    if id(server) not in _reused:
        _reused[id(server)] = pg_url(server, "reused")
        LabelStore(_reused[id(server)]).close()
    url = _reused[id(server)]
    with LabelStore(url, create=False) as store:
        schema = url.rsplit("=", 1)[1]
        tables = [name for (name,) in store.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND "
            "table_type = 'BASE TABLE' AND table_name <> 'meta'", (schema,))]
        with store.db.transaction():  # the events first: the others' triggers check them
            store.conn.execute("TRUNCATE events RESTART IDENTITY")
            store.conn.execute(f"TRUNCATE {', '.join(t for t in tables if t != 'events')} "
                               "RESTART IDENTITY CASCADE")
    return url


def read_back(store: LabelStore) -> dict:
    out = {"events": [(e.qid, e.docid, e.grade, e.source_kind, e.source_name, e.repeat, e.raw,
                       e.latency, e.failure, e.meta, e.tokens_in, e.cost, e.failure_kind)
                      for e in store.events()],
           "sources": [s.__dict__ for s in store.sources()],
           "failures": store.failures(), "current_failures": store.current_failures(),
           "standing": [s[1:-1] for s in store.standing("human")],  # not created_at
           "rows": sorted(store.label_rows()), "stale": store.stale_labels(),
           "conflicts": store.conflicts(), "metas": store.meta_counts("llm"),
           "costs": store.cost_rows("llm"),
           "by source": [(store.source_grades(s.name), store.source_grades(s.name, s.kind),
                          store.distributions(s.name)) for s in store.source_list()],
           "qrels by source": {n: format_qrels(q) for n, q in store.source_qrels(
               [s.name for s in store.source_list()]).items()}}
    for policy in ("human-first", "adjudicated-first", "human-only", "llm-only",
                   "source=alice"):
        for aggregate in AGGREGATES:
            merged = store.merge(policy, aggregate)
            out[f"{policy}/{aggregate}"] = merged.provenance_rows()
            out[f"{policy}/{aggregate}/qrels"] = format_qrels(merged.qrels) \
                if merged.labels else ""
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(event(), min_size=1, max_size=12), min_size=1, max_size=5))
def test_the_same_event_stream_reads_back_the_same_from_both_backends(pg_server, tmp_path,
                                                                     batches):
    n = next(_names)
    stores = [LabelStore(empty_sqlite(tmp_path / f"s{n}.sqlite")),
              LabelStore(emptied_pg_store(pg_server))]
    try:
        for s in stores:
            s.add_queries({"q1": "cats", "Q-3 é": "naïve 100% ?"})
            s.add_passages({"d1": "purr", "doc 3": {"text": "it's", "title": "T"}})
            for batch in batches:
                s.add_events(batch)
        sqlite, pg = (read_back(s) for s in stores)
        assert sqlite.keys() == pg.keys()
        for key in sqlite:
            assert sqlite[key] == pg[key], key
    finally:
        for s in stores:
            s.close()


def test_samples_derivations_spend_claims_and_texts_read_back_the_same(pg_server, tmp_path):
    from reljudge.labels import Sample, SampleItem

    base = pg_databases(pg_server)
    results = []
    for spec in (tmp_path / "x.sqlite", f"{base}?schema=whole"):
        with LabelStore(spec) as s:
            s.add_queries({"q1": "cats"})
            s.add_passages({"d1": "purr", "d2": "meow"})
            s.add_passages({"d1": "purr loudly"})  # the old text goes to the history
            s.add_sample(Sample("s1", "pair", "srs", 3, 2,
                                [SampleItem("q1", "d1", 0, 0.5, None),
                                 SampleItem("q1", "d2", 1, 0.5, "top")], {"judge": "gpt"}))
            s.assign_sample("s1", ["alice", "bob"], 0.5)
            run = s.open_spend("gpt", "http://x")
            s.update_spend(run, 3, 100, 20, 0.25)
            got, held, settled = s.claim("gpt", "me", [("q1", "d1", 0), ("q1", "d2", 0)],
                                         60, 0)
            s.add_derived("calibrated:gpt", [("q1", "d1")], [(0.1, 0.2, 0.3, 0.4)],
                          method="calibration", fitted_on={"on": "alice"}, grades=[2])
            results.append({
                "sample": s.sample("s1"), "pairs": s.sample_pairs("s1"),
                "team": s.sample_assignment("s1"), "spend": s.spend(),
                "total": s.total_spend(), "claims": (got, held, settled),
                "live": [(src, who, n) for src, who, n in s.live_claims()],
                "history": [(t, h) for t, h, _ in s.text_history("passage", "d1")],
                "texts": s.texts([("q1", "d1"), ("q1", "d2")], titles=True),
                "derived": [(e.qid, e.docid, e.grade, e.probs, e.expected_grade)
                            for e in s.events(source="calibrated:gpt")],
                "merge": s.merge("source=calibrated:gpt").provenance_rows()})
    assert results[0] == results[1]


def pg_databases(server) -> str:
    """One database for this module's stores (each test a schema of its own)."""
    from tests.backends import store_location

    class _Req:
        param = "postgresql"

        @staticmethod
        def getfixturevalue(_name):
            return server

    return store_location(_Req, None).split("?")[0]
