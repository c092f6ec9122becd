"""Kernels that compute a measure's terms only where they count (a relevant rank, a rank with a
gain, a drop of the ideal gain) give, to the last bit, what the same formula over the whole
(queries x depth) matrix gives: the dense formulas are kept here as the reference."""

from __future__ import annotations

import numpy as np
import pytest

from reljudge.metrics import ranking
from reljudge.metrics.gain_kernels import gain_g, ndcg_rel, r_ndcg
from reljudge.metrics.kernels import (
    INFAP_EPSILON,
    UNJUDGED,
    Ranked,
    bpref,
    discount,
    inf_ap,
    num_rel,
    relevant_ranked,
    relevant_so_far,
    row_sums,
)


def _gain_curves(r: Ranked) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The dense curves: the run's gains, the ideal gains and the cumulative DCG of each, over
    the common width (the longer ranking, and the rank past both)."""
    width = max(r.grades.shape[1], r.ideal.shape[1]) + 1
    got = np.zeros((r.grades.shape[0], width))
    got[:, :r.grades.shape[1]] = np.maximum(r.grades, 0)
    best = np.zeros_like(got)
    best[:, :r.ideal.shape[1]] = np.maximum(r.ideal, 0)
    disc = discount(width)
    return got, best, np.cumsum(got * disc, axis=1), np.cumsum(best * disc, axis=1)


def dense_bpref(r: Ranked, rel: int) -> np.ndarray:
    g = r.grades
    above = np.cumsum((g >= 0) & (g < rel), axis=1)
    nr = num_rel(r, rel)
    n_nonrel = ((r.ideal >= 0) & (r.ideal < rel)).sum(axis=1)
    denom = np.minimum(n_nonrel, nr).astype(np.float64)[:, None]
    frac = np.zeros(g.shape)
    np.divide(np.minimum(above, nr[:, None]), denom, out=frac, where=(above > 0) & (denom > 0))
    total = np.where(relevant_ranked(r, None, rel), 1.0 - frac, 0.0).sum(axis=1)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


def dense_inf_ap(r: Ranked, rel: int) -> np.ndarray:
    g = r.grades
    rel_above = relevant_so_far(r, rel)[:, :-1]
    nonrel_above = np.cumsum((g >= 0) & (g < rel), axis=1)
    pooled_above = np.cumsum((g < 0) & (g > UNJUDGED), axis=1)
    j = np.arange(g.shape[1], dtype=np.float64)[None, :]
    value = (1.0 / (j + 1.0) + (j / (j + 1.0))
             * ((rel_above + nonrel_above + pooled_above) / np.maximum(j, 1.0))
             * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)))
    value = np.where(j == 0, 1.0, value)
    total = np.where(relevant_ranked(r, None, rel), value, 0.0).sum(axis=1)
    nr = num_rel(r, rel)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


def dense_ndcg_rel(r: Ranked) -> np.ndarray:
    got, best, rdcg, idcg = _gain_curves(r)
    n_rel = (best > 0).sum(axis=1)
    ratio = np.zeros_like(rdcg)
    np.divide(rdcg, idcg, out=ratio, where=idcg > 0)
    final = np.zeros(len(n_rel))
    np.divide(rdcg[:, -1], idcg[:, -1], out=final, where=idcg[:, -1] > 0)
    total = np.where(got > 0, ratio, 0.0).sum(axis=1) + (n_rel - (got > 0).sum(axis=1)) * final
    out = np.zeros(len(n_rel))
    np.divide(total, n_rel, out=out, where=(n_rel > 0) & (total > 0))
    return out


def dense_r_ndcg(r: Ranked, rel: int) -> np.ndarray:
    got, best, rdcg, idcg = _gain_curves(r)
    n, width = got.shape
    t = (best > 0).sum(axis=1)
    i = np.arange(1, width)
    drop = (best[:, 1:] != best[:, :-1]) & (i[None, :] <= t[:, None])
    before = np.minimum(i[None, :] - 1, np.maximum(r.length, 1)[:, None] - 1)
    ratio = np.zeros((n, width - 1))
    np.divide(np.take_along_axis(rdcg, before, axis=1), idcg[:, :-1], out=ratio,
              where=idcg[:, :-1] > 0)
    total = np.where(drop, ratio, 0.0).sum(axis=1)
    count = (drop & (idcg[:, :-1] > 0)).sum(axis=1).astype(np.float64)
    tail = (r.length > t + 1) & (idcg[:, -1] > 0)
    last = np.take_along_axis(rdcg, np.maximum(r.length, 1)[:, None] - 1, axis=1)[:, 0]
    total += np.where(tail, last / np.where(idcg[:, -1] > 0, idcg[:, -1], 1.0), 0.0)
    count += tail
    out = np.zeros(n)
    np.divide(total, count, out=out, where=(count > 0) & (num_rel(r, rel) > 0))
    return out


def dense_gain_g(r: Ranked) -> np.ndarray:
    got, best, _, _ = _gain_curves(r)
    rows, cols = np.nonzero(got)
    gained = np.cumsum(got, axis=1)[rows, cols]
    cost = (cols + 1.0) + np.cumsum(np.maximum(best - 1.0, 0.0), axis=1)[rows, cols]
    total = np.zeros(got.shape[0])
    np.add.at(total, rows, got[rows, cols] / np.log2(2.0 + cost - gained))
    ideal = best.sum(axis=1)
    out = np.zeros(len(total))
    np.divide(total, ideal, out=out, where=ideal > 0)
    return out


def random_rankings(seed: int) -> Ranked:
    """A ranking of random qrels (grades -1 to 4, some queries without one relevant document,
    others with every judged document relevant) and run (scores tied or not, runs of 0 to 60
    documents, longer or shorter than the query's judgments)."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(int(rng.integers(1, 30))):
        docs = [f"d{j}" for j in rng.permutation(150)[:int(rng.integers(0, 60))]]
        run[f"q{q}"] = {d: float(rng.integers(0, 4) if seed % 2 else rng.random()) for d in docs}
        judged = [f"d{j}" for j in rng.permutation(150)[:int(rng.integers(1, 50 if q % 2 else 4))]]
        low = 1 if q % 3 == 0 else -1  # every judged document relevant, or not
        qrels[f"q{q}"] = {d: int(rng.integers(low, 5)) for d in judged}
    return ranking.rank(qrels, run, all_queries=bool(seed % 3))[1]


@pytest.mark.parametrize("seed", range(60))
def test_the_sparse_kernels_give_the_dense_formulas_values_bit_for_bit(seed):
    r = random_rankings(seed)
    for rel in (1, 2, 3):
        assert np.array_equal(bpref(r, rel), dense_bpref(r, rel))
        assert np.array_equal(inf_ap(r, rel), dense_inf_ap(r, rel))
        assert np.array_equal(r_ndcg(r, rel), dense_r_ndcg(r, rel))
    assert np.array_equal(ndcg_rel(r), dense_ndcg_rel(r))
    assert np.array_equal(gain_g(r), dense_gain_g(r))


def test_row_sums_are_the_dense_matrixs_row_sums_to_the_last_bit():
    rng = np.random.default_rng(0)
    for width in (0, 1, 7, 8, 9, 127, 128, 129, 500):
        mask = rng.random((40, width)) < 0.2
        values = rng.standard_normal((40, width)) * 10.0 ** rng.integers(-8, 8, (40, width))
        rows, cols = np.nonzero(mask)
        assert np.array_equal(row_sums(mask.shape, rows, cols, values[rows, cols]),
                              np.where(mask, values, 0.0).sum(axis=1))
