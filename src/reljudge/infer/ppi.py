"""Prediction-powered estimates: a mean under human labels from judge predictions on every
unit plus human labels on a random sample, with intervals valid however bad the judge is.

* ``ppi_mean_ci``: PPI++ (Angelopoulos, Duchi, Zrnic 2023) for i.i.d. data, as
  ``ppi_py.ppi_mean_ci`` computes it.
* ``estimate`` and ``estimate_from_moments``: the finite-population, stratified form used
  for retrieval scores: lambda times the predictions' total plus the Horvitz-Thompson
  estimate of the residuals' total, with a t interval (docs/ppi-method.md has the derivation).

Everything is vectorised over leading axes (systems, draws).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from reljudge.errors import InputError
from reljudge.stats import special

#: a variance needs two values; below that an interval is a guess
MIN_PER_STRATUM = 2


@dataclass(frozen=True)
class Moments:
    """Per-stratum sums over the sampled units of a (human) and b (prediction); arrays
    shaped (..., H)."""

    n: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    saa: np.ndarray
    sbb: np.ndarray
    sab: np.ndarray


@dataclass(frozen=True)
class Estimate:
    """PPI and human-only estimates of one target (arrays when vectorised)."""

    value: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    # the power-tuning parameter used
    lam: np.ndarray
    # human-sample-only estimate (lambda = 0)
    classical: np.ndarray
    classical_se: np.ndarray
    classical_low: np.ndarray
    classical_high: np.ndarray
    # degrees of freedom of the PPI interval
    df: np.ndarray
    # human labels a human-only estimate would need for the same se
    effective_n: np.ndarray
    # human-labelled units
    n: np.ndarray
    level: float
    # sampled strata whose values were all equal (see FLAT_RULE)
    flat: np.ndarray | int = 0
    # a census of every unit: no sampling error at all
    exact: np.ndarray | bool = False
    # half-width of a range-based bound it was widened to
    range_bound: np.ndarray | float = 0.0

    def p_value(self) -> np.ndarray:
        """Two-sided p-value of value == 0 (for a paired difference: no difference)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(self.value) / self.se
        p = 2 * special.stdtr(self.df, -t)
        return np.where(self.se > 0, p, np.where(self.value == 0, 1.0, 0.0))


@dataclass(frozen=True)
class Units:
    """The sampled units themselves, for the jackknife: values a and b (..., n) and each
    unit's stratum (n,) or (..., n), -1 for a unit outside the estimate's domain (its
    values are 0 and it moves nothing)."""

    a: np.ndarray
    b: np.ndarray
    stratum: np.ndarray


def moments(a: np.ndarray, b: np.ndarray, stratum: np.ndarray, strata: int) -> Moments:
    """Per-stratum sums of the sampled units' values; a and b may have leading axes, each
    row summed as a 1-d product: a batched matrix product rounds differently, and a row's
    estimate must not change with the rows estimated beside it."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    onehot = (np.asarray(stratum)[:, None] == np.arange(strata)[None, :]).astype(np.float64)

    def sums(x: np.ndarray) -> np.ndarray:
        if x.ndim == 1:
            return x @ onehot
        out = np.zeros(x.shape[:-1] + (strata,))
        flat_out = out.reshape(-1, strata)
        for row, values in enumerate(x.reshape(-1, x.shape[-1])):
            flat_out[row] = values @ onehot
        return out

    return Moments(onehot.sum(axis=0) + np.zeros(a.shape[:-1] + (strata,)),
                   sums(a), sums(b), sums(a * a), sums(b * b), sums(a * b))


def stratum_counts(mask: np.ndarray, stratum: np.ndarray, strata: int) -> np.ndarray:
    """Per stratum, how many units a boolean ``mask`` (..., n) holds, as floats (..., H):
    the one-hot matrix product's whole numbers, counted instead (no float copy of the mask,
    and no BLAS call whose threads cost more than the product)."""
    return np.stack([np.count_nonzero(mask[..., stratum == h], axis=-1)
                     for h in range(strata)], axis=-1).astype(np.float64)


def squared(x: np.ndarray | float) -> np.ndarray:
    """x ** 2 as C's pow rounds it, one number at a time whatever x's shape: numpy squares
    an array (not a scalar) by other means, which can differ in the last bit, and a
    quantity that is one number per estimate must not change when the estimate is
    vectorised over leading axes (a loop over the estimates, not over units)."""
    x = np.asarray(x, np.float64)
    return np.array([v ** 2 for v in x.ravel().tolist()], np.float64).reshape(x.shape)


def _tune(ssa: np.ndarray, ssb: np.ndarray, sab: np.ndarray, c: np.ndarray) -> np.ndarray:
    num = (c * sab).sum(axis=-1)
    den = (c * ssb).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(den > 0, num / den, 0.0)
    return np.clip(lam, 0.0, 1.0)


#: a variance computed from sums below this share of the values' mean square is rounding
ROUNDING = 1e-9


def prediction_spread(ssb: np.ndarray, sab: np.ndarray, mean_square: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The predictions' sample variance and covariance per stratum, both exactly 0 where the
    sampled predictions are all equal: computed from sums they are then rounding errors whose
    sign (which depends on the summation order, so on a leading axis) would set a tuned
    lambda anywhere in [0, 1]."""
    flat = ssb <= ROUNDING * mean_square
    return np.where(flat, 0.0, np.maximum(ssb, 0.0)), np.where(flat, 0.0, sab)


