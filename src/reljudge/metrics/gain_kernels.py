"""Gain-based measures over the ranked matrices (``kernels.Ranked``): DCG and nDCG (with
trec_eval's per-grade gains), ERR, rank-biased precision, and trec_eval's gain measures
(G, binG, ndcg_rel, Rndcg)."""

from __future__ import annotations

import numpy as np

from reljudge.errors import MeasureError
from reljudge.metrics.kernels import (
    Ranked,
    _upto,
    discount,
    num_rel,
    relevant,
    relevant_positions,
    row_sums,
)
from reljudge.metrics.measures import level_gains


def gains(grades: np.ndarray, dcg: str) -> np.ndarray:
    """Gain of each grade: the grade itself or 2^grade - 1; unjudged, padding, negatives -> 0."""
    g = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(g) - 1.0 if dcg == "exp-log2" else g


def dcg_of(gain: np.ndarray) -> np.ndarray:
    """DCG of each row of a gain matrix, in the given order."""
    return gain @ discount(gain.shape[1]) if gain.shape[1] else np.zeros(gain.shape[0])


def dcg_at(r: Ranked, ideal: bool, k: int | None, dcg: str) -> np.ndarray:
    """DCG@k of the run's rankings (or of the ideal ones), computed once for every cutoff at
    or past the matrix's width (nDCG, nDCG@500 and nDCG@1000 of 500 documents: one DCG)."""
    matrix = r.ideal if ideal else r.grades
    upto = None if k is None or k >= matrix.shape[1] else k
    return r.memo(("dcg", ideal, upto, dcg), lambda: dcg_of(gains(_upto(matrix, upto), dcg)))


def mapped_gains(grades: np.ndarray, given: dict[int, float]) -> np.ndarray:
    """Gain of each grade under trec_eval's per-grade gains (ndcg.1=3,2=9): a grade named
    has its gain, another its own value; unjudged, padding and negative grades 0."""
    out = np.maximum(grades, 0).astype(np.float64)
    for level, gain in given.items():
        out[grades == level] = gain
    return out


def ndcg(r: Ranked, k: int | None, dcg: str, ideal: str, given: str = "") -> np.ndarray:
    """nDCG@k; 0 for a query whose ideal DCG is 0. ``given``: per-grade gains (text, as
    ``measures.level_gains`` reads it)."""
    if given:
        table = level_gains(given)
        got = dcg_of(mapped_gains(_upto(r.grades, k), table))
        top = -np.sort(-np.maximum(mapped_gains(r.ideal, table), 0.0), axis=1)
        best = dcg_of(_upto(top, k))
    else:
        got = dcg_at(r, False, k, dcg)
        if ideal == "run":
            best = dcg_of(-np.sort(-gains(_upto(r.grades, k), dcg), axis=1))
        else:
            best = dcg_at(r, True, k, dcg)
    out = np.zeros_like(got)
    np.divide(got, best, out=out, where=best > 0)
    return out

def err(r: Ranked, k: int | None, max_grade: int) -> np.ndarray:
    """Expected reciprocal rank with stop probability (2^g - 1) / 2^max_grade. A judged grade
    above ``max_grade`` would make that probability exceed 1 and ERR leave [0, 1]: refused."""
    top = int(r.ideal.max()) if r.ideal.size else 0
    if top > max_grade:
        raise MeasureError(f"ERR(max_grade={max_grade}): the qrels hold grade {top}, whose stop "
                           f"probability (2^{top}-1)/2^{max_grade} exceeds 1 and would put ERR "
                           f"outside [0, 1]; use max_grade={top} or more (default 4)")
    stop = gains(_upto(r.grades, k), "exp-log2") / 2.0 ** max_grade
    if stop.shape[1] == 0:
        return np.zeros(stop.shape[0])
    reach = np.cumprod(1.0 - stop, axis=1)
    reach = np.hstack([np.ones((stop.shape[0], 1)), reach[:, :-1]])
    ranks = np.arange(1, stop.shape[1] + 1, dtype=np.float64)
    return (stop * reach / ranks).sum(axis=1)

