"""Estimates from an active pair sample (``infer.active``): the Horvitz-Thompson PPI
estimate that weights each human label by 1 / its inclusion probability, with Hajek's
variance for fixed-size unequal-probability designs, at least the jackknife's that re-fits
lambda, plus MISS_RULE's unseen misses (docs/ppi-method.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from reljudge.infer import ppi
from reljudge.infer.cells import RunEstimate, difference_domain, pair_cells
from reljudge.labels import Sample
from reljudge.metrics.measures import Measure
from reljudge.stats import special
from reljudge.trec_data import Qrels, Run

#: what the PPI variance of an active sample adds for the judge's misses it did not see
MISS_RULE = ("(ln(1/alpha) / z)^2 more sampled pairs in the domain (2.34 at 95 %: the rule of "
             "three's misses a sample can leave out together) whose human and judge values "
             "differ by the root mean square of the sampled differences (none sampled: the "
             "spread), at the mean (1 - pi) / pi^2 of the domain's pairs the sample left out "
             "(estimated from the sampled ones, each weighed by its chance (1 - pi) of being "
             "left out)")


def unseen_misses(level: float) -> float:
    """MISS_RULE's count at ``level``: misses of a pair of pi p are left out together, M at
    a time, with chance (1 - p)^M, at least alpha for M up to about ln(1/alpha) / p (the
    rule of three); their error, M misses, sits inside the interval when the unseen term's
    variance is (M / z)^2 misses' squared size, about (ln(1/alpha) / z)^2 misses of
    (1 - p) / p^2 each for small p."""
    alpha = 1.0 - level
    return float((np.log(1.0 / alpha) / special.ndtri(1.0 - alpha / 2)) ** 2)


@dataclass(frozen=True)
class Sums:
    """Per-cell sums over the sampled pairs, arrays (...): e_a = a / pi, e_b = b / pi and
    c = 1 - pi (0 for a certain pair)."""

    # sampled pairs short of certainty
    sampled: np.ndarray
    # of them, in the cell's domain (the run's top k)
    inside: np.ndarray
    # sampled with certainty, in the domain
    certain_inside: np.ndarray
    # sum e_a over every sampled pair
    ta: np.ndarray
    tb: np.ndarray
    c: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    caa: np.ndarray
    cbb: np.ndarray
    cab: np.ndarray
    # sum (1 - pi) / pi^2 over the sampled pairs in the domain
    poisson: np.ndarray
    # sum 1 / pi and 1 / pi^2 over the uncertain sampled pairs in the domain
    dinv: np.ndarray
    dinv2: np.ndarray
    # sum 1 / pi, sum a^2 / pi: for the population variance of a
    inv: np.ndarray
    taa: np.ndarray
    # sampled pairs in the domain whose judge value is not the human's,
    misses: np.ndarray
    # and the sum of their squared differences (a - b)^2
    miss2: np.ndarray
    # sum (1 - pi) / pi over the sampled pairs in the domain: the HT
    unseen: np.ndarray
    # of sum (1 - pi) over its pairs, and sum (1 - pi)^2 / pi^3
    unseen_v: np.ndarray


def sums(mask: np.ndarray, a: np.ndarray, b: np.ndarray, pi: np.ndarray,
         domain: np.ndarray) -> Sums:
    """The sums of ``Sums`` for every draw and cell: ``mask`` (draws, units) 1 where a unit
    is sampled, ``a``, ``b``, ``domain`` (cells, units), ``pi`` (units,); arrays (draws,
    cells)."""
    def dot(w: np.ndarray, x: np.ndarray) -> np.ndarray:
        return w @ x.T

    every = np.ones_like(np.asarray(a, np.float64))
    t = _sampled(np.asarray(mask, np.float64), pi)
    return _sums(_sum_terms(t, every, dot), a, b, domain, dot)


def drawn_sums(pi: np.ndarray, a: np.ndarray, b: np.ndarray, domain: np.ndarray) -> Sums:
    """The sums of ``Sums`` from each draw's sampled units alone: ``pi`` (draws, 1, n),
    ``a``, ``b``, ``domain`` (draws, cells, n); arrays (draws, cells), equal to ``sums`` of
    the draws' masks up to rounding (a sum over n values, not over every unit's)."""
    pi = np.asarray(pi, np.float64)
    every = np.ones_like(np.asarray(a, np.float64))
    t = _sampled(np.ones_like(pi), pi)
    return _sums(_sum_terms(t, every, _contracted), a, b, domain, _contracted)


def _contracted(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The sum of w * x over the last axis, in one pass without the product's array."""
    return np.einsum("...j,...j->...", *np.broadcast_arrays(w, x))


