"""One transaction context for every write of the store: a write that fails leaves nothing,
and nothing it cached (a source id, a query or passage id) outlives the rollback."""

from __future__ import annotations

import pytest

from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.store.batches import BatchLog
from tests.backends import BACKENDS, empty_store


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with LabelStore(empty_store(request, tmp_path)) as s:
        yield s


def test_a_batch_record_rolled_back_after_adding_its_source_leaves_no_stale_id(store):
    """BatchLog.create inserts the judge's source, then fails: the next add_events for that
    source must insert it again, not reuse the id of a row the rollback removed (it raised a
    raw sqlite3.IntegrityError: FOREIGN KEY constraint failed)."""
    items = [("c1", "q1", "d1", 0), ("c1", "q1", "d1", 0)]  # fine: INSERT OR IGNORE
    bad_config = {"not json": {1, 2}}  # json.dumps fails inside the transaction
    with pytest.raises(TypeError):
        store_log = BatchLog(store)
        store_log.create("new-judge", "/v1/chat/completions", bad_config, items)
    assert [s.name for s in store.sources()] == []  # the source row was rolled back
    assert store.add_events([LabelEvent("q1", "d1", 2, "llm", "new-judge")]) == 1
    assert [(s.name, s.events) for s in store.sources()] == [("new-judge", 1)]


def test_every_write_is_all_or_nothing(store):
    store.add_events([LabelEvent("q0", "d0", 1, "human", "ann")])
    before = store.count()
    with pytest.raises(TypeError):  # the second event's meta cannot be written
        store.add_events([LabelEvent("q1", "d1", 2, "llm", "judge"),
                          LabelEvent("q2", "d2", 2, "llm", "judge", meta={"x": {1}})])
    assert store.count() == before
    assert {s.name for s in store.sources()} == {"ann"}
    assert store.add_events([LabelEvent("q1", "d1", 2, "llm", "judge")]) == 1  # ids re-made


def test_a_transaction_inside_another_joins_it(store):
    with pytest.raises(RuntimeError), store.db.transaction():
        store.add_events([LabelEvent("q1", "d1", 2, "llm", "judge")])  # joins
        raise RuntimeError("the outer write fails after the inner one")
    assert store.count() == 0 and store.sources() == []
