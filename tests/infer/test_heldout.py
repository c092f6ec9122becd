"""k-fold by query: out-of-fold predictions, and no query on both sides of a split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.errors import InputError
from reljudge.infer import heldout
from reljudge.infer.heldout import (
    FoldLeak,
    align,
    assert_no_leak,
    calibrate_fit_predict,
    cross_fit,
    decided_grades,
    out_of_fold,
    panel_fit_predict,
    query_folds,
)
from reljudge.trec_data import Qrels


def qrels(rows):
    return Qrels.from_arrays([r[0] for r in rows], [r[1] for r in rows],
                             np.array([r[2] for r in rows]))


def synthetic(nq=12, per=30, seed=0):
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{q}_{i}", int(rng.integers(0, 4))) for q in range(nq) for i in range(per)]
    human = qrels(rows)
    a = qrels([(q, d, min(3, g + int(rng.random() < 0.5))) for q, d, g in rows])
    b = qrels([(q, d, g if rng.random() < 0.7 else int(rng.integers(0, 4)))
               for q, d, g in rows if rng.random() < 0.8])  # b misses some pairs
    return human, {"a": a, "b": b}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 15), min_size=6, max_size=200), st.integers(2, 5),
       st.integers(0, 1000))
def test_folds_never_share_a_query_and_are_balanced(codes, k, seed):
    qids = np.array([f"q{c}" for c in codes], dtype=object)
    if len(set(codes)) < k:
        with pytest.raises(InputError, match="cannot fill"):
            query_folds(qids, k, seed)
        return
    fold = query_folds(qids, k, seed)
    for f in range(k):
        assert_no_leak(qids, fold != f, fold == f)
    per_fold = [len(set(qids[fold == f])) for f in range(k)]
    assert max(per_fold) - min(per_fold) <= 1


def test_a_leak_is_caught():
    qids = np.array(["q1", "q1", "q2"], dtype=object)
    with pytest.raises(FoldLeak, match="q1"):
        assert_no_leak(qids, np.array([True, False, False]), np.array([False, True, True]))


def test_cross_fit_trains_only_on_other_queries_and_the_sample(monkeypatch):
    human, judges = synthetic()
    data = align(human, judges)
    seen = []

    def spy(train):
        seen.append(train.copy())
        return np.tile([0.25, 0.25, 0.25, 0.25], (len(train), 1))

    checked = []
    real = heldout.assert_no_leak
    monkeypatch.setattr(heldout, "assert_no_leak",
                        lambda q, tr, te: (checked.append(1), real(q, tr, te)))
    pred, fold = cross_fit(data, spy, folds=4, seed=1, pair_count=50)
    assert len(checked) == 4 and not np.isnan(pred).any()
    for f, train in enumerate(seen):
        assert train.sum() == 50
        assert not set(data.qids[train]) & set(data.qids[fold == f])


def test_calibration_and_panel_out_of_fold_predictions_cover_every_pair():
    human, judges = synthetic(seed=2)
    data = align(human, judges)
    assert data.labels.shape == (360, 2) and (data.labels[:, 1] == -1).any()
    cal, _ = cross_fit(data, calibrate_fit_predict(data, 1), folds=3)
    graded = data.labels[:, 1] >= 0
    assert not np.isnan(cal[graded]).any() and np.isnan(cal[~graded]).all()
    pan, _ = cross_fit(data, panel_fit_predict(data, best=1), folds=3)
    np.testing.assert_allclose(pan.sum(axis=1), 1.0)


def test_held_out_predictions_differ_from_in_sample_ones():
    human, judges = synthetic(seed=5)
    data = align(human, judges)
    fp = calibrate_fit_predict(data, 0, strength=0.0)
    outside, _ = cross_fit(data, fp, folds=3)
    inside = fp(data.human >= 0)
    assert not np.allclose(outside, inside)


def test_out_of_fold_is_cross_fit_and_thresholds_are_fitted_inside_each_fold():
    human, judges = synthetic(seed=3)
    data = align(human, judges)
    fit = calibrate_fit_predict(data, 1)
    plain = out_of_fold(data, fit, folds=3, seed=1, pair_count=100)
    np.testing.assert_array_equal(plain, cross_fit(data, fit, folds=3, seed=1, pair_count=100)[0])
    cut = out_of_fold(data, fit, folds=3, seed=1, decision="thresholds")
    graded = data.labels[:, 1] >= 0
    assert set(np.unique(cut[graded])) <= {0.0, 1.0}  # one-hot: the cut grade
    grades = decided_grades(cut, "thresholds")
    assert (grades[~graded] == -1).all() and (grades[graded] == cut[graded].argmax(axis=1)).all()
    assert (decided_grades(plain, "mode")[graded] == plain[graded].argmax(axis=1)).all()
