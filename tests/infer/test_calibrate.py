"""Calibration of one judge: P(human | judge) from a human sample."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.errors import InputError
from reljudge.infer.calibrate import decide, expected_grade, fit_calibration, one_hot

# P(human grade | judge grade): a lenient judge whose 3s are mostly human 2s
TRUE = np.array([[0.80, 0.15, 0.05, 0.00],
                 [0.50, 0.35, 0.10, 0.05],
                 [0.20, 0.40, 0.30, 0.10],
                 [0.05, 0.15, 0.50, 0.30]])


def synthetic(n, seed=0):
    rng = np.random.default_rng(seed)
    judge = rng.integers(0, 4, n)
    cdf = TRUE[judge].cumsum(axis=1)
    human = (rng.random(n)[:, None] > cdf).sum(axis=1)
    return judge, human


def test_recovers_a_known_confusion_matrix_from_synthetic_labels():
    judge, human = synthetic(40_000)
    model = fit_calibration(judge, human, strength=4.0)
    assert np.abs(model.table - TRUE).max() < 0.02
    assert model.pairs == 40_000 and model.counts.sum() == 40_000


def test_few_pairs_shrink_toward_the_human_marginal():
    judge, human = synthetic(50, seed=1)
    judge[judge == 3] = 2  # the sample never shows judge grade 3
    model = fit_calibration(judge, human, strength=4.0, center="marginal")
    np.testing.assert_allclose(model.table[3], model.prior)
    np.testing.assert_allclose(model.table.sum(axis=1), 1.0)
    # hand-computed row for judge grade 0: (counts + 4 * prior) / (n0 + 4)
    n0 = (judge == 0).sum()
    row = (np.bincount(human[judge == 0], minlength=4) + 4 * model.prior) / (n0 + 4)
    np.testing.assert_allclose(model.table[0], row)


def test_the_judge_centred_prior_trusts_the_judge_where_the_sample_is_thin():
    judge, human = synthetic(50, seed=1)
    judge[judge == 3] = 2
    model = fit_calibration(judge, human, strength=10.0)  # center="judge" by default
    np.testing.assert_allclose(model.table[3], 0.9 * np.eye(4)[3] + 0.1 * model.prior)
    n1 = (judge == 1).sum()
    centre = 0.9 * np.eye(4)[1] + 0.1 * model.prior
    row = (np.bincount(human[judge == 1], minlength=4) + 10 * centre) / (n1 + 10)
    np.testing.assert_allclose(model.table[1], row)
    # a huge prior leaves every grade where the judge put it
    assert decide(fit_calibration(judge, human, strength=1e6).table, "median").tolist() == \
        [0, 1, 2, 3]
    with pytest.raises(InputError, match="unknown prior centre"):
        fit_calibration(judge, human, center="identity")


def test_zero_strength_is_the_raw_conditional_frequency():
    judge = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    human = np.array([0, 1, 1, 1, 2, 2, 3, 2])
    t = fit_calibration(judge, human, strength=0.0).table
    np.testing.assert_allclose(t[1], [0, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(t[3], [0, 0, 0.5, 0.5])


def test_judge_probabilities_are_soft_counts_and_a_mixture_on_predict():
    judge, human = synthetic(2_000, seed=2)
    hard = fit_calibration(judge, human)
    soft = fit_calibration(None, human, probs=one_hot(judge))
    np.testing.assert_allclose(hard.table, soft.table)
    p = np.array([[0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_allclose(hard.predict(probs=p)[0], 0.5 * hard.table[0] + 0.5 * hard.table[1])


def test_bad_inputs_are_named():
    with pytest.raises(InputError, match="grade 4 at position 1"):
        fit_calibration(np.array([0, 4]), np.array([0, 1]))
    with pytest.raises(InputError, match="no human-labelled pairs"):
        fit_calibration(np.array([], int), np.array([], int))
    with pytest.raises(InputError, match="sum to 1"):
        fit_calibration(None, np.array([0]), probs=np.array([[0.5, 0.1, 0.0, 0.0]]))
    with pytest.raises(InputError, match="unknown decision"):
        decide(np.eye(4), "vote")


def test_decisions_by_hand():
    p = np.array([[0.4, 0.05, 0.15, 0.4],   # mode tie -> lower; median 2; E = 1.55 -> 2
                  [0.1, 0.2, 0.3, 0.4],     # mode 3; median 2; E = 2.0
                  [0.6, 0.3, 0.1, 0.0]])    # mode 0; median 0; E = 0.5 -> 1 (half up)
    assert decide(p, "mode").tolist() == [0, 3, 0]
    assert decide(p, "median").tolist() == [2, 2, 0]
    assert decide(p, "expected").tolist() == [2, 2, 1]
    np.testing.assert_allclose(expected_grade(p), [1.55, 2.0, 0.5])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 20), min_size=4, max_size=4), min_size=1, max_size=30))
def test_median_decision_minimises_expected_absolute_error(rows):
    counts = np.array(rows, dtype=float) + 1e-3
    p = counts / counts.sum(axis=1, keepdims=True)
    loss = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :])  # (decision, grade)
    best = (p @ loss.T).min(axis=1)
    got = (p @ loss.T)[np.arange(len(p)), decide(p, "median")]
    np.testing.assert_allclose(got, best, atol=1e-12)
