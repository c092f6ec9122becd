"""nDCG@k from a pair-level sample: a ratio estimator whose normaliser, each query's ideal
DCG, is estimated too, with a bootstrap interval over the sample.

The model p(human grade | judge grade) recalibrates the judge; each query's pooled pairs per
human grade are post-stratified by query and judge grade (never negative); the numerator is
linear in the gains given the ideals, post-stratified by the run's top k. The interval: the
Rao-Wu rescaling bootstrap, each replicate re-fitting the model, counts, ideals and ratio;
the bias-corrected estimate +- t times the replicates' sd, at least the jackknife's. A
census is exact. docs/ppi-method.md derives it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from reljudge.grades import N_GRADES
from reljudge.infer import ppi
from reljudge.metrics import gain_kernels, kernels
from reljudge.metrics.measures import Measure
from reljudge.stats import special

#: a query's ideal DCG is too uncertain when its bootstrap sd exceeds this share of it
IDEAL_CV = 0.2
#: the jackknife deletes one sampled pair at a time up to this many per design stratum, and
#: beyond it one of this many random groups (the delete-a-group jackknife, Kott 2001)
JACKKNIFE_GROUPS = 100


@dataclass(frozen=True)
class PairFrame:
    """The pool and the sample as arrays: every pooled pair's query and judge grade; the
    sampled pairs' pool index, design stratum and human grade; the strata's pooled sizes."""

    # (P,) query index of each pooled pair
    query: np.ndarray
    # (P,) judge grade
    judge: np.ndarray
    # (H,) pooled pairs per design stratum
    sizes: np.ndarray
    # (n,) pool index of each sampled pair
    sampled: np.ndarray
    # (n,) design stratum of each sampled pair
    stratum: np.ndarray
    # (n,) human grade of each sampled pair
    human: np.ndarray
    queries: int

    @property
    def census(self) -> bool:
        """Every pooled pair is sampled: no sampling error."""
        return len(self.sampled) >= len(self.query)

    def seen(self) -> np.ndarray:
        """Sampled pairs per query and human grade, (Q, G)."""
        out = np.zeros((self.queries, N_GRADES))
        np.add.at(out, (self.query[self.sampled], self.human), 1.0)
        return out


def replicate_weights(frame: PairFrame, replicates: int, seed: int) -> np.ndarray:
    """Design weights N_h / n_h of the sampled pairs (row 0) and ``replicates`` Rao-Wu
    rescaling-bootstrap weights (rows 1..), shaped (1 + replicates, n)."""
    rng = np.random.default_rng(seed)
    s = frame.stratum
    n_h = np.bincount(s, minlength=len(frame.sizes)).astype(np.float64)
    out = np.ones((1 + replicates, len(s)))
    rows = np.arange(replicates)[:, None]
    for h in np.flatnonzero(n_h >= 2):
        members = np.flatnonzero(s == h)
        n = len(members)
        scale = np.sqrt(max(1.0 - n / frame.sizes[h], 0.0))
        # n - 1 draws with replacement
        drawn = rng.integers(0, n, size=(replicates, n - 1))
        counts = np.bincount((rows * n + drawn).ravel(), minlength=replicates * n)
        out[1:, members] = 1.0 - scale + scale * n / (n - 1) * counts.reshape(replicates, n)
    return out * (frame.sizes[s] / n_h[s])


@dataclass(frozen=True)
class Jackknife:
    """The stratified delete-a-group jackknife's weights: rows (G, n), each deleting one group
    of a design stratum's sampled pairs (the stratum's others reweighted to its size), and
    each row's share of the variance, (1 - f_h) (G_h - 1) / G_h, and stratum."""

    weights: np.ndarray
    factor: np.ndarray
    stratum: np.ndarray

    def sd(self, values: np.ndarray) -> float:
        """The jackknife standard error of an estimate from its values under the rows (G,)."""
        var = 0.0
        for h in np.unique(self.stratum):
            x = values[self.stratum == h]
            var += float(self.factor[self.stratum == h][0] * ((x - x.mean()) ** 2).sum())
        return var ** 0.5

    def sds(self, values: np.ndarray) -> list[float]:
        """``sd`` of each of K estimates from their values (K, G), bit for bit: each row is
        reduced along its own contiguous axis as ``sd`` reduces one."""
        var = np.zeros(len(values))
        for h in np.unique(self.stratum):
            x = np.ascontiguousarray(values[:, self.stratum == h])
            var += self.factor[self.stratum == h][0] * (
                (x - x.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
        return [v ** 0.5 for v in var.tolist()]


def jackknife(frame: PairFrame, seed: int) -> Jackknife:
    """The stratified jackknife of the sample: delete-one up to JACKKNIFE_GROUPS sampled pairs
    in a stratum, else delete-a-group over that many random groups (Kott 2001); a stratum of
    one sampled pair has no row (as the bootstrap, it adds no variance)."""
    rng = np.random.default_rng(seed)
    s = frame.stratum
    n_h = np.bincount(s, minlength=len(frame.sizes)).astype(np.float64)
    base = frame.sizes[s] / n_h[s]
    rows, factor, stratum = [], [], []
    for h in np.flatnonzero(n_h >= 2):
        members = np.flatnonzero(s == h)
        g = min(len(members), JACKKNIFE_GROUPS)
        group = rng.permutation(len(members)) % g
        w = np.tile(base, (g, 1))
        for i in range(g):
            gone = members[group == i]
            w[i, members] *= n_h[h] / (n_h[h] - len(gone))
            w[i, gone] = 0.0
        rows.append(w)
        factor.append(np.full(g, max(1.0 - n_h[h] / frame.sizes[h], 0.0) * (g - 1) / g))
        stratum.append(np.full(g, h))
    if not rows:
        return Jackknife(np.ones((0, len(s))), np.zeros(0), np.zeros(0, dtype=np.int64))
    return Jackknife(np.vstack(rows), np.concatenate(factor), np.concatenate(stratum))


def _onehot(index: np.ndarray, width: int) -> np.ndarray:
    return (np.asarray(index)[:, None] == np.arange(width)[None, :]).astype(np.float64)


def grade_model(frame: PairFrame, w: np.ndarray) -> np.ndarray:
    """p(human grade | judge grade) under each row of weights, (B, J, G); a judge grade no
    sampled pair has takes the sample's overall distribution."""
    cell = frame.judge[frame.sampled] * N_GRADES + frame.human
    joint = _per_cell(cell, N_GRADES * N_GRADES, w).reshape(len(w), N_GRADES, N_GRADES)
    total = joint.sum(axis=-1, keepdims=True)
    overall = joint.sum(axis=1, keepdims=True)
    overall = overall / np.maximum(overall.sum(axis=-1, keepdims=True), 1e-300)
    return np.where(total > 0, joint / np.maximum(total, 1e-300), overall)


def _per_cell(cell: np.ndarray, width: int, values: np.ndarray) -> np.ndarray:
    """Each row of values (B, n) summed over the units of each of ``width`` cells, a unit's
    cell given by ``cell`` (n,): (B, width), each sum taken in the units' order; laid out
    as the transpose of a C-ordered (width, B), which later products' rounding depends on."""
    return _cell_sums(np.asarray(cell), width, np.asarray(values, np.float64).T)


def _cell_sums(cell: np.ndarray, width: int, by_unit: np.ndarray) -> np.ndarray:
    """by_unit (n, B) summed per unit's cell, as the transpose of (width, B)."""
    rows = by_unit.shape[1]
    bins = (cell[:, None] * rows + np.arange(rows)[None, :]).ravel()
    return np.bincount(bins, weights=by_unit.ravel(), minlength=width * rows).reshape(
        width, rows).T


def _by_query_judge(frame: PairFrame, values: np.ndarray) -> np.ndarray:
    """(R, P) pooled values summed per query and judge grade: (R, Q, J)."""
    return _per_cell(frame.query * N_GRADES + frame.judge, frame.queries * N_GRADES,
                     values).reshape(len(values), frame.queries, N_GRADES)


#: the products _per_query sums at a time, a bound on its memory
PRODUCTS_AT_ONCE = 1 << 22


def _per_query(w: np.ndarray, per_pair: np.ndarray, query: np.ndarray, queries: int
               ) -> np.ndarray:
    """sum over each query's sampled pairs of w (B, n) times per_pair (n, F): (B, Q, F)
    (a pair's F products sit in its query's F cells; rows of w a few at a time)."""
    n, f = per_pair.shape
    cell = (query[:, None] * f + np.arange(f)).ravel()
    step = max(1, PRODUCTS_AT_ONCE // max(n * f, 1))
    by_unit = np.asarray(w, np.float64).T
    chunks = [by_unit[:, i:i + step] for i in range(0, max(len(w), 1), step)]
    parts = [_cell_sums(cell, queries * f, (per_pair[:, :, None] * chunk[:, None, :]).reshape(
        n * f, chunk.shape[1])).T for chunk in chunks]
    return np.concatenate(parts, axis=1).T.reshape(len(w), queries, f)


def totals(frame: PairFrame, w: np.ndarray, pool_values: np.ndarray, gain: np.ndarray,
           model: np.ndarray | None) -> np.ndarray:
    """Per query, the estimated total over the pool of pool_values (R, P) times each human
    gain vector (G', G): the difference estimator with the model's predictions p(g | judge
    grade) (B, J, G) (None: Horvitz-Thompson alone). Shaped (B, R, Q, G')."""
    vs = pool_values[:, frame.sampled].T
    hs = gain[:, frame.human].T
    js = _onehot(frame.judge[frame.sampled], N_GRADES)
    parts = np.concatenate([hs, js], axis=1) if model is not None else hs
    n, r, g = len(vs), vs.shape[1], hs.shape[1]
    sums = _per_query(w, (vs[:, :, None] * parts[:, None, :]).reshape(n, -1),
                      frame.query[frame.sampled], frame.queries)
    sums = sums.reshape(len(w), frame.queries, r, -1).transpose(0, 2, 1, 3)
    ht = sums[..., :g]
    if model is None:
        return ht
    expected = np.einsum("bjg,kg->bjk", model, gain)
    pool = _by_query_judge(frame, pool_values)[None]
    return ht + np.einsum("brqj,bjk->brqk", pool - sums[..., g:], expected)


def ideal_dcg(counts: np.ndarray, k: int, gains: np.ndarray,
              known: np.ndarray | None = None) -> np.ndarray:
    """Ideal DCG@k from (possibly fractional) pair counts per grade (..., G): sum over grades
    g >= 1 of (gain_g - gain_{g-1}) D(pairs of grade >= g), D the summed discounts to a rank,
    linear between ranks (exact at whole counts). ``known``: pairs seen with each grade
    (..., G); a query holds at least as many of grade >= g as were seen."""
    at_least = np.cumsum(np.maximum(counts, 0.0)[..., ::-1], axis=-1)[..., ::-1]
    if known is not None:
        at_least = np.maximum(at_least, np.cumsum(known[..., ::-1], axis=-1)[..., ::-1])
    x = np.clip(at_least[..., 1:], 0.0, k)
    disc = kernels.discount(k)
    cum = np.concatenate([[0.0], np.cumsum(disc)])
    whole = np.floor(x).astype(np.int64)
    step = np.concatenate([disc, [0.0]])[np.minimum(whole, k)]
    d = cum[whole] + (x - whole) * step
    return (d * np.diff(gains)).sum(axis=-1)


@dataclass(frozen=True)
class RatioReplicates:
    """nDCG@k of every run (the mean over queries) under every replicate (row 0: the sample
    itself), by the PPI (model-assisted) and the human-only estimator; and each query's PPI
    ideal DCG under every replicate."""

    # (B, R)
    ppi: np.ndarray
    # (B, R)
    human: np.ndarray
    # (B, Q)
    ideal: np.ndarray
    # (Q,) the PPI estimate of each query's relevant (grade >= 1) pairs
    relevant: np.ndarray


def ndcg_replicates(frame: PairFrame, run_weights: np.ndarray, k: int, dcg: str,
                    replicates: int, seed: int) -> RatioReplicates:
    """nDCG@k of each run, given its DCG@k rank weight of each pooled pair (R, P), under the
    design weights and ``replicates`` bootstrap replicates. A query's ratio is not clipped
    (clipping a noisy ratio at 1 biases a good run's estimate down); the mean is, later."""
    return ndcg_under(frame, replicate_weights(frame, replicates, seed), run_weights, k, dcg)


def ndcg_under(frame: PairFrame, w: np.ndarray, run_weights: np.ndarray, k: int, dcg: str
               ) -> RatioReplicates:
    """nDCG@k of each run under each row of sampled pairs' weights w (B, n)."""
    gains = gain_kernels.gains(np.arange(N_GRADES), dcg)
    seen = frame.seen()
    out = []
    ideal = relevant = None
    model = grade_model(frame, w)
    # PPI, then human-only (Horvitz-Thompson counts, no model)
    tops = run_tops(frame, w, run_weights)
    for m in (model, None):
        counts = (cell_counts(frame, w, m) if m is not None else
                  totals(frame, w, np.ones((1, len(frame.query))), np.eye(N_GRADES),
                         None)[:, 0])
        best = ideal_dcg(counts, k, gains, seen)
        out.append(pooled_ratio(frame, w, run_weights, gains, m, best, tops))
        if ideal is None:
            ideal, relevant = best, counts[0, :, 1:].sum(axis=-1)
    assert ideal is not None and relevant is not None
    return RatioReplicates(out[0], out[1], ideal, relevant)


def cell_counts(frame: PairFrame, w: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Pairs of each human grade per query, (B, Q, G): in each cell of a query and a judge
    grade, its pooled pairs times the weighted grade shares of its sampled pairs, or of the
    model where it has none (post-stratification; never negative)."""
    qs, js = frame.query[frame.sampled], frame.judge[frame.sampled]
    cell = (qs * N_GRADES + js) * N_GRADES + frame.human
    joint = _per_cell(cell, frame.queries * N_GRADES ** 2, w).reshape(
        len(w), frame.queries, N_GRADES, N_GRADES)
    mass = joint.sum(axis=-1, keepdims=True)
    share = np.where(mass > 0, joint / np.where(mass > 0, mass, 1.0), model[:, None])
    pooled = _by_query_judge(frame, np.ones((1, len(frame.query))))[0]
    return np.einsum("qj,bqjg->bqg", pooled, share)


@dataclass(frozen=True)
class RunTops:
    """What ``pooled_ratio`` reads of the runs' rank weights (R, P) under the sampled pairs'
    weights w (B, n), the same for the PPI and the human-only estimator: computed once."""

    # (R, Q, J) the runs' pooled weights per query and judge grade
    pool: np.ndarray
    # (n, R * J) each sampled pair's weight in each run, in its judge grade's column
    top: np.ndarray
    # (B, R * J) the weights w of each run's top-k sampled pairs per judge grade
    den: np.ndarray
    # (R, J) each run's top-k pooled pairs per judge grade
    size: np.ndarray


def run_tops(frame: PairFrame, w: np.ndarray, run_weights: np.ndarray) -> RunTops:
    """``RunTops`` of the runs' rank weights (R, P) under w (B, n)."""
    top = run_weights[:, frame.sampled, None] * _onehot(frame.judge[frame.sampled], N_GRADES)
    return RunTops(_by_query_judge(frame, run_weights), np.hstack(list(top)),
                   w @ np.hstack(list(top > 0)),
                   ppi.stratum_counts(run_weights > 0, frame.judge, N_GRADES))


def pooled_ratio(frame: PairFrame, w: np.ndarray, run_weights: np.ndarray, gains: np.ndarray,
                 model: np.ndarray | None, ideal: np.ndarray, tops: RunTops | None = None
                 ) -> np.ndarray:
    """The mean over queries of DCG@k_q / ideal_q for each run, (B, R): each pooled pair's
    predicted gain over its query's ideal, plus per judge grade the run's top-k pairs times
    the design-weighted mean residual of its sampled pairs there (post-stratified by the
    run's top k and the judge's grade: a pair in the top k of one query borrows from the
    others). ``tops``: ``run_tops`` of these weights, where computed already."""
    with np.errstate(divide="ignore"):
        inv = np.where(ideal > 0, 1.0 / np.where(ideal > 0, ideal, 1.0), 0.0)
    e = model @ gains if model is not None else np.zeros((len(w), N_GRADES))
    qs, js = frame.query[frame.sampled], frame.judge[frame.sampled]
    t = tops or run_tops(frame, w, run_weights)
    if model is None and np.isfinite(inv).all() and (t.pool >= 0).all():
        # every prediction is 0, and so is each product of the sum (+0: its other factors
        # are finite and not negative)
        out = np.zeros((len(w), len(run_weights)))
    else:
        out = np.einsum("rqj,bj,bq->br", t.pool, e, inv)
    resid = w * (gains[frame.human][None] - e[:, js]) * inv[:, qs]
    # (B, R * J): per run and judge grade
    num = resid @ t.top
    mean = np.where(t.den > 0, num / np.where(t.den > 0, t.den, 1.0), 0.0)
    out += (mean * t.size.ravel()).reshape(len(w), len(run_weights), N_GRADES).sum(axis=-1)
    return out / frame.queries


def interval(reps: np.ndarray, human: np.ndarray, n: int, population: int, level: float,
             exact: bool, floors: tuple[float, float] = (0.0, 0.0)) -> ppi.Estimate:
    """A ppi.Estimate from replicates (B,) of the PPI and the human-only value (row 0: the
    plain estimate): bias-corrected, each standard error at least its floor (the
    jackknife's; see ``bias_corrected``); 'worth': the human-only sample whose variance the
    PPI one matches."""
    fields = _interval_fields(_moments(reps, exact), _moments(human, exact), n, population,
                              level, floors)
    return _estimate(level, exact, *(np.asarray(f) for f in fields))


def intervals(reps: np.ndarray, human: np.ndarray, n: int, population: int, level: float,
              exact: bool, floors: Sequence[tuple[float, float]]) -> ppi.Estimate:
    """``interval`` of each of K estimates at once from their replicates (B, K), the same
    numbers estimate by estimate (each column reduced along its own contiguous row)."""
    ppi_rows, human_rows = (np.ascontiguousarray(np.asarray(x, np.float64).T)
                            for x in (reps, human))
    fields = [_interval_fields(a, h, n, population, level, f) for a, h, f in zip(
        _many_moments(ppi_rows, exact), _many_moments(human_rows, exact), floors, strict=True)]
    return _estimate(level, exact, *(np.array(f) for f in zip(*fields, strict=True)))


def _estimate(level: float, exact: bool, value: np.ndarray, se: np.ndarray, lo: np.ndarray,
              hi: np.ndarray, hvalue: np.ndarray, hse: np.ndarray, hlo: np.ndarray,
              hhi: np.ndarray, df: np.ndarray, worth: np.ndarray, n: np.ndarray
              ) -> ppi.Estimate:
    """The ppi.Estimate of ``interval``'s fields (lambda is 1: the model is used whole)."""
    return ppi.Estimate(value, se, lo, hi, np.ones_like(value), hvalue, hse, hlo, hhi, df,
                        worth, n, level, 0, exact)


#: a vector of replicates as ``bias_corrected`` reads it: row 0, the others' mean and sd
#: (None: too few replicates, or a census)
Reduced = tuple[float, float | None, float | None]


def _moments(r: np.ndarray, exact: bool) -> Reduced:
    """The numbers ``bias_corrected`` reads from replicates (B,)."""
    if exact or len(r) < 3:
        return float(r[0]), None, None
    return float(r[0]), float(r[1:].mean()), float(np.std(r[1:]))


def _many_moments(rows: np.ndarray, exact: bool) -> list[Reduced]:
    """``_moments`` of each row of replicates (K, B), row by row the same numbers."""
    if exact or rows.shape[-1] < 3:
        return [(first, None, None) for first in rows[:, 0].tolist()]
    rest = rows[:, 1:]
    return list(zip(rows[:, 0].tolist(), rest.mean(axis=-1).tolist(),
                    np.std(rest, axis=-1).tolist(), strict=True))


def _interval_fields(reps: Reduced, human: Reduced, n: int, population: int, level: float,
                     floors: tuple[float, float]) -> tuple[float | int, ...]:
    """``interval``'s numbers: value, se, low, high and the human-only ones, df, worth (as
    floats) and n."""
    df = float(max(n - 1, 1))
    value, lo, hi, se = _corrected(*reps, level, df, floors[0])
    hvalue, hlo, hhi, hse = _corrected(*human, level, df, floors[1])
    worth = population if se == 0 else min(population, n * hse ** 2 / se ** 2)
    return value, se, lo, hi, hvalue, hse, hlo, hhi, df, float(worth), n


def bias_corrected(r: np.ndarray, level: float, exact: bool, df: float, floor: float = 0.0
                   ) -> tuple[float, float, float, float]:
    """The estimate less the bootstrap estimate of its bias b = mean(replicates) - estimate
    (Efron, Tibshirani 1993, sec. 10.6), +- the t quantile on ``df`` degrees of freedom
    times the standard error: the replicates' sd, at least ``floor`` (the jackknife's); the
    interval the p-value (``ppi.Estimate.p_value``) inverts."""
    return _corrected(*_moments(r, exact), level, df, floor)


def _corrected(first: float, mean: float | None, sd: float | None, level: float, df: float,
               floor: float) -> tuple[float, float, float, float]:
    """``bias_corrected`` from the replicates' row 0, mean and sd."""
    if mean is None or sd is None:
        return first, first, first, 0.0
    value = 2 * first - mean
    se = max(sd, floor)
    half = _t_quantile(df, level) * se
    return value, value - half, value + half, se


@cache
def _t_quantile(df: float, level: float) -> float:
    """The two-sided ``level`` quantile of Student's t on ``df`` degrees of freedom (every
    estimate of a sample shares it: computed once)."""
    return float(special.stdtrit(df, 0.5 + level / 2))


def uncertain_ideals(frame: PairFrame, ideal: np.ndarray, relevant: np.ndarray,
                     names: Sequence[str]) -> list[tuple[str, int, bool]]:
    """The queries whose ideal DCG is too uncertain to normalise by: (query, more labels
    it needs, whether its sample holds no relevant pair). Uncertain: the bootstrap sd of its
    ideal DCG exceeds IDEAL_CV of it, or no sampled pair of it is relevant. More labels: the
    sample size of the query at which that sd would fall to IDEAL_CV of it (the variance of
    a without-replacement sample scales as 1/n - 1/N), or, with no relevant pair sampled,
    at which two of its estimated relevant pairs would be expected among the sampled."""
    if frame.census or len(ideal) < 3:
        return []
    pooled = np.bincount(frame.query, minlength=frame.queries).astype(np.float64)
    n = frame.seen().sum(axis=-1)
    seen_relevant = frame.seen()[:, 1:].sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(ideal[0] > 0, ideal[1:].std(axis=0) / ideal[0], np.inf)
    out = []
    for q in range(frame.queries):
        if n[q] >= pooled[q] or pooled[q] == 0 or (cv[q] <= IDEAL_CV and seen_relevant[q] > 0):
            continue
        have = max(n[q], 1.0)
        ratio = (cv[q] / IDEAL_CV) ** 2 if np.isfinite(cv[q]) else np.inf
        inv = (1.0 / have - 1.0 / pooled[q]) / ratio + 1.0 / pooled[q]
        need = pooled[q] if inv <= 0 else min(pooled[q], np.ceil(1.0 / inv))
        if seen_relevant[q] == 0:
            expect = np.ceil(2.0 * pooled[q] / relevant[q]) if relevant[q] > 0 else pooled[q]
            need = max(need, min(pooled[q], expect))
        out.append((names[q], int(max(need - n[q], 1)), bool(seen_relevant[q] == 0)))
    return out


def serves(m: Measure) -> bool:
    """Whether this estimator serves ``m`` from a pair sample: nDCG@k with trec_eval's ideal
    (from every judged pair) and the grade (or 2^grade - 1) as gain."""
    return (m.name == "nDCG" and m.cutoff is not None and m.param("ideal") == "qrels"
            and m.param("judged_only") is not True and not m.param("gains"))


@dataclass(frozen=True)
class RatioDesign:
    """A pair-level sample's nDCG@k estimates: per measure, every run's bootstrap
    replicates (row 0: the estimate), and which sampled pairs lie in each run's top k."""

    frame: PairFrame
    runs: Sequence[str]
    # by measure
    replicates: Mapping[str, RatioReplicates]
    # by measure: (R, n) sampled pair in the run's top k
    in_top: Mapping[str, np.ndarray]
    query_names: Sequence[str]
    level: float
    jackknife: Jackknife
    # by measure: every run's nDCG@k under its rows
    jack: Mapping[str, RatioReplicates]

    @classmethod
    def build(cls, frame: PairFrame, runs: Sequence[str], weights: Mapping[Measure, np.ndarray],
              query_names: Sequence[str], level: float, replicates: int, seed: int
              ) -> RatioDesign:
        """Bootstrap and jackknife replicates of every run's nDCG@k for each measure, given
        each measure's DCG@k rank weights of the pooled pairs (R, P)."""
        reps = {str(m): ndcg_replicates(frame, w, int(m.cutoff or 0), str(m.param("dcg")),
                                        replicates, seed) for m, w in weights.items()}
        tops = {str(m): w[:, frame.sampled] > 0 for m, w in weights.items()}
        jk = jackknife(frame, seed)
        jack = {str(m): ndcg_under(frame, jk.weights, w, int(m.cutoff or 0),
                                   str(m.param("dcg")))
                for m, w in weights.items()} if len(jk.factor) and not frame.census else {}
        return cls(frame, list(runs), reps, tops, list(query_names), level, jk, jack)

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The run's (or the run minus ``other``'s) estimate and sampled pairs in its top k."""
        r, jk = self.replicates[str(m)], self.jack.get(str(m))
        i = self.runs.index(run)
        j = self.runs.index(other) if other is not None else None
        floors = (0.0, 0.0)
        if jk is not None:
            ja, jh = (x[:, i] - (x[:, j] if j is not None else 0.0) for x in (jk.ppi, jk.human))
            floors = (self.jackknife.sd(ja), self.jackknife.sd(jh))
        a, h, top = r.ppi[:, i], r.human[:, i], self.in_top[str(m)][i]
        if j is not None:
            a, h, top = a - r.ppi[:, j], h - r.human[:, j], top | self.in_top[str(m)][j]
        n = len(self.frame.sampled)
        return interval(a, h, n, len(self.frame.query), self.level, self.frame.census,
                        floors), int(top.sum())

    def batch(self, cells: Mapping, names: Sequence[str], m: Measure,
              pairs: Sequence[tuple[int, int | None]]) -> tuple[ppi.Estimate, list[int]]:
        """``estimate`` of each (i, j) of ``pairs`` at once: run names[i] minus names[j]
        (j None: the run alone); the same numbers, and each one's sampled pairs in the top
        k. ``cells`` is unused: the replicates hold every run."""
        r, jk = self.replicates[str(m)], self.jack.get(str(m))
        first = [self.runs.index(names[i]) for i, _ in pairs]
        second = [None if j is None else self.runs.index(names[j]) for _, j in pairs]
        tops = self.in_top[str(m)]
        counts = [int((tops[i] if j is None else tops[i] | tops[j]).sum())
                  for i, j in zip(first, second, strict=True)]
        paired = [j is not None for j in second]
        if any(paired) and not all(paired):
            raise ValueError("batch: pairs of runs and runs alone go in separate calls")
        i = np.array(first, dtype=np.int64)
        j = np.array([0 if k is None else k for k in second], dtype=np.int64)

        def columns(x: np.ndarray) -> np.ndarray:
            # whole rows of x's transpose gathered, laid out as the reductions read them
            rows = np.ascontiguousarray(x.T)
            return (rows[i] - rows[j] if all(paired) else rows[i] - 0.0).T

        floors = [(0.0, 0.0)] * len(pairs)
        if jk is not None:
            floors = list(zip(*(self.jackknife.sds(np.ascontiguousarray(columns(x).T))
                                for x in (jk.ppi, jk.human)), strict=True))
        e = intervals(columns(r.ppi), columns(r.human), len(self.frame.sampled),
                      len(self.frame.query), self.level, self.frame.census, floors)
        return e, counts

    def note(self, m: Measure) -> str | None:
        """The warning that holds for every row of ``m`` (said once, in the estimate's
        notes) when some query's ideal DCG is too uncertain, naming the queries and the
        labels each needs."""
        r = self.replicates.get(str(m))
        if r is None:
            return None
        bad = sorted(uncertain_ideals(self.frame, r.ideal, r.relevant, self.query_names),
                     key=lambda b: -b[1])
        if not bad:
            return None
        said = ", ".join(f"{q} about {more} more labels" + (" (none of its sampled pairs is "
                                                             "relevant)" if none else "")
                         for q, more, none in bad[:5])
        return (f"normalised by {len(bad)} uncertain ideal DCGs of {self.frame.queries} "
                f"queries (bootstrap sd over {IDEAL_CV:.0%} of it, or no relevant sampled "
                f"pair): {said}{', ...' if len(bad) > 5 else ''}")
