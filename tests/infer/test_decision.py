"""Thresholds on the expected grade, fitted on the human sample to maximise quadratic kappa."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.errors import InputError
from reljudge.infer.calibrate import decide
from reljudge.infer.decision import Thresholds, fit_thresholds
from reljudge.infer.heldout import (
    align,
    cross_fit,
    mean_fit_predict,
    panel_fit_predict,
    query_folds,
    select_by_inner_cv,
    selected_fit_predict,
    thresholded,
)
from reljudge.stats import agreement as ag
from reljudge.trec_data import Qrels


def qk(human, grades):
    return float(ag.cohen_kappa(ag.confusion(human, grades)[None], "quadratic")[0])


def test_a_compressed_but_ordered_score_is_cut_back_to_the_human_grades():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 400)
    score = 1.0 + 0.1 * human + rng.uniform(0, 0.05, 400)  # every grade squeezed near 1.3
    rule = fit_thresholds(score, human)
    np.testing.assert_array_equal(rule.apply(score), human)
    assert rule.kappa_quadratic == pytest.approx(1.0)
    assert (decide(np.eye(4)[np.floor(score + 0.5).astype(int)], "mode") == 1).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-3, 3)), min_size=8, max_size=120))
def test_the_fit_reports_its_own_kappa_and_is_no_worse_than_matching_the_marginal(rows):
    human = np.array([h for h, _ in rows])
    score = np.array([h + x for h, x in rows])
    if len(set(human.tolist())) < 2:
        return
    rule = fit_thresholds(score, human)
    grades = rule.apply(score)
    assert ((grades >= 0) & (grades <= 3)).all()
    # the vectorised search and the audit's statistic agree
    assert rule.kappa_quadratic == pytest.approx(qk(human, grades), abs=1e-9)
    share = np.cumsum(np.bincount(human, minlength=4))[:-1] / len(human)
    start = Thresholds(tuple(np.quantile(score, share)), len(human), 0.0)
    assert rule.kappa_quadratic >= qk(human, start.apply(score)) - 1e-9
    assert list(rule.cuts) == sorted(rule.cuts)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=50), st.floats(-2, 2))
def test_applying_cuts_is_monotone_in_the_score(scores, shift):
    rule = Thresholds((-1.0, 0.0 + shift / 10, 1.0 + abs(shift)), 1, 0.0)
    s = np.sort(np.array(scores))
    g = rule.apply(s)
    assert (np.diff(g) >= 0).all() and g.min() >= 0 and g.max() <= 3


def test_bad_inputs_are_named():
    with pytest.raises(InputError, match="scores for"):
        fit_thresholds(np.zeros(3), np.zeros(4, dtype=int))
    with pytest.raises(InputError, match="finite"):
        fit_thresholds(np.array([0.0, np.nan]), np.array([0, 1]))
    with pytest.raises(InputError, match="no human-labelled"):
        fit_thresholds(np.zeros(0), np.zeros(0, dtype=int))
    with pytest.raises(InputError, match="outside 0..3"):
        fit_thresholds(np.zeros(2), np.array([0, 4]))


def two_biased_judges(nq=10, per=40, seed=0, noise=0.0):
    """One judge a grade too lenient, one a grade too strict (both capped): their mean is a
    strictly increasing function of the human grade, but no fixed rounding recovers it.
    With ``noise``, each label is replaced by a random grade with that probability."""
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{q}_{i}", int(rng.integers(0, 4))) for q in range(nq) for i in range(per)]

    def qrels(f):
        grades = np.array([f(r[2]) for r in rows])
        flip = rng.random(len(rows)) < noise
        grades[flip] = rng.integers(0, 4, flip.sum())
        return Qrels.from_arrays([r[0] for r in rows], [r[1] for r in rows], grades)

    return qrels(lambda g: g), {"lenient": qrels(lambda g: min(3, g + 1)),
                                "strict": qrels(lambda g: max(0, g - 1))}


def test_thresholded_mean_panel_recovers_the_human_grades_out_of_fold():
    human, judges = two_biased_judges()
    data = align(human, judges)
    fp = mean_fit_predict(data)
    out, _ = cross_fit(data, thresholded(data, fp), folds=5, pair_count=100)
    for rule in ("mode", "median", "expected"):
        np.testing.assert_array_equal(decide(out, rule), data.human)
    raw, _ = cross_fit(data, fp, folds=5)
    for rule in ("mode", "median", "expected"):
        assert qk(data.human, decide(raw, rule)) < 0.99
    ds, _ = cross_fit(data, thresholded(data, panel_fit_predict(data)), folds=5, pair_count=100)
    np.testing.assert_array_equal(decide(ds, "mode"), data.human)


def test_thresholds_never_see_the_human_labels_of_the_fold_they_predict():
    human, judges = two_biased_judges(seed=3, noise=0.4)
    data = align(human, judges)
    fold = query_folds(data.qids, 4, seed=7)
    base, _ = cross_fit(data, thresholded(data, mean_fit_predict(data)), folds=4, seed=7)
    rng = np.random.default_rng(1)
    poisoned = data.human.copy()
    poisoned[fold == 2] = rng.integers(0, 4, (fold == 2).sum())
    other = align(human, judges)
    object.__setattr__(other, "human", poisoned)
    again, _ = cross_fit(other, thresholded(other, mean_fit_predict(other)), folds=4, seed=7)
    np.testing.assert_array_equal(again[fold == 2], base[fold == 2])
    assert not np.array_equal(again[fold != 2], base[fold != 2])


def test_inner_cv_picks_the_informative_panel_from_training_labels_only():
    human, judges = two_biased_judges(seed=6, noise=0.1)
    pairs = [(q, d) for q, d, _ in human]
    noise = Qrels.from_arrays([q for q, _ in pairs], [d for _, d in pairs],
                              np.random.default_rng(0).integers(0, 4, len(pairs)))
    data = align(human, {**judges, "random": noise})
    cands = {"random alone": thresholded(data, mean_fit_predict(data, [2])),
             "lenient + strict": thresholded(data, mean_fit_predict(data, [0, 1]))}
    train = query_folds(data.qids, 5, seed=0) != 0
    sel = select_by_inner_cv(data, cands, train)
    assert sel.chosen == "lenient + strict"
    assert sel.scores["lenient + strict"] > 0.8 > 0.2 > sel.scores["random alone"]
    # labels outside the training pairs are never read: poisoning them changes nothing
    other = align(human, {**judges, "random": noise})
    object.__setattr__(other, "human", np.where(train, data.human, 3 - data.human))
    cands2 = {"random alone": thresholded(other, mean_fit_predict(other, [2])),
              "lenient + strict": thresholded(other, mean_fit_predict(other, [0, 1]))}
    assert select_by_inner_cv(other, cands2, train) == sel
    record = []
    out, _ = cross_fit(data, selected_fit_predict(data, cands, record=record), folds=5)
    assert [r.chosen for r in record] == ["lenient + strict"] * 5
    assert qk(data.human, decide(out, "mode")) > 0.8


def test_a_calibrated_judge_cut_at_thresholds_records_its_cuts():
    from reljudge.infer.derive import calibrate_judge

    human, judges = two_biased_judges(seed=8)
    d = calibrate_judge(human, judges["strict"], judge_name="strict", human_name="h",
                        pair_count=200, folds=4, decision="thresholds")
    rule = d.fitted_on["decision"]
    assert len(rule["cuts"]) == 3 and rule["pairs"] == 200
    assert set(d.probs.sum(axis=1)) == {1.0} and set(d.probs.max(axis=1)) == {1.0}
    # the strict judge merges human 0 and 1 (both graded 0): at best three grades survive
    held = d.heldout["calibrated:strict"]
    assert held["kappa_quadratic"] >= d.heldout["strict"]["kappa_quadratic"]
    assert d.fitted_on["heldout"]["decision"] == "thresholds"
