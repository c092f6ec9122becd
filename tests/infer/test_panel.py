"""Dawid–Skene panels anchored by a human sample."""

from __future__ import annotations

import numpy as np
import pytest

from reljudge.errors import InputError
from reljudge.infer.panel import fit_panel

PRIOR = np.array([0.45, 0.28, 0.18, 0.09])


def confusion(acc, lean):
    """A judge's P(grade | true grade): right with prob acc, else one grade off toward lean."""
    c = np.zeros((4, 4))
    for z in range(4):
        c[z, z] = acc
        other = z + lean if 0 <= z + lean < 4 else z - lean
        c[z, other] += 1 - acc
    return c


TRUE = np.stack([confusion(0.8, +1), confusion(0.6, -1), confusion(0.7, +1),
                 confusion(0.5, -1), confusion(0.9, +1)])


def synthetic(n, seed=0, missing=0.3):
    rng = np.random.default_rng(seed)
    z = rng.choice(4, size=n, p=PRIOR)
    cdf = TRUE[:, z, :].cumsum(axis=2)  # (R, n, K)
    labels = (rng.random((len(TRUE), n))[:, :, None] > cdf).sum(axis=2).T
    labels[rng.random(labels.shape) < missing] = -1  # judges cover different pairs
    return z, labels


def test_recovers_known_confusion_matrices_with_missing_labels():
    z, labels = synthetic(30_000)
    human = np.where(np.arange(len(z)) < 1_000, z, -1)  # a 1,000-pair human sample
    panel = fit_panel(labels, human, strength=1.0)
    assert panel.converged and panel.anchored == 1_000
    assert np.abs(panel.confusion - TRUE).max() < 0.03
    assert np.abs(panel.prior - PRIOR).max() < 0.02
    post = panel.predict(labels)
    acc = (post.argmax(axis=1) == z)[1_000:].mean()
    assert acc > max((labels[:, r] == z).mean() for r in range(len(TRUE)))


@pytest.mark.slow  # an EM simulation (the recovery test above is fast)
def test_em_uses_the_unlabelled_pairs():
    z, labels = synthetic(20_000, seed=3)
    human = np.where(np.arange(len(z)) < 100, z, -1)
    naive = fit_panel(labels, human, em=False)
    em = fit_panel(labels, human, em=True)
    assert naive.iterations == 0 and em.iterations > 0
    assert np.abs(em.confusion - TRUE).max() < np.abs(naive.confusion - TRUE).max()


def test_a_pair_no_judge_graded_gets_the_prior_and_each_absent_judge_is_no_evidence():
    z, labels = synthetic(5_000, seed=4)
    panel = fit_panel(labels, np.where(np.arange(5_000) < 500, z, -1))
    np.testing.assert_allclose(panel.predict(np.full((1, 5), -1))[0], panel.prior)
    one = np.array([[2, -1, -1, -1, -1]])
    by_hand = panel.prior * panel.confusion[0, :, 2]
    np.testing.assert_allclose(panel.predict(one)[0], by_hand / by_hand.sum())


def test_the_judge_centred_prior_pulls_confusions_toward_the_diagonal():
    z, labels = synthetic(2_000, seed=5)
    human = np.where(np.arange(len(z)) < 40, z, -1)
    flat = fit_panel(labels, human, strength=50.0, em=False)
    trusting = fit_panel(labels, human, strength=50.0, em=False, center="judge")
    assert trusting.center == "judge" and flat.center == "marginal"
    diag = np.diagonal(trusting.confusion, axis1=1, axis2=2)
    assert (diag > np.diagonal(flat.confusion, axis1=1, axis2=2)).all()
    with pytest.raises(InputError, match="unknown prior centre"):
        fit_panel(labels, human, center="x")


def test_panel_needs_an_anchor_and_matching_shapes():
    with pytest.raises(InputError, match="at least one human-labelled pair"):
        fit_panel(np.zeros((3, 2), int), np.full(3, -1))
    with pytest.raises(InputError, match="do not match"):
        fit_panel(np.zeros((3, 2), int), np.zeros(2, int))
    panel = fit_panel(np.zeros((3, 2), int), np.zeros(3, int))
    with pytest.raises(InputError, match="labels of 2 judges"):
        panel.predict(np.zeros((1, 3), int))
