"""DCG / nDCG over expected gains: by hand, and trec_eval's nDCG when labels are certain."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.errors import InputError
from reljudge.infer.expected import expected_dcg, expected_ndcg
from reljudge.metrics import evaluate
from reljudge.trec_data import Qrels, Run


def test_expected_dcg_and_ndcg_by_hand():
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 2.0, "z": 1.0}})
    dists = {("q", "a"): (0.5, 0.5, 0.0, 0.0),   # E[g] = 0.5
             ("q", "b"): (0.0, 0.0, 1.0, 0.0),   # 2
             ("q", "c"): (0.0, 0.0, 0.0, 1.0),   # 3  (ties with b: docid descending -> c first)
             ("q", "x"): (0.0, 0.5, 0.5, 0.0)}   # 1.5, not retrieved
    dcg = 0.5 + 3 / math.log2(3) + 2 / math.log2(4)
    assert expected_dcg(run, dists, k=10)["q"] == pytest.approx(dcg)
    ideal = 3 + 2 / math.log2(3) + 1.5 / math.log2(4) + 0.5 / math.log2(5)
    assert expected_ndcg(run, dists, k=10)["q"] == pytest.approx(dcg / ideal)
    ideal2 = 3 + 2 / math.log2(3)
    assert expected_ndcg(run, dists, k=2)["q"] == pytest.approx((0.5 + 3 / math.log2(3)) / ideal2)
    exp_gain = 0.5 * 1 + (2 ** 3 - 1) / math.log2(3) + (2 ** 2 - 1) / math.log2(4)
    assert expected_dcg(run, dists, gain="exp")["q"] == pytest.approx(exp_gain)
    with pytest.raises(InputError, match="unknown gain"):
        expected_dcg(run, dists, gain="log")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 12), st.integers(1, 8), st.integers(0, 10_000))
def test_certain_distributions_give_the_metrics_ndcg(nq, ndocs, k, seed):
    rng = np.random.default_rng(seed)
    run = {f"q{q}": {f"d{d}": float(rng.integers(0, 4)) for d in range(ndocs)}
           for q in range(nq)}  # integer scores: many ties
    grades = {f"q{q}": {f"d{d}": int(rng.integers(0, 4)) for d in range(ndocs + 2)
                        if rng.random() < 0.7} for q in range(nq)}
    grades = {q: g for q, g in grades.items() if g}
    if not grades:
        return
    dists = {(q, d): tuple(np.eye(4)[g]) for q, docs in grades.items() for d, g in docs.items()}
    got = expected_ndcg(Run.from_dict(run), dists, k=k)
    want = evaluate(Qrels.from_dict(grades), Run.from_dict(run), [f"nDCG@{k}"]).per_query()
    assert set(got) == set(want)
    for q in got:
        assert got[q] == pytest.approx(next(iter(want[q].values())), abs=1e-9)
