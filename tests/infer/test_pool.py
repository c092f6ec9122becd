"""Pooling: top-k per run in trec_eval order, union over runs, minus labelled pairs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.errors import ConfigError
from reljudge.pool import build_pool, judged_at_k, rbp_residual, top_k
from reljudge.trec_data import Run


def test_top_k_orders_by_score_then_docid_descending_and_ignores_input_order():
    run = Run.from_dict({"q1": {"a": 1.0, "c": 1.0, "b": 3.0, "d": 0.5}, "q2": {"x": 2.0}})
    q, d, r = top_k(run, 2)
    got = list(zip(q.tolist(), d.tolist(), r.tolist(), strict=False))
    assert got == [("q1", "b", 1), ("q1", "c", 2), ("q2", "x", 1)]


def test_top_k_rejects_zero_depth():
    with pytest.raises(ConfigError, match="at least 1, not 0"):
        top_k(Run.from_dict({"q": {"a": 1.0}}), 0)


def test_pool_is_union_of_runs_minus_labelled_with_per_query_counts():
    a = Run.from_dict({"q1": {"d1": 3, "d2": 2, "d3": 1}, "q2": {"e1": 1, "e2": 0}}, name="a")
    b = Run.from_dict({"q1": {"d4": 3, "d1": 2, "d9": 1}}, name="b")
    pool = build_pool([a, b], depth=2, labelled={("q1", "d1"), ("q9", "zz")})
    assert set(pool.pairs) == {("q1", "d1"), ("q1", "d2"), ("q1", "d4"),
                               ("q2", "e1"), ("q2", "e2")}
    assert ("q1", "d1") not in pool.to_label
    assert len(pool.to_label) == 4 and pool.judged == 1
    counts = {s.qid: (s.pooled, s.judged, s.to_label) for s in pool.per_query}
    assert counts == {"q1": (3, 1, 2), "q2": (2, 0, 2)}
    # ordered by query, then best rank over runs, then docid
    assert pool.pairs[:3] == [("q1", "d1"), ("q1", "d4"), ("q1", "d2")]


def test_judged_at_k_agrees_with_the_judged_measure():
    from reljudge.metrics import evaluate
    from reljudge.trec_data import Qrels

    run = Run.from_dict({"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"x": 1}})
    labelled = {("q1", "a"), ("q1", "c"), ("q2", "x")}
    assert judged_at_k(run, labelled, 2) == pytest.approx((1 / 2 + 1 / 1) / 2)
    assert judged_at_k(run, labelled, 10) == pytest.approx((2 / 3 + 1) / 2)
    qrels = Qrels.from_arrays([q for q, _ in labelled], [d for _, d in labelled], [0, 0, 0])
    for k in (1, 2, 10):
        assert judged_at_k(run, labelled, k) == pytest.approx(
            evaluate(qrels, run, [f"Judged@{k}"]).mean()[f"Judged@{k}"])



@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["q1", "q2", "q3"]),
                       st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)] + ["D", "é"]),
                                       st.integers(0, 4).map(float), min_size=1),
                       min_size=1),
       st.integers(1, 6))
def test_top_k_equals_the_sorted_ranking(data, depth):
    run = Run.from_dict(data)
    q, d, r = top_k(run, depth)
    got = {}
    for qid, docid, rank in zip(q.tolist(), d.tolist(), r.tolist(), strict=False):
        got.setdefault(qid, []).append((rank, docid))
    for qid in data:
        want = [doc for doc, _ in run.ranked(qid)[:depth]]
        assert [doc for _, doc in sorted(got[qid])] == want


def _top_k_by_query(run: Run, depth: int):
    """The reference: each query sorted in Python, exactly by (score, UTF-8 docid), both
    descending, ties of both in file order (the vectorised ``top_k`` must match it)."""
    qids, bounds, docids, scores = run.groups()
    out_q, out_d, out_r = [], [], []
    for q, a, b in zip(qids, bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        s, docs = scores[a:b].tolist(), docids[a:b].tolist()
        order = sorted(range(b - a), key=lambda i: (s[i], docs[i].encode()), reverse=True)
        top = [docs[i] for i in order[:depth]]
        out_q += [q] * len(top)
        out_d += top
        out_r += range(1, len(top) + 1)
    return (np.array(out_q, dtype=object), np.array(out_d, dtype=object),
            np.array(out_r, dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q10", "é"]),
                          st.sampled_from([f"d{i}" for i in range(9)] + ["D", "é", "e\u0301",
                                                                         "\U0001f600", "d1 "]),
                          st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0, 1e-300, 3.0])),
                unique_by=lambda t: t[:2], max_size=40),
       st.integers(1, 12))
@pytest.mark.slow  # 300 examples, about 1.5 s; the fixed run below is the fast test
def test_top_k_equals_a_python_sort_of_each_query_in_every_array(rows, depth):
    _top_k_is_the_python_sort(rows, depth)


#: every query, docid and score of the sweep above, in no order, scores tied across docids
#: that sort apart only by their UTF-8 bytes (a combining accent, an emoji, a trailing space)
FIXED_ROWS = [(q, d, [0.0, -0.0, 1.0, 2.5, -1.0, 1e-300, 3.0][j * (i + 1) % 7])
              for j, d in enumerate([f"d{k}" for k in range(9)] + ["D", "é", "e\u0301",
                                                                   "\U0001f600", "d1 "])
              for i, q in enumerate(["q1", "q2", "q10", "é"]) if (i + j) % 5]


@pytest.mark.parametrize("depth", [1, 4, 12])
def test_top_k_of_a_fixed_run_equals_a_python_sort_of_each_query_in_every_array(depth):
    """The sweep above on one run of every value it draws from, cut at three depths."""
    _top_k_is_the_python_sort(FIXED_ROWS, depth)


def _top_k_is_the_python_sort(rows, depth) -> None:
    run = Run.from_arrays([r[0] for r in rows], [r[1] for r in rows],
                          np.array([r[2] for r in rows], dtype=np.float64))
    got, want = top_k(run, depth), _top_k_by_query(run, depth)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.tolist() == w.tolist()


def test_rbp_residual_counts_the_unlabelled_ranks_and_agrees_with_the_metric():
    from reljudge.metrics import evaluate

    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 1.0, "e": 1.0}})
    labelled = {("q1", "a"), ("q1", "c"), ("q2", "e")}  # q2: e outranks d (tie, docid desc)
    p = 0.8
    expected = ((1 - p) * p + (1 - p) * p) / 2  # q1: b at rank 2; q2: d at rank 2
    assert rbp_residual(run, labelled, p) == pytest.approx(expected)
    qrels = {q: {d: 0 for qq, d in labelled if qq == q} for q in ("q1", "q2")}
    assert evaluate(qrels, run, ["RBP(residual=True)"]).mean()["RBP(residual=True)"] == \
        pytest.approx(expected)
    assert rbp_residual(run, set(), 0.5) == pytest.approx((0.5 + 0.25 + 0.125 + 0.5 + 0.25) / 2)
    assert rbp_residual(run, {(q, d) for q, docs in run.to_dict().items() for d in docs}) == 0


def test_pool_command_reports_the_rbp_residual_before_and_after_labelling(tmp_path, capsys):
    import json

    from reljudge.cli import main

    (tmp_path / "a.run").write_text("q1 Q0 a 1 3.0 A\nq1 Q0 b 2 2.0 A\nq1 Q0 c 3 1.0 A\n")
    assert main(["pool", str(tmp_path / "a.run"), "--depth", "2", "--json",
                 "--rbp-p", "0.5"]) == 0
    got = json.loads(capsys.readouterr().out)["rbp_residual"]
    # nothing labelled: every rank open; after labelling the top 2, only rank 3 stays open
    assert got["p"] == 0.5
    assert got["A"] == pytest.approx({"before": 0.5 + 0.25 + 0.125, "after": 0.125})
    assert main(["pool", str(tmp_path / "a.run"), "--rbp-p", "1.5"]) == 2
    assert "--rbp-p must be between 0 and 1" in capsys.readouterr().err
