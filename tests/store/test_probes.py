"""The probe tables of a store (reljudge.store.probes): claims shared by probing processes,
answers settled, spend counted, on both backends."""

from __future__ import annotations

import time

import pytest

from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.store.probes import ProbeSink, ProbeText
from tests.backends import BACKENDS, store_location

ITEMS = [("q1", "probe:salad:q1:d1:aaaaaaaaaaaa", 0), ("q1", "probe:clean:q1:d1:bbbbbbbbbbbb", 0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_probe_claims_settle_and_spend(backend, request, tmp_path):
    with LabelStore(store_location(request, tmp_path, backend=backend)) as store:
        sink = ProbeSink(store)
        since = time.time() - 1
        got, held, settled = sink.claim("m/p", "a", ITEMS, 60, since)
        assert got == ITEMS and held == settled == []
        assert sink.claim("m/p", "b", ITEMS, 60, since) == ([], ITEMS, [])  # a holds them
        assert sink.claim("m/p", "b", ITEMS, 60, since, gone=lambda o: o == "a")[0] == ITEMS
        sink.add_events([LabelEvent("q1", ITEMS[0][1], 2, "llm", "m/p"),
                         LabelEvent("q1", ITEMS[1][1], None, "llm", "m/p", failure="no grade",
                                    failure_kind="unparseable")])
        sink.release_claims("b")
        assert sink.claim("m/p", "c", ITEMS, 60, since)[2] == [(ITEMS[0], True),
                                                               (ITEMS[1], False)]
        assert [o.grade for o in sink.outcomes("m/p")] == [2, None]
        assert sink.renew_claims("c", 60) == 0  # nothing claimed: every item was settled
        before = store.total_spend()
        run = sink.open_spend("m/p", "http://x/v1")
        sink.update_spend(run, 2, 10, 5, 0.5)
        assert store.probe_spend() == 0.5 and sink.total_spend() == before + 0.5
        assert store.add_probes([ProbeText(ITEMS[0][1], "salad", 0, "q1", "d1", "x y")]) == 1
        assert store.add_probes([ProbeText(ITEMS[0][1], "salad", 0, "q1", "d1", "x y")]) == 0
        assert store.probe_judges() == [("m/p", 2, 1)]
        assert store.count() == 0 and store.source_list() == []  # no label, no source


def test_labels_copy_takes_the_probe_tables_along(pg_server, tmp_path):
    from reljudge.store.copy import copy_store
    from tests.backends import pg_url

    with LabelStore(tmp_path / "src.sqlite") as src, LabelStore(pg_url(pg_server)) as dst:
        src.add_probes([ProbeText(ITEMS[0][1], "salad", 3, "q1", "d1", "x y")])
        src.add_probe_events([LabelEvent("q1", ITEMS[0][1], 1, "llm", "m/p")])
        src.update_probe_spend(src.open_probe_spend("m/p", "http://x/v1"), 1, 10, 5, 0.25)
        copy_store(src, dst)
        assert dst.probe_texts() == src.probe_texts()
        assert dst.probe_grades() == src.probe_grades() and dst.probe_spend() == 0.25
