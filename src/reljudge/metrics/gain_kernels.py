"""Gain-based measures over the ranked matrices (``kernels.Ranked``): DCG and nDCG (with
trec_eval's per-grade gains), ERR, rank-biased precision, and trec_eval's gain measures
(G, binG, ndcg_rel, Rndcg)."""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def level_gains(text: str) -> dict[int, float]:
    """A gain per grade, as trec_eval's ndcg.1=3,2=9: {1: 3.0, 2: 9.0}; grades not named
    keep their own value as gain. A MeasureError names what is wrong."""
    out: dict[int, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, eq, gain = part.partition("=")
        try:
            out[int(level)] = float(gain)
        except ValueError:
            raise MeasureError(f"gains {text!r}: expected GRADE=GAIN pairs separated by "
                               f"commas, e.g. '1=3,2=9', found {part!r}") from None
        if not eq:
            raise MeasureError(f"gains {text!r}: expected GRADE=GAIN, found {part!r}")
        # a negative gain puts nDCG outside [0, 1]
        if not 0.0 <= out[int(level)] < math.inf:
            raise MeasureError(f"gains {text!r}: a gain must be a number >= 0 (nDCG would "
                               f"leave [0, 1]), found {part!r}")
    return out


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
    ``level_gains`` reads it)."""
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


@dataclass(frozen=True)
class GainCurves:
    """What trec_eval's gain measures (G, ndcg_rel, Rndcg) walk along, kept sparse: the run's
    gains where it has them (grades above 0), with its DCG up to each; the ideal gains
    (judged grades descending, then 0) with the ideal DCG up to each. Every DCG is the
    running sum, rank after rank, of the dense curves these replace (a rank without a gain
    adds an exact 0), so every value keeps its last bit. ``width``: the dense curves' width
    (the longer ranking, and the rank past both), whose rows the row sums keep."""

    width: int
    #: the row of each of the run's gains, row-major
    rows: np.ndarray
    #: its rank (0-based)
    cols: np.ndarray
    #: its gain (float64)
    gain: np.ndarray
    #: (n, most gains of a row): the run's DCG at each row's i-th gain
    run_dcg: np.ndarray
    #: (n,) where each row's gains start in ``rows``
    first: np.ndarray
    #: (n, ideal width + 1) the ideal gains, 0 after them
    best: np.ndarray
    #: (n, ideal width) the ideal DCG at each rank
    ideal_dcg: np.ndarray

    def run_dcg_to(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The run's DCG over the ranks 0..cols[i] of row rows[i]."""
        span = self.width + 1
        at = np.searchsorted(self.rows * span + self.cols, rows * span + cols, "right")
        # the row's gains up to that rank
        j = at - self.first[rows]
        out = np.zeros(len(rows))
        has = j > 0
        out[has] = self.run_dcg[rows[has], j[has] - 1]
        return out

    def ideal_dcg_to(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The ideal DCG over the ranks 0..cols[i] of row rows[i] (constant past the ideal
        gains)."""
        m = self.ideal_dcg.shape[1]
        return self.ideal_dcg[rows, np.minimum(cols, m - 1)] if m else np.zeros(len(rows))

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's whole DCG: the run's, the ideal's."""
        n = len(self.first)
        m = self.ideal_dcg.shape[1]
        return (self.run_dcg_to(np.arange(n), np.full(n, self.width - 1)),
                self.ideal_dcg[:, -1] if m else np.zeros(n))


def _gain_curves(r: Ranked) -> GainCurves:
    """``GainCurves`` of a ranking."""
    n, m = r.grades.shape[0], r.ideal.shape[1]
    width = max(r.grades.shape[1], m) + 1
    disc = discount(width)
    rows, cols = np.nonzero(r.grades > 0)
    gain = r.grades[rows, cols].astype(np.float64)
    counts = np.bincount(rows, minlength=n)
    first = np.cumsum(counts) - counts
    run_dcg = np.zeros((n, int(counts.max()) if n else 0))
    run_dcg[rows, np.arange(len(rows)) - first[rows]] = gain * disc[cols]
    np.cumsum(run_dcg, axis=1, out=run_dcg)
    best = np.zeros((n, m + 1))
    best[:, :m] = np.maximum(r.ideal, 0)
    return GainCurves(width, rows, cols, gain, run_dcg, first, best,
                      np.cumsum(best[:, :m] * disc[:m], axis=1))


def _curves(r: Ranked) -> GainCurves:
    return r.memo(("gain curves",), lambda: _gain_curves(r))


def ndcg_rel(r: Ranked) -> np.ndarray:
    """trec_eval's ndcg_rel: nDCG averaged over the relevant documents: at each retrieved
    document with a gain, DCG / ideal DCG so far; each relevant document not retrieved counts
    the final ratio; divided by the documents with a gain in the qrels."""
    c = _curves(r)
    n = len(c.first)
    n_rel = (c.best > 0).sum(axis=1)
    ideal_so_far = c.ideal_dcg_to(c.rows, c.cols)
    ratio = np.zeros(len(c.rows))
    np.divide(c.run_dcg[c.rows, np.arange(len(c.rows)) - c.first[c.rows]], ideal_so_far,
              out=ratio, where=ideal_so_far > 0)
    at = np.bincount(c.rows, minlength=n)
    run_total, ideal_total = c.totals()
    final = np.zeros(n)
    np.divide(run_total, ideal_total, out=final, where=ideal_total > 0)
    total = row_sums((n, c.width), c.rows, c.cols, ratio) + (n_rel - at) * final
    out = np.zeros(n)
    np.divide(total, n_rel, out=out, where=(n_rel > 0) & (total > 0))
    return out


def r_ndcg(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's Rndcg: the mean of DCG / ideal DCG at each rank where the ideal gain
    drops (the ratio over the ranks before it; past the run's end, the run's whole DCG),
    and at the run's end when it runs more than one rank past the ideal ones."""
    c = _curves(r)
    n, best = len(c.first), c.best
    length = r.length
    t = (best > 0).sum(axis=1)
    # ranks i (1-based, column i - 1) where the ideal gain drops: within the ideal gains
    m = best.shape[1] - 1
    i = np.arange(1, m + 1)
    rows, cols = np.nonzero((best[:, 1:] != best[:, :-1]) & (i[None, :] <= t[:, None]))
    num = c.run_dcg_to(rows, np.minimum(cols, np.maximum(length, 1)[rows] - 1))
    ideal_before = c.ideal_dcg_to(rows, cols)
    ratio = np.zeros(len(rows))
    np.divide(num, ideal_before, out=ratio, where=ideal_before > 0)
    total = row_sums((n, c.width - 1), rows, cols, ratio)
    count = np.bincount(rows[ideal_before > 0], minlength=n).astype(np.float64)
    _, ideal_total = c.totals()
    tail = (length > t + 1) & (ideal_total > 0)
    last = c.run_dcg_to(np.arange(n), np.maximum(length, 1) - 1)
    total += np.where(tail, last / np.where(ideal_total > 0, ideal_total, 1.0), 0.0)
    count += tail
    out = np.zeros(n)
    np.divide(total, count, out=out, where=(count > 0) & (num_rel(r, rel) > 0))
    return out


def gain_g(r: Ranked) -> np.ndarray:
    """trec_eval's G: the sum over retrieved documents of gain / log2(2 + cost - gained),
    cost the ideal gains so far (each at least 1), gained the run's gains so far; divided by
    the sum of the ideal gains."""
    c = _curves(r)
    # only ranks with a gain add a term
    rows, cols = c.rows, c.cols
    # each row's running sum of its gains (whole grades, summed as integers: exact) is the
    # running sum over every row less that of the rows before it
    grades = r.grades[rows, cols]
    so_far = np.cumsum(grades)
    gained = (so_far - (so_far - grades)[c.first[rows]]).astype(np.float64) if len(rows) \
        else np.zeros(0)
    # the ideal gains end there: the cost's running sum stops growing
    m = c.best.shape[1] - 1
    cost = cols + 1.0
    if m:
        cost += np.cumsum(np.maximum(c.best[:, :m] - 1.0, 0.0), axis=1)[
            rows, np.minimum(cols, m - 1)]
    total = np.zeros(len(c.first))
    np.add.at(total, rows, c.gain / np.log2(2.0 + cost - gained))
    ideal = c.best.sum(axis=1)
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