def jackknife_variance(units: Units, population: np.ndarray, b_total: np.ndarray
                       ) -> np.ndarray:
    """The stratified delete-one jackknife variance of the tuned estimate of the total,
    lambda re-fitted without each sampled unit in turn: sum_h (1 - f_h) (n_h - 1) / n_h
    sum_{i in h} (T_(hi) - mean_i T_(hi))^2 over the strata short of a census (Krewski and
    Rao 1981; for a fixed lambda it equals the usual variance estimate)."""
    a = np.asarray(units.a, np.float64)
    big_n = np.broadcast_to(np.asarray(population, np.float64), a.shape[:-1] + np.shape(
        population)[-1:])
    strata = big_n.shape[-1]
    stratum = np.broadcast_to(np.asarray(units.stratum), a.shape).ravel()
    # the units in the domain only, flat: one outside it (values 0) adds to no stratum's sums
    inside = np.flatnonzero(stratum >= 0)
    row = inside // a.shape[-1]
    # each unit's bin: its (leading index, stratum)
    own = row * strata + stratum[inside]
    b = np.asarray(units.b, np.float64).ravel()[inside]
    a = a.ravel()[inside]
    lead = big_n.shape[:-1]

    def per_stratum(x: np.ndarray) -> np.ndarray:
        return np.bincount(own, weights=x, minlength=big_n.size).reshape(big_n.shape)

    def at_unit(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(x, big_n.shape)).reshape(-1)[own]

    n, sa, sb = per_stratum(np.ones_like(a)), per_stratum(a), per_stratum(b)
    sbb, sab = per_stratum(b * b), per_stratum(a * b)

    # per stratum: c s_ab, c s_b^2, N mean a, N mean b
    def parts(n: np.ndarray, sa: np.ndarray, sb: np.ndarray, sbb: np.ndarray, sab: np.ndarray,
              big_n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n_safe, d = np.maximum(n, 1), np.maximum(n - 1, 1)
        mean_a, mean_b = sa / n_safe, sb / n_safe
        frac = np.divide(n, big_n, out=np.ones(np.broadcast(n, big_n).shape),
                         where=big_n > 0)
        c = np.where(n >= big_n, 0.0, big_n ** 2 * (1.0 - frac) / n_safe)
        ssb, s_ab = prediction_spread((sbb - n * mean_b ** 2) / d, (sab - n * mean_a * mean_b) / d,
                              sbb / n_safe)
        return c * s_ab, c * ssb, big_n * mean_a, big_n * mean_b

    whole = parts(n, sa, sb, sbb, sab, big_n)
    left = parts(at_unit(n) - 1, at_unit(sa) - a, at_unit(sb) - b, at_unit(sbb) - b * b,
                 # each unit's stratum without it
                 at_unit(sab) - a * b, at_unit(big_n))
    num, den, ta, tb = (w.sum(axis=-1).reshape(-1)[row] - at_unit(w) + lw
                        for w, lw in zip(whole, left, strict=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.clip(np.where(den > 0, num / den, 0.0), 0.0, 1.0)
    t_i = lam * (np.broadcast_to(np.asarray(b_total, np.float64), lead).reshape(-1)[row]
                 - tb) + ta
    mean_h = per_stratum(t_i) / np.maximum(n, 1)
    dev2 = per_stratum(t_i ** 2) - n * mean_h ** 2
    frac = np.divide(n, big_n, out=np.ones(n.shape), where=big_n > 0)
    factor = np.where((n >= 2) & (n < big_n), (1.0 - frac) * (n - 1) / np.maximum(n, 1), 0.0)
    return (factor * np.maximum(dev2, 0.0)).sum(axis=-1)


#: the variance of a sampled stratum whose sampled values are all equal, short of a census
FLAT_RULE = ("as if one more unit had been sampled at the far end of the range a unit's value "
             "can take: s^2 = spread^2 / (n_h + 1)")


def estimate_from_moments(m: Moments, population: np.ndarray, b_total: np.ndarray,
                          normaliser: float, level: float = 0.95,
                          lam: float | np.ndarray | None = None, check: bool = True,
                          spread: float | np.ndarray | None = None, units: Units | None = None,
                          each_flat: bool = False) -> Estimate:
    """Stratified Horvitz-Thompson PPI estimate of sum(a over all units) / normaliser.

    ``population``: units per stratum (H,) or (..., H); ``b_total``: the predictions' sum over
    all units (...,); ``lam=None`` tunes lambda; ``check=False`` skips the two-per-stratum
    check; ``spread``: the largest difference two units' values can have, for FLAT_RULE's
    variance where the sampled strata are flat (``each_flat``: wherever one is); ``units``: the
    sampled units, whose jackknife bounds a tuned lambda's variance from below.
    ``Estimate.flat`` counts the flat strata, ``Estimate.exact`` marks a census.
    """
    big_n = np.asarray(population, np.float64)
    n = m.n
    # a stratum taken whole has no sampling variance
    census = n >= big_n
    if check and np.any((n < MIN_PER_STRATUM) & ~census):
        raise InputError(f"each sampled stratum needs at least {MIN_PER_STRATUM} "
                         f"human-labelled units for an interval; got {int(np.min(n))}")
    n_safe = np.maximum(n, 1)
    d = np.maximum(n - 1, 1)
    mean_a, mean_b = m.sa / n_safe, m.sb / n_safe
    # sample variances and covariance per stratum
    ssa = (m.saa - n * mean_a ** 2) / d
    ssb = (m.sbb - n * mean_b ** 2) / d
    sab = (m.sab - n * mean_a * mean_b) / d
    ssa = np.maximum(ssa, 0.0)
    ssb, sab = prediction_spread(ssb, sab, m.sbb / n_safe)
    frac = np.divide(n, big_n, out=np.ones(np.broadcast(n, big_n).shape), where=big_n > 0)
    # var = sum c s^2
    c = np.where(census, 0.0, big_n ** 2 * (1.0 - frac) / n_safe)
    # a sample short of the population whose every sampled stratum varied not at all would
    # give a zero-width interval: its flat strata get FLAT_RULE's variance instead
    flat = _flat(ssa, m.saa / n_safe, census, n, each_flat)
    # one spread, or one per estimate of the leading axes
    spread_h = None if spread is None else np.asarray(spread, np.float64)[..., None]
    if spread_h is not None:
        ssa = np.where(flat, squared(spread_h) / (n + 1.0), ssa)
    tuned = lam is None
    lam = _tune(ssa, ssb, sab, c) if tuned else np.broadcast_to(
        np.asarray(lam, np.float64), np.shape(b_total))
    lam_h = lam[..., None]
    total = lam * b_total + (big_n * (mean_a - lam_h * mean_b)).sum(axis=-1)
    resid = np.maximum(ssa - 2 * lam_h * sab + lam_h ** 2 * ssb, 0.0)
    # the residuals a - lambda b can be flat where a is not (a judge
    # that agreed with every sampled grade): FLAT_RULE again, over their range (1 + lambda) S
    if spread_h is not None:
        rflat = _flat(resid, (m.saa + lam_h ** 2 * m.sbb) / n_safe, census, n)
        resid = np.where(rflat, ((1.0 + lam_h) * spread_h) ** 2 / (n + 1.0), resid)
        flat = flat | rflat
    parts = c * resid
    var = parts.sum(axis=-1)
    var_classical = (c * ssa).sum(axis=-1)
    classical = (big_n * mean_a).sum(axis=-1)
    sampled = n.sum(axis=-1)
    strata = (n > 0).sum(axis=-1)
    df_pooled = np.maximum(sampled - strata, 1)
    df_c = satterthwaite_df(c * ssa, d, df_pooled)
    df = satterthwaite_df(parts, d, df_pooled)
    # lambda fitted on the sample: one degree of freedom fewer, as in regression
    if tuned:
        var = var * df_pooled / np.maximum(sampled - strata - 1, 1)
        df = np.maximum(df - 1, 1)
        if units is not None:
            var = np.maximum(var, jackknife_variance(units, big_n, b_total))
    se = np.sqrt(var) / normaliser
    se_c = np.sqrt(var_classical) / normaliser
    q, q_c = special.stdtrit(df, 0.5 + level / 2), special.stdtrit(df_c, 0.5 + level / 2)
    value = total / normaliser
    classical = classical / normaliser
    # A human-only SRS of m units has variance N^2 (1/m - 1/N) S^2: solve for m at var.
    n_total = big_n.sum(axis=-1)
    pooled = _population_s2(ssa, mean_a, big_n)
    with np.errstate(divide="ignore", invalid="ignore"):
        eff = np.where(var > 0, squared(n_total) * pooled / (var + n_total * pooled), n_total)
    return Estimate(value, se, value - q * se, value + q * se, lam, classical, se_c,
                    classical - q_c * se_c, classical + q_c * se_c, df,
                    np.minimum(eff, n_total), sampled, level,
                    flat.sum(axis=-1) if spread is not None else 0,
                    np.asarray(census.all(axis=-1)))


def _flat(s2: np.ndarray, mean_square: np.ndarray, census: np.ndarray, n: np.ndarray,
          each: bool = False) -> np.ndarray:
    """The sampled strata short of a census whose variance s2 is 0 (to rounding: relative to
    the values' mean square), where every such stratum's is (the estimate would have no
    width), or with ``each`` wherever one is."""
    short = (~census) & (n >= 1)
    flat = short & (s2 <= ROUNDING * mean_square)
    if each:
        return flat
    return flat & (np.all(flat == short, axis=-1) & short.any(axis=-1))[..., None]


def concatenate(parts: list[Estimate]) -> Estimate:
    """Estimates, each a single one or vectorised over one axis, joined along it
    (``level``: the first's; a field held as one number for all, such as a default, is
    repeated)."""
    def join(f: str) -> np.ndarray:
        return np.concatenate([np.broadcast_to(getattr(e, f), np.atleast_1d(e.value).shape)
                               for e in parts])

    joined: dict[str, Any] = {f: parts[0].level if f == "level" else join(f)
                              for f in Estimate.__dataclass_fields__}
    return Estimate(**joined)


def take(e: Estimate, k: int) -> Estimate:
    """The k-th of estimates vectorised over one axis (a field held as one number for all
    is that number)."""
    taken: dict[str, Any] = {f: e.level if f == "level" else
                             np.broadcast_to(getattr(e, f), np.shape(e.value))[k]
                             for f in Estimate.__dataclass_fields__}
    return Estimate(**taken)


def unstack(e: Estimate) -> list[Estimate]:
    """``take`` of each of estimates vectorised over one axis, in order (each field
    broadcast once, not once per estimate)."""
    shape = np.shape(e.value)
    columns = {f: np.broadcast_to(getattr(e, f), shape) for f in Estimate.__dataclass_fields__
               if f != "level"}
    return [Estimate(**{f: v[k] for f, v in columns.items()}, level=e.level)
            for k in range(shape[0])]


def where(condition: np.ndarray, e: Estimate, otherwise: Estimate) -> Estimate:
    """The estimate e where condition holds, else otherwise (field by field)."""
    if np.ndim(condition) == 0:
        return e if bool(condition) else otherwise
    return Estimate(**{f: getattr(e, f) if f == "level" else
                       np.where(condition, getattr(e, f), getattr(otherwise, f))
                       for f in Estimate.__dataclass_fields__})


def post_stratified(m: Moments, domain_sizes: np.ndarray, b_total: np.ndarray,
                    normaliser: float, level: float = 0.95,
                    lam: float | np.ndarray | None = None, collapse: str = "adjacent",
                    spread: float | np.ndarray | None = None, units: Units | None = None,
                    each_flat: bool = False) -> tuple[Estimate, np.ndarray]:
    """The estimate post-stratified by a known domain outside which every a and b is 0 (a run's
    top k), and where it is usable.

    ``m``: moments of the sampled units in the domain; ``domain_sizes``: the domain's units per
    design stratum, (H,) or (..., H). The sampled units in the domain are weighted N_dh / n_dh
    and the interval is conditional on their number (Cochran 1977 sec. 5A.9); a post-stratum of
    fewer than two sampled units merges into the next (``collapse="all"``: all into one). Not
    usable where the domain holds fewer than three sampled units. ``units``, ``each_flat``: as
    in ``estimate_from_moments``.
    """
    if collapse not in ("adjacent", "all"):
        raise InputError(f"collapse must be 'adjacent' or 'all', got {collapse!r}")
    big_n = np.broadcast_to(np.asarray(domain_sizes, np.float64), m.n.shape)
    parts = np.stack(np.broadcast_arrays(m.n, m.sa, m.sb, m.saa, m.sbb, m.sab, big_n))

    # sampled, or not, too thinly for a variance
    def short(h: int) -> np.ndarray:
        n_h, size = parts[0][..., h], parts[6][..., h]
        return (size > 0) & (n_h < MIN_PER_STRATUM) & (n_h < size)

    strata = parts.shape[-1]
    # where each one went
    into = np.broadcast_to(np.arange(strata), big_n.shape).copy()
    if collapse == "all":
        any_short = np.any([short(h) for h in range(strata)], axis=0)
        total = parts.sum(axis=-1)
        parts = np.where(any_short[..., None], 0.0, parts)
        parts[..., 0] = np.where(any_short, total, parts[..., 0])
        into = np.where(any_short[..., None], 0, into)
    else:
        moves = [(h, h + 1) for h in range(strata - 1)] + [(h, h - 1)
                                                             for h in range(strata - 1, 0, -1)]
        for h, to in moves:
            s_h = short(h)
            parts[..., to] += np.where(s_h, parts[..., h], 0.0)
            parts[..., h] = np.where(s_h, 0.0, parts[..., h])
            into = np.where(s_h[..., None] & (into == h), to, into)
    # each unit into its post-stratum's merged one
    if units is not None:
        stratum = np.broadcast_to(units.stratum, np.shape(units.a))
        moved = np.take_along_axis(into, np.maximum(stratum, 0), axis=-1)
        units = replace(units, stratum=np.where(stratum >= 0, moved, -1))
    merged = Moments(*parts[:6])
    e = estimate_from_moments(merged, parts[6], b_total, normaliser, level, lam, check=False,
                              spread=spread, units=units, each_flat=each_flat)
    n_dom = m.n.sum(axis=-1)
    usable = (n_dom >= MIN_PER_STRATUM + 1) | (n_dom >= big_n.sum(axis=-1))
    return e, usable


def satterthwaite_df(parts: np.ndarray, dfs: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of independent per-stratum variance
    terms (..., H) with dfs (n_h - 1) each, capped at the pooled n - H (its value when the
    terms are proportional to their dfs)."""
    total = parts.sum(axis=-1)
    den = (parts ** 2 / dfs).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ws = np.where(den > 0, squared(total) / den, cap)
    return np.clip(ws, 1.0, cap)


def _population_s2(ssa: np.ndarray, mean_a: np.ndarray, big_n: np.ndarray) -> np.ndarray:
    """The population variance of a, estimated from the strata (within plus between)."""
    n_total = big_n.sum(axis=-1)
    overall = (big_n * mean_a).sum(axis=-1, keepdims=True) / np.maximum(n_total, 1)[..., None]
    within = ((big_n - 1) * ssa).sum(axis=-1)
    between = (big_n * (mean_a - overall) ** 2).sum(axis=-1)
    return (within + between) / np.maximum(n_total - 1, 1)


def estimate(human: np.ndarray, predicted_sampled: np.ndarray, predicted_total: float,
             stratum: np.ndarray | None = None, population: np.ndarray | None = None,
             normaliser: float | None = None, level: float = 0.95,
             lam: float | None = None, spread: float | np.ndarray | None = None) -> Estimate:
    """PPI estimate of a finite-population total / normaliser from a (stratified) simple
    random sample without replacement.

    ``human`` and ``predicted_sampled``: the sampled units' human and predicted values;
    ``predicted_total``: the predictions summed over all units; ``population``: units per
    stratum (required: without it the sampling fraction is unknown); ``spread``: as in
    ``estimate_from_moments``.
    """
    a = np.asarray(human, np.float64)
    b = np.asarray(predicted_sampled, np.float64)
    if a.shape != b.shape:
        raise InputError(f"human and predicted values differ in shape: {a.shape} vs {b.shape}")
    if population is None:
        raise InputError("the population size (units per stratum) is required")
    population = np.atleast_1d(np.asarray(population, np.float64))
    if stratum is None:
        stratum = np.zeros(a.shape[-1], dtype=np.int64)
    m = moments(a, b, stratum, len(population))
    if np.any(m.n > population):
        raise InputError("more sampled units than the population holds in a stratum")
    norm = float(population.sum()) if normaliser is None else float(normaliser)
    return estimate_from_moments(m, population, np.asarray(predicted_total, np.float64), norm,
                                 level, lam, spread=spread, units=Units(a, b, stratum))


def query_level(human_sampled: np.ndarray, predicted_all: np.ndarray, sampled: np.ndarray,
                level: float = 0.95, lam: float | None = None,
                spread: float | None = None) -> Estimate:
    """PPI estimate of the mean over all N queries of a per-query value, from the predicted
    (LLM-label) values of every query and the human-label values of a simple random sample
    of queries (``sampled``: their indices into ``predicted_all``; ``spread``: as in
    ``estimate_from_moments``)."""
    f = np.asarray(predicted_all, np.float64)
    # (n,), or (draws, n) with a 1-d predicted_all
    idx = np.asarray(sampled, np.int64)
    if np.any(np.diff(np.sort(idx, axis=-1), axis=-1) == 0):
        raise InputError("a query-level sample lists a query twice")
    n_all = f.shape[-1]
    if idx.shape[-1] < MIN_PER_STRATUM + 1:
        raise InputError(f"a query-level estimate needs at least {MIN_PER_STRATUM + 1} "
                         f"human-labelled queries; the sample has {idx.shape[-1]}")
    e = estimate(human_sampled, f[..., idx], f.sum(axis=-1), None, np.array([n_all]),
                 n_all, level, lam, spread)
    if spread is None or idx.shape[-1] >= SMALL_QUERY_SAMPLE:
        return e
    return with_range_bound(e, serfling_half_width(idx.shape[-1], n_all, float(spread), level))


#: below this many sampled queries a t interval can miss a skewed population's few large
#: values altogether (docs/ppi-method.md): the interval is widened to a range-based bound
SMALL_QUERY_SAMPLE = 30


def serfling_half_width(n: int, population: int, spread: float, level: float) -> float:
    """Half-width of the two-sided Hoeffding-Serfling interval for the mean of n values drawn
    without replacement from a population of N whose values lie in a range of width
    ``spread`` (Bardenet and Maillard 2015, sec. 2): spread sqrt(rho_n log(2/a) / 2n),
    rho_n = min(1 - (n - 1)/N, (1 - n/N)(1 + 1/n)). Valid for any population, skewed or not."""
    if n >= population:
        return 0.0
    rho = min(1.0 - (n - 1) / population, (1.0 - n / population) * (1.0 + 1.0 / n))
    return spread * float(np.sqrt(rho * np.log(2.0 / (1.0 - level)) / (2.0 * n)))


def with_range_bound(e: Estimate, half: float) -> Estimate:
    """The estimate with each interval the hull of its own and the range-based interval
    classical +- half around the human-only mean (it covers whenever either does); the
    PPI se grows to match its widened interval, so p-values agree with it."""
    low_c, high_c = e.classical - half, e.classical + half
    low, high = np.minimum(e.low, low_c), np.maximum(e.high, high_c)
    q = special.stdtrit(e.df, 0.5 + e.level / 2)
    se = np.maximum(e.se, np.maximum(high - e.value, e.value - low) / q)
    se_c = np.maximum(e.classical_se, half / q)
    return replace(e, low=low, high=high, se=se, classical_low=np.minimum(e.classical_low, low_c),
                   classical_high=np.maximum(e.classical_high, high_c), classical_se=se_c,
                   range_bound=np.full(np.shape(e.value), half))


def proportion_interval(e: Estimate, top: float, sampled: np.ndarray, units: float
                        ) -> Estimate:
    """The estimate of ``top`` times a proportion (each of ``units`` units worth 0 or ``top``
    / ``units``; ``sampled`` of them sampled) with Wilson score intervals at the effective
    sample size p(1 - p) / var, df-adjusted (Korn and Graubard 1998), in place of its t
    intervals, which are too narrow on the side of the sampled proportion nearer 0 or 1."""
    # nothing to estimate: the estimate is a census of nothing
    if units <= 0 or top <= 0:
        return e
    frac = np.minimum(np.asarray(sampled, np.float64) / units, 1.0)
    # a proportion of 0 or 1: the units sampled, fpc'd
    with np.errstate(divide="ignore"):
        at_edge = np.asarray(sampled, np.float64) / (1.0 - frac)
    q = special.stdtrit(e.df, 0.5 + e.level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        q_c = np.where(e.classical_se > 0, (e.classical_high - e.classical) / e.classical_se, q)
    low, high = _wilson(e.value, e.se, q, top, at_edge)
    c_low, c_high = _wilson(e.classical, e.classical_se, q_c, top, at_edge)
    # a census keeps its zero width
    keep = np.asarray(e.exact, bool)
    return replace(e, low=np.where(keep, e.low, low), high=np.where(keep, e.high, high),
                   classical_low=np.where(keep, e.classical_low, c_low),
                   classical_high=np.where(keep, e.classical_high, c_high))


def _wilson(value: np.ndarray, se: np.ndarray, q: np.ndarray, top: float,
            at_edge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval (quantile q) for value / top at the effective sample size;
    where the proportion is 0 or 1 (to rounding), or se is 0, at ``at_edge`` units."""
    p = np.clip(np.asarray(value, np.float64) / top, 0.0, 1.0)
    v = (np.asarray(se, np.float64) / top) ** 2
    edge = (p * (1.0 - p) <= ROUNDING) | (v <= 0)
    p = np.where(edge, np.round(p), p)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(edge, at_edge, p * (1.0 - p) / np.where(edge, 1.0, v))
        # q^2 / n: 0 for an infinite n
        r = q * q / n
        centre = (p + r / 2) / (1 + r)
        half = np.sqrt(r * p * (1.0 - p) + r * r / 4) / (1 + r)
    low = np.where(p <= 0, 0.0, centre - half)
    high = np.where(p >= 1, 1.0, centre + half)
    return low * top, high * top


def ppi_mean_ci(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray,
                level: float = 0.95, lam: float | None = None
                ) -> tuple[float, float, float, float]:
    """PPI++ mean for i.i.d. data (as ppi_py.ppi_mean_ci): (estimate, low, high, lambda)."""
    y, yhat = np.asarray(y, np.float64), np.asarray(yhat, np.float64)
    u = np.asarray(yhat_unlabelled, np.float64)
    n, big_n = len(y), len(u)
    if n < MIN_PER_STRATUM:
        raise InputError(f"PPI needs at least {MIN_PER_STRATUM} labelled values; got {n}")
    if lam is None:
        # lambda = 1 estimate centres the gradients
        first = u.mean() + (y - yhat).mean()
        gy, gh = y - first, yhat - first
        cov = 2 * ((gy - gy.mean()) * (gh - gh.mean())).sum() / n
        var = np.var(np.concatenate([gh, u - first]), ddof=1)
        lam = float(np.clip(cov / (2 * (1 + n / big_n) * var), 0, 1)) if var > 0 else 0.0
    value = lam * u.mean() + (y - lam * yhat).mean()
    se = np.sqrt((lam * u).std() ** 2 / big_n + (y - lam * yhat).std() ** 2 / n)
    z = special.ndtri(0.5 + level / 2)
    return float(value), float(value - z * se), float(value + z * se), float(lam)
