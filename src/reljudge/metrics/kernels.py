"""Vectorised measure kernels over a (queries x depth) matrix. Pure numpy, no I/O. Here the
matrices and the counting measures (precision, recall, AP, bpref, ...); the gain-based ones
are ``gain_kernels``, and which kernel computes a measure is ``compute``.

Inputs are a ``Ranked`` batch: for each query row, the grades of its ranked documents
(``grades``, with ``UNJUDGED`` for unjudged documents and ``PAD`` beyond the ranking's end) and
the grades of all its judged documents sorted descending (``ideal``, padded with ``PAD``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from reljudge.choices import Compat
from reljudge.errors import MeasureError

#: beyond the end of a ranking / of a query's judgments
PAD = np.iinfo(np.int64).min
#: a retrieved document with no judgment
UNJUDGED = PAD + 1


@dataclass(frozen=True)
class Ranked:
    """The per-query matrices every kernel reads."""

    #: int64 (n, L): grade at each rank, UNJUDGED, or PAD
    grades: np.ndarray
    #: int64 (n,): documents retrieved per query
    length: np.ndarray
    #: int64 (n, M): the query's judged grades, descending, PAD-padded
    ideal: np.ndarray
    #: intermediate results several kernels share (see ``memo``), never compared or shown
    shared: dict = field(default_factory=dict, compare=False, repr=False)

    def memo(self, key: tuple, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per ranking and key (e.g. the interpolated precisions
        that 11pt_avg averages, computed already for iprec_at_recall)."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]

    @property
    def judged(self) -> np.ndarray:
        """Mask of retrieved and judged positions."""
        return self.grades > UNJUDGED

    @property
    def unjudged(self) -> np.ndarray:
        """Mask of retrieved positions without a usable judgment: absent from the qrels, or
        a negative grade (trec_eval's "in the pool but not judged")."""
        return (self.grades < 0) & (self.grades != PAD)


#: trec_eval's MIN_GEO_MEAN
GM_EPSILON = 0.00001


def geometric_mean(values: np.ndarray) -> np.ndarray | float:
    """trec_eval's geometric mean (gm_map, gm_bpref) of each column over the rows:
    exp(mean(log(max(value, GM_EPSILON)))), so that a 0 weighs in as 0.00001."""
    return np.exp(np.log(np.maximum(values, GM_EPSILON)).mean(axis=0))


_DISCOUNT_CACHE: dict[int, np.ndarray] = {}


def discount(n: int) -> np.ndarray:
    """1 / log2(rank + 1) for ranks 1..n."""
    d = _DISCOUNT_CACHE.get(n)
    if d is None:
        d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
        _DISCOUNT_CACHE[n] = d
    return d


def _upto(matrix: np.ndarray, k: int | None) -> np.ndarray:
    return matrix if k is None else matrix[:, :k]


def judged_only(r: Ranked) -> Ranked:
    """The condensed lists (Sakai 2007; trec_eval -J): the same rankings without the
    documents absent from the qrels or graded negative; later documents move up."""
    keep = r.grades >= 0
    n, width = r.grades.shape
    out = np.full((n, width), PAD, dtype=np.int64)
    rows, cols = np.nonzero(keep)
    pos = np.cumsum(keep, axis=1)[rows, cols] - 1
    out[rows, pos] = r.grades[rows, cols]
    return Ranked(out, keep.sum(axis=1), r.ideal)


def relevant(grades: np.ndarray, rel: int) -> np.ndarray:
    """Mask of documents with grade >= rel (unjudged and padding never are)."""
    return (grades >= rel) & (grades > UNJUDGED)


def num_rel(r: Ranked, rel: int) -> np.ndarray:
    """Relevant documents per query in the qrels."""
    return r.memo(("num_rel", rel), lambda: relevant(r.ideal, rel).sum(axis=1))


def relevant_ranked(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Mask of the relevant documents of each ranking's top k (computed once per ``rel``)."""
    return _upto(r.memo(("relevant", rel), lambda: relevant(r.grades, rel)), k)


def relevant_so_far(r: Ranked, rel: int) -> np.ndarray:
    """(n, width + 1): column j holds the relevant documents among each ranking's first j."""
    return r.memo(("relevant so far", rel), lambda: np.concatenate(
        [np.zeros((r.grades.shape[0], 1), dtype=np.int64),
         np.cumsum(relevant_ranked(r, None, rel), axis=1)], axis=1))


def hits(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant documents in each ranking's top k (all retrieved when k is None)."""
    cum = relevant_so_far(r, rel)
    return cum[:, -1] if k is None else cum[:, min(k, cum.shape[1] - 1)]


def relevant_positions(r: Ranked, rel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, 0-based rank, i) of every retrieved relevant document, the i-th of its row,
    row-major (a few per query, where the matrices are queries x depth)."""
    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, cols = np.nonzero(relevant_ranked(r, None, rel))
        if not len(rows):
            return rows, cols, np.zeros(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        ith = np.arange(1, len(rows) + 1) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
        return rows, cols, ith
    return r.memo(("relevant at", rel), make)


def row_sums(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray,
             values: np.ndarray) -> np.ndarray:
    """Row sums of a ``shape`` matrix holding ``values`` at (``rows``, ``cols``) and 0
    elsewhere: bit for bit the sums of ``np.where(mask, value, 0.0)`` over the whole matrix
    (the same rows summed the same pairwise way, the zeros adding nothing), with the values
    computed only where they count (a few cells a row)."""
    dense = np.zeros(shape)
    dense[rows, cols] = values
    return dense.sum(axis=1)


def precision(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant in the top k divided by k (by the number retrieved when k is None)."""
    found = hits(r, k, rel)
    denom = np.full(len(found), float(k)) if k is not None else r.length.astype(np.float64)
    out = np.zeros(len(found))
    np.divide(found, denom, out=out, where=denom > 0)
    return out


def recall(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant in the top k divided by all relevant in the qrels (0 when there are none)."""
    found = hits(r, k, rel)
    nr = num_rel(r, rel)
    out = np.zeros(len(found))
    np.divide(found, nr, out=out, where=nr > 0)
    return out


def reciprocal_rank(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """1 / rank of the first relevant document in the top k (0 when none)."""
    rows, cols, ith = relevant_positions(r, rel)
    first = (ith == 1) & (cols < k) if k is not None else ith == 1
    out = np.zeros(r.grades.shape[0])
    out[rows[first]] = 1.0 / (cols[first] + 1)
    return out


def average_precision(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Mean of precision at each relevant rank (top k), over all relevant in the qrels.

    Computed from the positions of the relevant documents only (a few per query), not over
    the whole (queries x depth) matrix: the i-th relevant document of a row, at 0-based
    position p, contributes i / (p + 1).
    """
    rows, cols, ith = relevant_positions(r, rel)
    if k is not None:
        top = cols < k
        rows, cols, ith = rows[top], cols[top], ith[top]
    n = r.grades.shape[0]
    total: np.ndarray = np.zeros(n)
    # summed in rank order, as trec_eval does
    if len(rows):
        total = np.bincount(rows, weights=ith / (cols + 1.0), minlength=n)
    nr = num_rel(r, rel)
    out = np.zeros(n)
    np.divide(total, nr, out=out, where=nr > 0)
    return out


def success(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """1 when a relevant document is in the top k, else 0."""
    return (hits(r, k, rel) > 0).astype(np.float64)


def judged_share(r: Ranked, k: int | None) -> np.ndarray:
    """Judged documents in the top k over min(k, retrieved) (0 for an empty ranking)."""
    found = _upto(r.judged, k).sum(axis=1)
    denom = r.length if k is None else np.minimum(r.length, k)
    out = np.zeros(len(found))
    np.divide(found, denom, out=out, where=denom > 0)
    return out


def num_rel_ret(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant documents retrieved (in the top k)."""
    return hits(r, k, rel).astype(np.float64)


def r_precision(r: Ranked, rel: int) -> np.ndarray:
    """Precision at rank R = the query's number of relevant documents (0 when R is 0)."""
    nr = num_rel(r, rel)
    width = r.grades.shape[1]
    out = np.zeros(len(nr))
    if width == 0:
        return out
    cum = relevant_so_far(r, rel)
    # past the run's end: nothing more is relevant
    at = np.minimum(nr, width)
    rows = np.flatnonzero(nr > 0)
    out[rows] = cum[rows, at[rows]] / nr[rows]
    return out


def bpref(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's bpref: each retrieved relevant document scores 1 - min(n, R) / min(N, R),
    n the judged non-relevant ranked above it (1 when n is 0); the sum is divided by R."""
    g = r.grades
    rows, cols, _ = relevant_positions(r, rel)
    # at a relevant position: the judged non-relevant documents above it
    above = np.cumsum((g >= 0) & (g < rel), axis=1)[rows, cols]
    nr = num_rel(r, rel)
    n_nonrel = ((r.ideal >= 0) & (r.ideal < rel)).sum(axis=1)
    denom = np.minimum(n_nonrel, nr).astype(np.float64)[rows]
    frac = np.zeros(len(rows))
    np.divide(np.minimum(above, nr[rows]), denom, out=frac, where=(above > 0) & (denom > 0))
    total = row_sums(g.shape, rows, cols, 1.0 - frac)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


#: trec_eval's, in the estimate of the precision above a document
INFAP_EPSILON = 0.00001


def inf_ap(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's infAP: at the relevant document at 0-based rank j > 0,
    1/(j+1) + j/(j+1) * (above in the pool)/j * (relevant above + eps) / (judged above + 2 eps),
    where the pool is the documents in the qrels (negative grades: pooled, not judged)."""
    g = r.grades
    rows, cols, _ = relevant_positions(r, rel)
    rel_above = relevant_so_far(r, rel)[rows, cols]
    # at a relevant position, the documents above it are counted to its own rank
    nonrel_above = np.cumsum((g >= 0) & (g < rel), axis=1)[rows, cols]
    pooled_above = np.cumsum((g < 0) & (g > UNJUDGED), axis=1)[rows, cols]
    j = cols.astype(np.float64)
    safe_j = np.maximum(j, 1.0)
    value = (1.0 / (j + 1.0) + (j / (j + 1.0))
             * ((rel_above + nonrel_above + pooled_above) / safe_j)
             * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)))
    value = np.where(j == 0, 1.0, value)
    total = row_sums(g.shape, rows, cols, value)
    nr = num_rel(r, rel)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


#: trec_eval's 11pt_avg recall levels
ELEVEN_LEVELS = tuple(i / 10 for i in range(11))


def recall_levels(text: str) -> tuple[float, ...]:
    """Recall levels as trec_eval's 11pt_avg..25,.5: (0.25, 0.5); each in [0, 1]."""
    try:
        levels = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MeasureError(f"levels {text!r}: expected recall levels separated by commas, "
                           "e.g. '0.25,0.5,0.75'") from None
    if not levels or not all(0.0 <= v <= 1.0 for v in levels):
        raise MeasureError(f"levels {text!r}: expected recall levels between 0 and 1")
    return levels


def recall_cutoff(recall_level: float, num_relevant: np.ndarray, compat: Compat) -> np.ndarray:
    """The relevant documents a recall level stands for: trec_eval 10 rounds half away from
    zero (C's ``lround(level x R)``); trec_eval 9 added 0.9 and truncated (``compat``)."""
    x = recall_level * num_relevant
    if compat == "trec_eval-9":
        return (x + 0.9).astype(np.int64)
    whole = np.trunc(x)
    return (whole + (x - whole >= 0.5)).astype(np.int64)


def interpolated_precision(r: Ranked, recall_level: float, rel: int,
                           compat: Compat = "trec_eval-10") -> np.ndarray:
    """trec_eval's iprec_at_recall: the highest precision at or after the c-th relevant
    document, c = ``recall_cutoff`` (at least the first); 0 when fewer are retrieved."""
    best_after = r.memo(("precision from the i-th relevant on", rel),
                        lambda: _best_after(r, rel))
    out = np.zeros(r.grades.shape[0])
    need = np.maximum(recall_cutoff(recall_level, num_rel(r, rel), compat), 1)
    rows = np.flatnonzero(need <= best_after.shape[1])
    # 0 where the row has fewer relevant
    values = best_after[rows, need[rows] - 1]
    out[rows] = values
    return out


def _best_after(r: Ranked, rel: int) -> np.ndarray:
    """(n, most relevant retrieved): [q, i] the highest precision at the (i+1)-th relevant
    document of ranking q or a later one (0 past its last)."""
    rows, cols, ith = relevant_positions(r, rel)
    width = int(ith.max()) if len(ith) else 0
    at = np.zeros((r.grades.shape[0], width))
    at[rows, ith - 1] = ith / (cols + 1.0)
    return np.maximum.accumulate(at[:, ::-1], axis=1)[:, ::-1]


def precision_at_ranks(r: Ranked, ks: np.ndarray, rel: int) -> np.ndarray:
    """Relevant in each query's own top ks[i], divided by ks[i] (ranks past the run's end
    are not relevant; 0 where ks[i] is 0)."""
    width = r.grades.shape[1]
    upto = np.minimum(ks, width)
    found = relevant_so_far(r, rel)[np.arange(len(ks)), upto]
    out = np.zeros(len(ks))
    np.divide(found, ks, out=out, where=ks > 0)
    return out


def rprec_mult(r: Ranked, factor: float, rel: int) -> np.ndarray:
    """trec_eval's Rprec_mult: precision at rank int(factor x R + 0.9), R the relevant
    documents in the qrels (trec_eval 10 kept trec_eval 9's rounding here)."""
    ks = (factor * num_rel(r, rel) + 0.9).astype(np.int64)
    return precision_at_ranks(r, ks, rel)


def relative_precision(r: Ranked, k: int, rel: int) -> np.ndarray:
    """trec_eval's relative_P: relevant in the top k over min(k, R), the most there could be
    (0 when R is 0)."""
    found = hits(r, k, rel)
    best = np.minimum(num_rel(r, rel), k)
    out = np.zeros(len(found))
    np.divide(found, best, out=out, where=best > 0)
    return out


def unjudged_share(r: Ranked, k: int) -> np.ndarray:
    """trec_eval's unj: documents of the top k absent from the qrels or graded negative,
    divided by k (ranks past the run's end count as judged)."""
    return r.unjudged[:, :k].sum(axis=1) / float(k)


def num_nonrel_judged_ret(r: Ranked, rel: int) -> np.ndarray:
    """Retrieved documents judged not relevant (0 <= grade < rel)."""
    return ((r.grades >= 0) & (r.grades < rel)).sum(axis=1).astype(np.float64)


def utility(r: Ranked, rel: int, coefficients: tuple[float, float, float, float],
            num_docs: int) -> np.ndarray:
    """trec_eval's linear utility: a x relevant retrieved + b x non-relevant retrieved +
    c x relevant missed + d x non-relevant missed (of ``num_docs`` in the collection)."""
    a, b, c, d = coefficients
    ret = r.length.astype(np.float64)
    found = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel).astype(np.float64)
    return a * found + b * (ret - found) + c * (nr - found) + d * (num_docs + found - ret - nr)


def iprec_average(r: Ranked, levels: tuple[float, ...], rel: int, compat: Compat) -> np.ndarray:
    """trec_eval's 11pt_avg: the mean interpolated precision at the recall levels."""
    return np.mean([r.memo(("iprec", lv, rel, compat),
                           partial(interpolated_precision, r, lv, rel, compat))
                    for lv in levels], axis=0)


def set_measures(r: Ranked, rel: int) -> tuple[np.ndarray, np.ndarray]:
    """(SetP, SetR): relevant retrieved over retrieved, and over relevant in the qrels."""
    found = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel)
    p, rc = np.zeros(len(found)), np.zeros(len(found))
    np.divide(found, r.length, out=p, where=r.length > 0)
    np.divide(found, nr, out=rc, where=nr > 0)
    return p, rc


def set_relative(r: Ranked, rel: int) -> tuple[np.ndarray, np.ndarray]:
    """(set_relative_P, set_map): relevant retrieved over min(retrieved, R), and
    relevant retrieved squared over retrieved x R (0 when either is 0)."""
    found = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel)
    best, both = np.minimum(r.length, nr), r.length * nr
    relp, setmap = np.zeros(len(found)), np.zeros(len(found))
    np.divide(found, best, out=relp, where=best > 0)
    np.divide(found * found, both, out=setmap, where=both > 0)
    return relp, setmap


def set_f(r: Ranked, rel: int, beta: float) -> np.ndarray:
    """trec_eval's set_F: (1+beta^2) P R / (beta^2 P + R) of the retrieved set, 0 if both 0."""
    p, rc = set_measures(r, rel)
    denom = beta * beta * p + rc
    out = np.zeros(len(p))
    np.divide((1 + beta * beta) * p * rc, denom, out=out, where=denom > 0)
    return out