@dataclass(frozen=True)
class _Sampled:
    """What ``_sums`` and ``_jackknife`` take from the sample and its inclusion
    probabilities alone: the same for every cell of a design, so a drawn design computes
    them once for all its cells (they are most of the work of a cell's sums)."""

    mask: np.ndarray
    pi: np.ndarray
    # 1 - pi, 0 for a certain pair
    c: np.ndarray
    # the sampled pairs short of certainty, and the certain ones
    short: np.ndarray
    sure: np.ndarray
    # each pair's jackknife weight, 0 where not sampled or certain; their sum, and it
    # without each pair's
    w: np.ndarray
    w_total: np.ndarray
    w_out: np.ndarray
    # the sampled pairs short of certainty, summed
    m: np.ndarray


def _sampled(mask: np.ndarray, pi: np.ndarray) -> _Sampled:
    """``_Sampled`` of a sample's ``mask`` and its units' ``pi``."""
    pi = np.asarray(pi, np.float64)
    c = np.where(pi >= 1.0, 0.0, 1.0 - pi)
    short = mask * (c > 0)
    w = short * c
    w_total = w.sum(axis=-1, keepdims=True)
    return _Sampled(mask, pi, c, short, mask * (c == 0), w, w_total, w_total - c,
                    short.sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class _SumTerms:
    """The cell-independent part of ``Sums``: its sums of short, c and 1 / pi, and the
    weights of its other probability-only terms."""

    t: _Sampled
    mc: np.ndarray
    sampled: np.ndarray
    c_total: np.ndarray
    inv: np.ndarray
    # the weights of poisson, dinv, dinv2, unseen and unseen_v
    poisson: np.ndarray
    dinv: np.ndarray
    dinv2: np.ndarray
    unseen: np.ndarray
    unseen_v: np.ndarray


def _sum_terms(t: _Sampled, every: np.ndarray,
               dot: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> _SumTerms:
    """``_SumTerms`` of ``t``, its sums taken with ``dot`` against ``every`` (ones shaped as
    a cell's values)."""
    mask, pi, c, short = t.mask, t.pi, t.c, t.short
    mc = mask * c
    return _SumTerms(t, mc, dot(short, every), dot(mc, every), dot(mask / pi, every),
                     mc / pi ** 2, short / pi, short / pi ** 2, mc / pi, mc * c / pi ** 3)


def _sums(w: _SumTerms, a: np.ndarray, b: np.ndarray, domain: np.ndarray,
          dot: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Sums:
    """``Sums`` with ``dot(w, x)`` summing w * x over the units for every draw and cell."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    dom = np.asarray(domain, np.float64)
    t, mc = w.t, w.mc
    mask = t.mask
    ea, eb = a / t.pi, b / t.pi
    return Sums(w.sampled, dot(t.short, dom), dot(t.sure, dom),
                dot(mask, ea), dot(mask, eb), w.c_total, dot(mc, ea), dot(mc, eb),
                dot(mc, ea * ea), dot(mc, eb * eb), dot(mc, ea * eb),
                dot(w.poisson, dom), dot(w.dinv, dom), dot(w.dinv2, dom),
                w.inv, dot(mask, a * ea),
                dot(mask, dom * (a != b)), dot(mask, dom * (a - b) ** 2),
                dot(w.unseen, dom), dot(w.unseen_v, dom))


def jackknife_variance(mask: np.ndarray, a: np.ndarray, b: np.ndarray, pi: np.ndarray,
                       b_total: np.ndarray) -> np.ndarray:
    """The delete-one jackknife variance of the tuned estimate of the total, lambda re-fitted
    without each sampled pair short of certainty in turn, arrays (draws, cells) as ``sums``:
    (m - 1) / m sum_i c_i (T_(i) - T)^2 with Berger and Skinner's (2005) weights c_i = 1 - pi_i,
    T the c-weighted mean of the T_(i), each T_(i) scaling the other m - 1 pairs' share by
    m / (m - 1); for a fixed lambda it is the Hajek variance of ``estimate_from_sums``."""
    # (draws, 1, units) and (1, cells, units)
    t = _sampled(np.asarray(mask, np.float64)[:, None, :], pi)
    return _jackknife(t, np.asarray(a, np.float64)[None],
                      np.asarray(b, np.float64)[None],
                      np.asarray(b_total, np.float64)[None, :, None])


def _jackknife(t: _Sampled, a: np.ndarray, b: np.ndarray, b_total: np.ndarray) -> np.ndarray:
    """``jackknife_variance`` of arrays shaped (draws, cells, units) or broadcasting to it,
    summed over the last axis (each draw's row as the one-draw path sums it: a variance of 0
    and one of 1e-34 differ in FLAT_RULE)."""
    c, pi, short, sure, w, m = t.c, t.pi, t.short, t.sure, t.w, t.m
    ea, eb = a / pi, b / pi

    def total(weight: np.ndarray, x: np.ndarray | float) -> np.ndarray:
        return (weight * x).sum(axis=-1, keepdims=True)

    # every c-weighted sum without pair i
    c_i = t.w_out
    ca_i, cb_i = total(w, ea) - c * ea, total(w, eb) - c * eb
    cbb_i, cab_i = total(w, eb * eb) - c * eb * eb, total(w, ea * eb) - c * ea * eb
    with np.errstate(divide="ignore", invalid="ignore"):
        sbb, sab = ppi.prediction_spread(np.where(c_i > 0, cbb_i - cb_i ** 2 / c_i, 0.0),
                                         np.where(c_i > 0, cab_i - ca_i * cb_i / c_i, 0.0),
                                         cbb_i)
        lam = np.clip(np.where(sbb > 0, sab / sbb, 0.0), 0.0, 1.0)
        scale = np.where(m > 1, m / (m - 1), 0.0)
    t_i = (lam * b_total + total(sure, ea)
           - lam * total(sure, eb) + scale * (total(short, ea) - ea - lam * (
               total(short, eb) - eb)))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(t.w_total > 0, total(w, t_i) / t.w_total, 0.0)
        factor = np.where(m > 1, (m - 1) / m, 0.0)
    return (factor * total(w, (t_i - mean) ** 2))[..., 0]


def estimate_from_sums(s: Sums, b_total: np.ndarray, normaliser: float, population: int,
                       domain_size: np.ndarray, labels: int, level: float = 0.95,
                       spread: float | None = None, lam: float | None = None,
                       jackknife: np.ndarray | None = None) -> ppi.Estimate:
    """Horvitz-Thompson PPI estimate of sum(a over the population) / normaliser from the sums of
    a fixed-size unequal-probability sample, vectorised over the sums' axes: lambda * b_total
    plus the sampled (a - lambda b) / pi, with Hajek's variance approximation, lambda tuned
    (one degree of freedom), FLAT_RULE's variance for flat residuals, and with ``spread``
    MISS_RULE's term for the judge's unseen misses. ``domain_size``: the population's pairs in
    the domain (a census of them: exact); ``jackknife``: a lower bound of a tuned lambda's
    variance.
    """
    m, k = s.sampled, s.inside
    factor = np.divide(m, m - 1, out=np.zeros(np.shape(m)), where=m > 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        saa = np.where(s.c > 0, s.caa - s.ca ** 2 / s.c, 0.0)
        sbb = np.where(s.c > 0, s.cbb - s.cb ** 2 / s.c, 0.0)
        sab = np.where(s.c > 0, s.cab - s.ca * s.cb / s.c, 0.0)
        sbb, sab = ppi.prediction_spread(sbb, sab, s.cbb)
        tuned = lam is None
        lam_ = (np.clip(np.where(sbb > 0, sab / sbb, 0.0), 0.0, 1.0) if tuned
                else np.broadcast_to(np.asarray(lam, np.float64), np.shape(saa)))
    exact = np.asarray(s.certain_inside >= domain_size)
    empty = (k == 0) & ~exact
    var_c = factor * np.maximum(saa, 0.0)
    var = factor * np.maximum(saa - 2 * lam_ * sab + lam_ ** 2 * sbb, 0.0)
    # Kish's effective sample size
    with np.errstate(divide="ignore", invalid="ignore"):
        k_eff = np.minimum(k, np.where(s.dinv2 > 0, s.dinv ** 2 / s.dinv2, 0.0))
    df_c = np.maximum(k_eff - 1, 1)
    df = np.maximum(k_eff - 2, 1) if tuned else df_c
    # lambda fitted on the sample, as a regression's residual variance
    var = var * df_c / df
    if tuned and jackknife is not None:
        var = np.maximum(var, jackknife)
    flat = np.zeros(np.shape(var), dtype=bool)
    if spread is not None:
        scale = factor * (s.caa + lam_ ** 2 * s.cbb) + 1e-300
        flat_c = (var_c <= ppi.ROUNDING * scale) & ~exact & ~empty
        flat_r = (var <= ppi.ROUNDING * scale) & ~exact & ~empty
        per_unit = s.poisson / (k + 1.0)
        var_c = np.where(flat_c, spread ** 2 * per_unit, var_c)
        var = np.where(flat_r, ((1.0 + lam_) * spread) ** 2 * per_unit, var)
        # MISS_RULE's unseen misses
        miss2 = np.where(s.misses > 0, s.miss2 / np.maximum(s.misses, 1), spread ** 2)
        unseen = np.where(s.unseen > 0, s.unseen_v / np.where(s.unseen > 0, s.unseen, 1.0),
                          # the unseen miss sits on a pair the sample left out
                          per_unit)
        var = np.where(flat_r, var, var + unseen_misses(level) * miss2 * unseen)
        flat = flat_c | flat_r
    var = np.where(empty, np.inf, np.where(exact, 0.0, var))
    var_c = np.where(empty, np.inf, np.where(exact, 0.0, var_c))
    value = (lam_ * b_total + s.ta - lam_ * s.tb) / normaliser
    classical = s.ta / normaliser
    se, se_c = np.sqrt(var) / normaliser, np.sqrt(var_c) / normaliser
    q, q_c = special.stdtrit(df, 0.5 + level / 2), special.stdtrit(df_c, 0.5 + level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_a = s.ta / s.inv
        s2 = np.maximum(s.taa / s.inv - mean_a ** 2, 0.0) * population / max(population - 1, 1)
        eff = np.where(np.isfinite(var) & (var > 0),
                       population ** 2 * s2 / (var + population * s2), 0.0)
    eff = np.where(exact, population, np.nan_to_num(np.minimum(eff, population)))
    return ppi.Estimate(value, se, value - q * se, value + q * se, lam_, classical, se_c,
                        classical - q_c * se_c, classical + q_c * se_c, df, eff,
                        np.broadcast_to(np.asarray(labels), np.shape(value)), level,
                        flat.astype(np.int64), exact)


def _scalar(e: ppi.Estimate) -> ppi.Estimate:
    """The one cell of a (1, 1)-shaped estimate, as scalars."""
    return ppi.Estimate(**{f: v if f == "level" else np.asarray(v).reshape(-1)[0]
                           for f, v in e.__dict__.items()})


def _column(e: ppi.Estimate) -> ppi.Estimate:
    """The one cell of a (draws, 1)-shaped estimate, as (draws,) arrays."""
    cols: dict[str, Any] = {f: np.asarray(v)[..., 0] if f != "level" and np.ndim(v) else v
                            for f, v in e.__dict__.items()}
    return ppi.Estimate(**cols)


@dataclass(frozen=True)
class ActiveDesign:
    """An active sample's estimates: each cell holds the sampled pairs' human (``a``) and
    judge (``b``) values, the judge's total over the pool and the values' spread. Measures
    linear in the gains (DCG@k, P@k, RBP@k); nDCG@k would be the ratio of two such totals
    (the run's DCG and the ideal's), whose pairs' weights are known too: a note for the
    nDCG-from-pairs construction."""

    # each sampled pair's inclusion probability
    pi: np.ndarray
    # (items, pool) in top k
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
    population: int
    queries: int
    level: float
    # (draws, n): the items each draw sampled, in increasing order (the benchmark's fixed-size
    # draws from a census of the pool, ``pi`` then every pooled pair's); None: every item,
    # one estimate
    draws: np.ndarray | None = None

    @cached_property
    def _drawn(self) -> _SumTerms:
        """``_SumTerms`` of the draws' own items, (draws, 1, n), shared by every cell."""
        assert self.draws is not None
        pi = self.pi[self.draws[:, None, :]]
        return _sum_terms(_sampled(np.ones_like(pi), pi), np.ones_like(pi), _contracted)

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The Horvitz-Thompson PPI estimate of a cell (a run, or a run minus ``other``);
        with draws, one per draw (arrays (draws,))."""
        items, pool = self.in_top[(run, str(m))]
        # a difference is 0 on the pairs both runs weigh alike
        if other:
            items, pool = difference_domain(cell, (items, pool), self.in_top[(other, str(m))])
        a, b = np.asarray(cell["a"]), np.asarray(cell["b"])
        b_total = np.asarray(cell["b_total"])
        if self.draws is None:
            mask = np.ones((1, len(self.pi)))
            s = sums(mask, a[None], b[None], self.pi, items[None])
            jackknife = jackknife_variance(mask, a[None], b[None], self.pi, b_total[None])
        else:
            # each draw's own sampled items, (draws, 1, n): the work of n items, not the pool's
            at = self.draws[:, None, :]
            a, b = a[at].astype(np.float64), b[at].astype(np.float64)
            s = _sums(self._drawn, a, b, items[at], _contracted)
            jackknife = _jackknife(self._drawn.t, a, b,
                                   np.asarray(b_total, np.float64)[None, None, None])
        e = estimate_from_sums(s, b_total, float(self.queries), self.population,
                               np.asarray(int(pool.sum())), len(self.pi) if self.draws is None
                               else self.draws.shape[1], self.level, spread=cell["spread"],
                               jackknife=jackknife)
        if self.draws is not None:
            return _column(e), int(items.sum())
        return _scalar(e), int(items.sum())


def active_design(sample: Sample, judge: Qrels, human: Qrels, runs: Sequence[Run],
                  parsed: Sequence[Measure], queries: list[str], cells: dict, level: float
                  ) -> ActiveDesign:
    """Add each cell's weighted gains of the sampled pairs under both labels, the judge's
    total over the pool and the values' spread (as for the other pair designs)."""
    v = pair_cells(sample, judge, human, runs, parsed, cells)
    pi = np.array([i.prob for i in sample.items], dtype=np.float64)
    return ActiveDesign(pi, v.in_top, len(v.pop), len(queries), level)


def warn_unweighed(sample: Sample, rows: list[RunEstimate], diffs: list[RunEstimate]
                   ) -> tuple[list[RunEstimate], list[RunEstimate]]:
    """The rows of runs the active draw did not weigh (it weighed ``sample.params["runs"]``)
    with a warning: their top-k pairs may have had small probabilities, and on the benchmark
    such runs' intervals covered 87-92 % (docs/ppi-validation.md)."""
    from dataclasses import replace

    weighed = set(sample.params.get("runs") or [])
    if not weighed:
        return rows, diffs

    def mark(r: RunEstimate) -> RunEstimate:
        names = [n.strip() for n in r.run.split(" - ")]
        if all(n in weighed for n in names):
            return r
        said = (f"from an active sample drawn for other runs ({', '.join(sorted(weighed))}): "
                f"pairs of this run's top k had small inclusion probabilities, and on the "
                f"benchmark such intervals covered 87-92 %, not 95 %: likely too narrow")
        return replace(r, warning="; ".join(w for w in (r.warning, said) if w))

    return [mark(r) for r in rows], [mark(r) for r in diffs]
