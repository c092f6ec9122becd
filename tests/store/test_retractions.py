"""Undo in the label store: a retraction event takes a source's grade back, append-only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore
from tests.backends import BACKENDS, empty_store, integrity_errors


def grade(q, d, g, name="ann", kind="human"):
    return LabelEvent(q, d, g, kind, name)


def undo(q, d, name="ann", kind="human"):
    return LabelEvent(q, d, None, kind, name, failure=RETRACTED)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with LabelStore(empty_store(request, tmp_path)) as s:
        yield s


def test_an_undone_grade_is_not_given_to_merge_stats_or_failures(store):
    store.add_events([grade("q", "a", 3), grade("q", "b", 1), undo("q", "a")])
    assert [(lab.qid, lab.docid, lab.grade) for lab in store.merge().labels] == [("q", "b", 1)]
    (src,) = store.sources()
    assert (src.events, src.ok, src.failed, src.retracted, src.grades) == (3, 1, 0, 1, {1: 1})
    assert store.failures() == []
    assert store.judged_pairs() == {("q", "b")} == store.judged_pairs(ok_only=False)
    assert [e.retraction for e in store.events()] == [False, False, True]  # the log keeps all


def test_a_grade_after_an_undo_counts_again(store):
    store.add_events([grade("q", "a", 3), undo("q", "a"), grade("q", "a", 0)])
    assert [lab.grade for lab in store.merge().labels] == [0]


def test_an_undo_withdraws_only_its_own_source(store):
    store.add_events([grade("q", "a", 3, "ann"), grade("q", "a", 1, "bob"),
                      grade("q", "a", 2, "judge", "llm"), undo("q", "a", "ann")])
    assert store.merge("human-only").labels[0].sources == ("bob",)
    assert store.merge("llm-only").labels[0].grade == 2
    assert [s.retracted for s in store.sources()] == [1, 0, 0]


def test_an_undo_event_keeps_the_grade_xor_failure_invariant(store):
    store.add_events([grade("q", "a", 3), undo("q", "a")])
    rows = store.conn.execute("SELECT grade, failure FROM events ORDER BY id").fetchall()
    assert rows == [(3, None), (None, RETRACTED)]
    with pytest.raises(integrity_errors()):
        store.conn.execute("INSERT INTO events (q, d, source, grade, failure, created_at) "
                           f"VALUES (1, 1, 1, 2, '{RETRACTED}', 0)")


def test_real_failures_still_count_as_failed_and_an_undo_is_not_one(store):
    store.add_events([LabelEvent("q", "a", None, "llm", "j", failure="refused: x",
                                 failure_kind="refused"),
                      grade("q", "b", 2), undo("q", "b")])
    assert [f[3] for f in store.failures()] == ["refused: x"]
    assert {s.name: (s.failed, s.retracted) for s in store.sources()} == {"j": (1, 0),
                                                                          "ann": (0, 1)}


actions = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["ann", "bob"]),
                             st.sampled_from([None, 0, 1, 2, 3])), max_size=25)


@settings(max_examples=60, deadline=None)
@given(actions)
@pytest.mark.slow  # hypothesis, two paths
def test_merge_equals_replaying_the_log_in_python(tmp_path_factory, log):
    """The SQL that hides retracted grades agrees with a replay: latest grade since the last
    undo of that (pair, source), if any."""
    path = tmp_path_factory.mktemp("s") / "labels.sqlite"
    with LabelStore(path) as store:
        store.add_events([undo("q", d, who) if g is None else grade("q", d, g, who)
                          for d, who, g in log])
        current: dict[tuple[str, str], int | None] = {}
        since_undo: dict[tuple[str, str], int] = {}
        for d, who, g in log:
            current[(d, who)] = g
            since_undo[(d, who)] = 0 if g is None else since_undo.get((d, who), 0) + 1
        expect = {(d, who): g for (d, who), g in current.items() if g is not None}
        got = {(lab.docid, who): lab.grade for who in ("ann", "bob")
               for lab in store.merge(f"source={who}").labels}
        assert got == expect
        assert len(store.label_rows()) == sum(since_undo.values())
        for s in store.sources():
            assert s.ok == sum(n for (_, w), n in since_undo.items() if w == s.name)
            assert s.ok + s.retracted + s.failed + sum(g is None for _, w, g in log
                                                       if w == s.name) == s.events


def test_source_grades_for_estimates_leave_undone_grades_out(store):
    store.add_events([grade("q", "a", 3), grade("q", "b", 1), undo("q", "a"),
                      grade("q", "c", 2), undo("q", "c"), grade("q", "c", 0)])
    assert store.source_grades("ann", kind="human") == {("q", "b"): 1, ("q", "c"): 0}