def rbp(r: Ranked, k: int | None, p: float, rel: int, residual: bool, graded: bool = False,
        tail: bool = False) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel 2008), (1-p) sum p^(rank-1) over relevant ranks;
    ``graded``: over every rank, weighted by grade / the query's top grade in the qrels (when
    that is above 1; trec_eval 10's rbp). Or its residual, the same sum over the unjudged
    ranks (each could still be relevant); ``tail`` adds p^depth for the ranks past the run's
    end, when any rank is unjudged (trec_eval 10's rbp_resid)."""
    upto = r.grades.shape[1] if k is None else min(k, r.grades.shape[1])
    weight = (1.0 - p) * p ** np.arange(upto, dtype=np.float64)
    grades = r.grades[:, :upto]
    if residual:
        mask = r.unjudged[:, :upto]
        out = mask @ weight if upto else np.zeros(r.grades.shape[0])
        if tail:
            depth = r.length if k is None else np.minimum(r.length, k)
            out = np.where(mask.any(axis=1), out + p ** depth, 0.0) if upto else out
        return out
    if graded:
        top = np.maximum(r.ideal.max(axis=1, initial=0), 1).astype(np.float64)
        return (np.maximum(grades, 0) / top[:, None]) @ weight if upto else \
            np.zeros(r.grades.shape[0])
    return relevant(grades, rel) @ weight if upto else np.zeros(r.grades.shape[0])


def _gain_curves(r: Ranked) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What trec_eval's gain measures (G, ndcg_rel, Rndcg) walk along, over a common width:
    the run's gains (grades, 0 for unjudged and negative ones), the ideal gains (judged
    grades descending, then 0), and the cumulative DCG of each."""
    width = max(r.grades.shape[1], r.ideal.shape[1]) + 1  # and the rank past both
    got = np.zeros((r.grades.shape[0], width))
    got[:, :r.grades.shape[1]] = np.maximum(r.grades, 0)
    best = np.zeros_like(got)
    best[:, :r.ideal.shape[1]] = np.maximum(r.ideal, 0)
    disc = discount(width)
    return got, best, np.cumsum(got * disc, axis=1), np.cumsum(best * disc, axis=1)


def _gain_at(r: Ranked) -> tuple[np.ndarray, np.ndarray]:
    """(row, rank) of every retrieved document with a gain, row-major (``_gain_curves``)."""
    return r.memo(("gain at",), lambda: np.nonzero(
        r.memo(("gain curves",), lambda: _gain_curves(r))[0]))


def ndcg_rel(r: Ranked) -> np.ndarray:
    """trec_eval's ndcg_rel: nDCG averaged over the relevant documents: at each retrieved
    document with a gain, DCG / ideal DCG so far; each relevant document not retrieved counts
    the final ratio; divided by the documents with a gain in the qrels."""
    got, best, rdcg, idcg = r.memo(("gain curves",), lambda: _gain_curves(r))
    rows, cols = _gain_at(r)
    n_rel = (best > 0).sum(axis=1)
    ideal_so_far = idcg[rows, cols]
    ratio = np.zeros(len(rows))
    np.divide(rdcg[rows, cols], ideal_so_far, out=ratio, where=ideal_so_far > 0)
    at = np.bincount(rows, minlength=got.shape[0])
    final = np.zeros(len(n_rel))
    np.divide(rdcg[:, -1], idcg[:, -1], out=final, where=idcg[:, -1] > 0)
    total = row_sums(got.shape, rows, cols, ratio) + (n_rel - at) * final
    out = np.zeros(len(n_rel))
    np.divide(total, n_rel, out=out, where=(n_rel > 0) & (total > 0))
    return out


def r_ndcg(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's Rndcg: the mean of DCG / ideal DCG at each rank where the ideal gain
    drops (the ratio over the ranks before it; past the run's end, the run's whole DCG),
    and at the run's end when it runs more than one rank past the ideal ones."""
    got, best, rdcg, idcg = r.memo(("gain curves",), lambda: _gain_curves(r))
    n, width = got.shape
    length = r.length
    t = (best > 0).sum(axis=1)  # ranks with an ideal gain
    # ranks i (1-based, column i - 1) where the ideal gain drops: within the ideal gains
    m = r.ideal.shape[1]  # best is wider: a column past the ideal gains
    i = np.arange(1, m + 1)
    rows, cols = np.nonzero((best[:, 1:m + 1] != best[:, :m]) & (i[None, :] <= t[:, None]))
    num = rdcg[rows, np.minimum(cols, np.maximum(length, 1)[rows] - 1)]
    ideal_before = idcg[rows, cols]
    ratio = np.zeros(len(rows))
    np.divide(num, ideal_before, out=ratio, where=ideal_before > 0)
    total = row_sums((n, width - 1), rows, cols, ratio)
    count = np.bincount(rows[ideal_before > 0], minlength=n).astype(np.float64)
    tail = (length > t + 1) & (idcg[:, -1] > 0)
    last = np.take_along_axis(rdcg, np.maximum(length, 1)[:, None] - 1, axis=1)[:, 0]
    total += np.where(tail, last / np.where(idcg[:, -1] > 0, idcg[:, -1], 1.0), 0.0)
    count += tail
    out = np.zeros(n)
    np.divide(total, count, out=out, where=(count > 0) & (num_rel(r, rel) > 0))
    return out


def gain_g(r: Ranked) -> np.ndarray:
    """trec_eval's G: the sum over retrieved documents of gain / log2(2 + cost - gained),
    cost the ideal gains so far (each at least 1), gained the run's gains so far; divided by
    the sum of the ideal gains."""
    got, best, _, _ = r.memo(("gain curves",), lambda: _gain_curves(r))
    rows, cols = _gain_at(r)  # only ranks with a gain add a term
    gain = got[rows, cols]
    # each row's running sum of its gains (whole grades, summed as integers: exact) is the
    # running sum over every row less that of the rows before it
    so_far = np.cumsum(r.grades[rows, cols])
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else rows
    gained = (so_far - np.repeat(so_far[first] - r.grades[rows[first], cols[first]],
                                 np.diff(np.r_[first, len(rows)]))).astype(np.float64)
    m = r.ideal.shape[1]  # the ideal gains end there: the cost's running sum stops growing
    cost = cols + 1.0
    if m:
        cost += np.cumsum(np.maximum(best[:, :m] - 1.0, 0.0), axis=1)[rows, np.minimum(cols,
                                                                                     m - 1)]
    total = np.zeros(got.shape[0])
    np.add.at(total, rows, gain / np.log2(2.0 + cost - gained))
    ideal = best.sum(axis=1)
    out = np.zeros(len(total))
    np.divide(total, ideal, out=out, where=ideal > 0)
    return out


def binary_g(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's binG: the sum over retrieved relevant documents of 1 / log2(2 + n), n the
    non-relevant documents ranked above it, divided by R (0 when none is retrieved)."""
    rows, cols, ith = relevant_positions(r, rel)
    n = r.grades.shape[0]
    total = np.zeros(n)
    if len(rows):
        np.add.at(total, rows, 1.0 / np.log2(2.0 + cols + 1 - ith))
    nr = num_rel(r, rel)
    out = np.zeros(n)
    np.divide(total, nr, out=out, where=nr > 0)
    return out
