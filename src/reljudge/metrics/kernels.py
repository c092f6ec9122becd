"""Vectorised measure kernels over a (queries x depth) matrix. Pure numpy, no I/O.

Inputs are a ``Ranked`` batch: for each query row, the grades of its ranked documents
(``grades``, with ``UNJUDGED`` for unjudged documents and ``PAD`` beyond the ranking's end) and
the grades of all its judged documents sorted descending (``ideal``, padded with ``PAD``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reljudge.metrics.measures import Measure, level_gains, recall_levels

PAD = np.iinfo(np.int64).min  # beyond the end of a ranking / of a query's judgments
UNJUDGED = PAD + 1  # a retrieved document with no judgment


@dataclass(frozen=True)
class Ranked:
    """The per-query matrices every kernel reads."""

    grades: np.ndarray  # int64 (n, L): grade at each rank, UNJUDGED, or PAD
    length: np.ndarray  # int64 (n,): documents retrieved per query
    ideal: np.ndarray  # int64 (n, M): the query's judged grades, descending, PAD-padded

    @property
    def judged(self) -> np.ndarray:
        """Mask of retrieved and judged positions."""
        return self.grades > UNJUDGED

    @property
    def unjudged(self) -> np.ndarray:
        """Mask of retrieved positions without a usable judgment: absent from the qrels, or
        a negative grade (trec_eval's "in the pool but not judged")."""
        return (self.grades < 0) & (self.grades != PAD)


GM_EPSILON = 0.00001  # trec_eval's MIN_GEO_MEAN


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


def gains(grades: np.ndarray, dcg: str) -> np.ndarray:
    """Gain of each grade: the grade itself or 2^grade - 1; unjudged, padding, negatives -> 0."""
    g = np.maximum(grades, 0).astype(np.float64)
    return np.exp2(g) - 1.0 if dcg == "exp-log2" else g


def dcg_of(gain: np.ndarray) -> np.ndarray:
    """DCG of each row of a gain matrix, in the given order."""
    return gain @ discount(gain.shape[1]) if gain.shape[1] else np.zeros(gain.shape[0])


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
        got = dcg_of(gains(_upto(r.grades, k), dcg))
        if ideal == "run":
            best = dcg_of(-np.sort(-gains(_upto(r.grades, k), dcg), axis=1))
        else:
            best = dcg_of(gains(_upto(r.ideal, k), dcg))
    out = np.zeros_like(got)
    np.divide(got, best, out=out, where=best > 0)
    return out


def relevant(grades: np.ndarray, rel: int) -> np.ndarray:
    """Mask of documents with grade >= rel (unjudged and padding never are)."""
    return (grades >= rel) & (grades > UNJUDGED)


def num_rel(r: Ranked, rel: int) -> np.ndarray:
    """Relevant documents per query in the qrels."""
    return relevant(r.ideal, rel).sum(axis=1)


def precision(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant in the top k divided by k (by the number retrieved when k is None)."""
    hits = relevant(_upto(r.grades, k), rel).sum(axis=1)
    denom = np.full(len(hits), float(k)) if k is not None else r.length.astype(np.float64)
    out = np.zeros(len(hits))
    np.divide(hits, denom, out=out, where=denom > 0)
    return out


def recall(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant in the top k divided by all relevant in the qrels (0 when there are none)."""
    hits = relevant(_upto(r.grades, k), rel).sum(axis=1)
    nr = num_rel(r, rel)
    out = np.zeros(len(hits))
    np.divide(hits, nr, out=out, where=nr > 0)
    return out


def reciprocal_rank(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """1 / rank of the first relevant document in the top k (0 when none)."""
    rel_mask = relevant(_upto(r.grades, k), rel)
    if rel_mask.shape[1] == 0:
        return np.zeros(rel_mask.shape[0])
    any_rel = rel_mask.any(axis=1)
    first = rel_mask.argmax(axis=1) + 1
    return np.where(any_rel, 1.0 / first, 0.0)


def average_precision(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Mean of precision at each relevant rank (top k), over all relevant in the qrels.

    Computed from the positions of the relevant documents only (a few per query), not over
    the whole (queries x depth) matrix: the i-th relevant document of a row, at 0-based
    position p, contributes i / (p + 1).
    """
    rows, cols = np.nonzero(relevant(_upto(r.grades, k), rel))  # row-major: cols ascending
    n = r.grades.shape[0]
    total = np.zeros(n)
    if len(rows):  # summed in rank order, as trec_eval does
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        ith = np.arange(1, len(rows) + 1) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
        total = np.bincount(rows, weights=ith / (cols + 1.0), minlength=n)
    nr = num_rel(r, rel)
    out = np.zeros(n)
    np.divide(total, nr, out=out, where=nr > 0)
    return out


def success(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """1 when a relevant document is in the top k, else 0."""
    return relevant(_upto(r.grades, k), rel).any(axis=1).astype(np.float64)


def err(r: Ranked, k: int | None, max_grade: int) -> np.ndarray:
    """Expected reciprocal rank with stop probability (2^g - 1) / 2^max_grade."""
    stop = gains(_upto(r.grades, k), "exp-log2") / 2.0 ** max_grade
    if stop.shape[1] == 0:
        return np.zeros(stop.shape[0])
    reach = np.cumprod(1.0 - stop, axis=1)
    reach = np.hstack([np.ones((stop.shape[0], 1)), reach[:, :-1]])
    ranks = np.arange(1, stop.shape[1] + 1, dtype=np.float64)
    return (stop * reach / ranks).sum(axis=1)


def judged_share(r: Ranked, k: int | None) -> np.ndarray:
    """Judged documents in the top k over min(k, retrieved) (0 for an empty ranking)."""
    hits = _upto(r.judged, k).sum(axis=1)
    denom = r.length if k is None else np.minimum(r.length, k)
    out = np.zeros(len(hits))
    np.divide(hits, denom, out=out, where=denom > 0)
    return out


def num_rel_ret(r: Ranked, k: int | None, rel: int) -> np.ndarray:
    """Relevant documents retrieved (in the top k)."""
    return relevant(_upto(r.grades, k), rel).sum(axis=1).astype(np.float64)


def r_precision(r: Ranked, rel: int) -> np.ndarray:
    """Precision at rank R = the query's number of relevant documents (0 when R is 0)."""
    nr = num_rel(r, rel)
    width = r.grades.shape[1]
    out = np.zeros(len(nr))
    if width == 0:
        return out
    hits = np.cumsum(relevant(r.grades, rel), axis=1)
    at = np.minimum(nr, width) - 1  # past the run's end: nothing more is relevant
    has = nr > 0
    rows = np.flatnonzero(has)
    out[rows] = hits[rows, at[rows]] / nr[rows]
    return out


def bpref(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's bpref: each retrieved relevant document scores 1 - min(n, R) / min(N, R),
    n the judged non-relevant ranked above it (1 when n is 0); the sum is divided by R."""
    g = r.grades
    nonrel = (g >= 0) & (g < rel)
    rel_mask = relevant(g, rel)
    above = np.cumsum(nonrel, axis=1)  # at a relevant position: the non-relevant above it
    nr = num_rel(r, rel)
    n_nonrel = ((r.ideal >= 0) & (r.ideal < rel)).sum(axis=1)
    denom = np.minimum(n_nonrel, nr).astype(np.float64)[:, None]
    frac = np.zeros(g.shape)
    np.divide(np.minimum(above, nr[:, None]), denom, out=frac, where=(above > 0) & (denom > 0))
    total = np.where(rel_mask, 1.0 - frac, 0.0).sum(axis=1)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


INFAP_EPSILON = 0.00001  # trec_eval's, in the estimate of the precision above a document


def inf_ap(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's infAP: at the relevant document at 0-based rank j > 0,
    1/(j+1) + j/(j+1) * (above in the pool)/j * (relevant above + eps) / (judged above + 2 eps),
    where the pool is the documents in the qrels (negative grades: pooled, not judged)."""
    g = r.grades
    rel_mask = relevant(g, rel)
    rel_above = np.cumsum(rel_mask, axis=1) - rel_mask
    nonrel_above = np.cumsum((g >= 0) & (g < rel), axis=1)  # exact at relevant positions
    pooled_above = np.cumsum((g < 0) & (g > UNJUDGED), axis=1)
    j = np.arange(g.shape[1], dtype=np.float64)[None, :]
    safe_j = np.maximum(j, 1.0)
    value = (1.0 / (j + 1.0) + (j / (j + 1.0))
             * ((rel_above + nonrel_above + pooled_above) / safe_j)
             * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)))
    value = np.where(j == 0, 1.0, value)
    total = np.where(rel_mask, value, 0.0).sum(axis=1)
    nr = num_rel(r, rel)
    out = np.zeros(len(nr))
    np.divide(total, nr, out=out, where=nr > 0)
    return out


ELEVEN_LEVELS = tuple(i / 10 for i in range(11))  # trec_eval's 11pt_avg recall levels


def recall_cutoff(recall_level: float, num_relevant: np.ndarray, compat: str) -> np.ndarray:
    """The relevant documents a recall level stands for: trec_eval 10 rounds half away from
    zero (C's ``lround(level x R)``); trec_eval 9 added 0.9 and truncated (``compat``)."""
    x = recall_level * num_relevant
    if compat == "trec_eval-9":
        return (x + 0.9).astype(np.int64)
    whole = np.trunc(x)
    return (whole + (x - whole >= 0.5)).astype(np.int64)


def interpolated_precision(r: Ranked, recall_level: float, rel: int,
                           compat: str = "trec_eval-10") -> np.ndarray:
    """trec_eval's iprec_at_recall: the highest precision at or after the c-th relevant
    document, c = ``recall_cutoff`` (at least the first); 0 when fewer are retrieved."""
    rows, cols = np.nonzero(relevant(r.grades, rel))
    n = r.grades.shape[0]
    out = np.zeros(n)
    if not len(rows):
        return out
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    ith = np.arange(1, len(rows) + 1) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    need = np.maximum(recall_cutoff(recall_level, num_rel(r, rel), compat), 1)
    ok = ith >= need[rows]
    np.maximum.at(out, rows[ok], ith[ok] / (cols[ok] + 1.0))
    return out


def precision_at_ranks(r: Ranked, ks: np.ndarray, rel: int) -> np.ndarray:
    """Relevant in each query's own top ks[i], divided by ks[i] (ranks past the run's end
    are not relevant; 0 where ks[i] is 0)."""
    rel_mask = relevant(r.grades, rel)
    width = rel_mask.shape[1]
    upto = np.minimum(ks, width)
    cum = np.concatenate([np.zeros((len(ks), 1), dtype=np.int64),
                          np.cumsum(rel_mask, axis=1)], axis=1)
    hits = cum[np.arange(len(ks)), upto]
    out = np.zeros(len(ks))
    np.divide(hits, ks, out=out, where=ks > 0)
    return out


def rprec_mult(r: Ranked, factor: float, rel: int) -> np.ndarray:
    """trec_eval's Rprec_mult: precision at rank int(factor x R + 0.9), R the relevant
    documents in the qrels (trec_eval 10 kept trec_eval 9's rounding here)."""
    ks = (factor * num_rel(r, rel) + 0.9).astype(np.int64)
    return precision_at_ranks(r, ks, rel)


def relative_precision(r: Ranked, k: int, rel: int) -> np.ndarray:
    """trec_eval's relative_P: relevant in the top k over min(k, R), the most there could be
    (0 when R is 0)."""
    hits = relevant(_upto(r.grades, k), rel).sum(axis=1)
    best = np.minimum(num_rel(r, rel), k)
    out = np.zeros(len(hits))
    np.divide(hits, best, out=out, where=best > 0)
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
    hits = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel).astype(np.float64)
    return a * hits + b * (ret - hits) + c * (nr - hits) + d * (num_docs + hits - ret - nr)


def iprec_average(r: Ranked, levels: tuple[float, ...], rel: int, compat: str) -> np.ndarray:
    """trec_eval's 11pt_avg: the mean interpolated precision at the recall levels."""
    return np.mean([interpolated_precision(r, lv, rel, compat) for lv in levels], axis=0)


def set_measures(r: Ranked, rel: int) -> tuple[np.ndarray, np.ndarray]:
    """(SetP, SetR): relevant retrieved over retrieved, and over relevant in the qrels."""
    hits = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel)
    p, rc = np.zeros(len(hits)), np.zeros(len(hits))
    np.divide(hits, r.length, out=p, where=r.length > 0)
    np.divide(hits, nr, out=rc, where=nr > 0)
    return p, rc


def set_relative(r: Ranked, rel: int) -> tuple[np.ndarray, np.ndarray]:
    """(set_relative_P, set_map): relevant retrieved over min(retrieved, R), and
    relevant retrieved squared over retrieved x R (0 when either is 0)."""
    hits = num_rel_ret(r, None, rel)
    nr = num_rel(r, rel)
    best, both = np.minimum(r.length, nr), r.length * nr
    relp, setmap = np.zeros(len(hits)), np.zeros(len(hits))
    np.divide(hits, best, out=relp, where=best > 0)
    np.divide(hits * hits, both, out=setmap, where=both > 0)
    return relp, setmap


def set_f(r: Ranked, rel: int, beta: float) -> np.ndarray:
    """trec_eval's set_F: (1+beta^2) P R / (beta^2 P + R) of the retrieved set, 0 if both 0."""
    p, rc = set_measures(r, rel)
    denom = beta * beta * p + rc
    out = np.zeros(len(p))
    np.divide((1 + beta * beta) * p * rc, denom, out=out, where=denom > 0)
    return out


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


def ndcg_rel(r: Ranked) -> np.ndarray:
    """trec_eval's ndcg_rel: nDCG averaged over the relevant documents: at each retrieved
    document with a gain, DCG / ideal DCG so far; each relevant document not retrieved counts
    the final ratio; divided by the documents with a gain in the qrels."""
    got, best, rdcg, idcg = _gain_curves(r)
    n_rel = (best > 0).sum(axis=1)
    ratio = np.zeros_like(rdcg)
    np.divide(rdcg, idcg, out=ratio, where=idcg > 0)
    at = (got > 0).sum(axis=1)
    final = np.zeros(len(n_rel))
    np.divide(rdcg[:, -1], idcg[:, -1], out=final, where=idcg[:, -1] > 0)
    total = np.where(got > 0, ratio, 0.0).sum(axis=1) + (n_rel - at) * final
    out = np.zeros(len(n_rel))
    np.divide(total, n_rel, out=out, where=(n_rel > 0) & (total > 0))
    return out


def r_ndcg(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's Rndcg: the mean of DCG / ideal DCG at each rank where the ideal gain
    drops (the ratio over the ranks before it; past the run's end, the run's whole DCG),
    and at the run's end when it runs more than one rank past the ideal ones."""
    got, best, rdcg, idcg = _gain_curves(r)
    n, width = got.shape
    length = r.length
    t = (best > 0).sum(axis=1)  # ranks with an ideal gain
    i = np.arange(1, width)
    drop = (best[:, 1:] != best[:, :-1]) & (i[None, :] <= t[:, None])
    before = np.minimum(i[None, :] - 1, np.maximum(length, 1)[:, None] - 1)
    num = np.take_along_axis(rdcg, before, axis=1)
    ratio = np.zeros((n, width - 1))
    np.divide(num, idcg[:, :-1], out=ratio, where=idcg[:, :-1] > 0)
    total = np.where(drop, ratio, 0.0).sum(axis=1)
    count = (drop & (idcg[:, :-1] > 0)).sum(axis=1).astype(np.float64)
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
    got, best, _, _ = _gain_curves(r)
    cost = np.cumsum(np.maximum(best, 1.0), axis=1)
    gained = np.cumsum(got, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(got != 0, got / np.log2(2.0 + cost - gained), 0.0)
    total = terms.sum(axis=1)
    ideal = best.sum(axis=1)
    out = np.zeros(len(total))
    np.divide(total, ideal, out=out, where=ideal > 0)
    return out


def binary_g(r: Ranked, rel: int) -> np.ndarray:
    """trec_eval's binG: the sum over retrieved relevant documents of 1 / log2(2 + n), n the
    non-relevant documents ranked above it, divided by R (0 when none is retrieved)."""
    rows, cols = np.nonzero(relevant(r.grades, rel))
    n = r.grades.shape[0]
    total = np.zeros(n)
    if len(rows):
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        ith = np.arange(1, len(rows) + 1) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
        np.add.at(total, rows, 1.0 / np.log2(2.0 + cols + 1 - ith))
    nr = num_rel(r, rel)
    out = np.zeros(n)
    np.divide(total, nr, out=out, where=nr > 0)
    return out


def compute(m: Measure, r: Ranked, judged_cache: dict,
            compat: str = "trec_eval-10") -> np.ndarray:
    """Per-query values of one measure (``compat``: whose rules, see ``evaluate``)."""
    k = m.cutoff
    if m.param("judged_only"):
        if "j" not in judged_cache:
            judged_cache["j"] = judged_only(r)
        r = judged_cache["j"]
    if m.name in ("nDCG", "DCG"):
        if m.name == "DCG":
            return dcg_of(gains(_upto(r.grades, k), m.param("dcg")))
        return ndcg(r, k, m.param("dcg"), m.param("ideal"), m.param("gains"))
    if m.name == "P":
        return precision(r, k, m.param("rel"))
    if m.name == "R":
        return recall(r, k, m.param("rel"))
    if m.name == "RR":
        return reciprocal_rank(r, k, m.param("rel"))
    if m.name == "AP":
        return average_precision(r, k, m.param("rel"))
    if m.name == "Success":
        return success(r, k, m.param("rel"))
    if m.name == "ERR":
        return err(r, k, m.param("max_grade"))
    if m.name == "Judged":
        return judged_share(r, k)
    if m.name == "NumRel":
        return num_rel(r, m.param("rel")).astype(np.float64)
    if m.name == "NumRet":
        return r.length.astype(np.float64)
    if m.name == "NumRelRet":
        return num_rel_ret(r, k, m.param("rel"))
    if m.name == "Rprec":
        return r_precision(r, m.param("rel"))
    if m.name == "Bpref":
        return bpref(r, m.param("rel"))
    if m.name == "infAP":
        return inf_ap(r, m.param("rel"))
    if m.name == "IPrec":
        return interpolated_precision(r, float(k), m.param("rel"), compat)
    if m.name in ("SetP", "SetR"):
        return set_measures(r, m.param("rel"))[m.name == "SetR"]
    if m.name == "SetF":
        return set_f(r, m.param("rel"), m.param("beta"))
    if m.name == "RprecMult":
        return rprec_mult(r, float(k), m.param("rel"))
    if m.name == "RelP":
        return relative_precision(r, k, m.param("rel"))
    if m.name == "Unjudged":
        return unjudged_share(r, k)
    if m.name == "NumNonRelJudgedRet":
        return num_nonrel_judged_ret(r, m.param("rel"))
    if m.name in ("SetRelP", "SetAP"):
        return set_relative(r, m.param("rel"))[m.name == "SetAP"]
    if m.name == "Utility":
        return utility(r, m.param("rel"), tuple(m.param(x) for x in "abcd"),
                       m.param("num_docs"))
    if m.name == "IPrecAvg":
        levels = recall_levels(m.param("levels")) if m.param("levels") else ELEVEN_LEVELS
        return iprec_average(r, levels, m.param("rel"), compat)
    if m.name == "RBP":
        return rbp(r, k, m.param("p"), m.param("rel"), m.param("residual"), m.param("graded"),
                   m.param("tail"))
    if m.name == "BinG":
        return binary_g(r, m.param("rel"))
    if m.name == "G":
        return gain_g(r)
    if m.name == "nDCGRel":
        return ndcg_rel(r)
    if m.name == "RnDCG":
        return r_ndcg(r, m.param("rel"))
    raise AssertionError(f"no kernel for {m.name}")  # parse_measure admits only known names
