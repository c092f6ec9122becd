"""The active pair design: inclusion probabilities from the judge's uncertainty on each pair
and the pair's weight in the runs' measures, a fixed-size draw with those probabilities, and
the Horvitz-Thompson PPI estimate that weights each human label by 1 / its probability.

A pair whose human grade the judge predicts badly, and which weighs much in the runs' scores,
carries most of the estimate's variance; labelling it with a higher probability buys the most
width per label (active statistical inference: Zrnic and Candes, ICML 2024; stratified PPI:
Fisch et al., NeurIPS 2024). The probabilities are Neyman-like, pi_i proportional to
sqrt(u_i * W_i): u_i the expected squared difference of the human and the judge's gain on
the pair (``Signal``), W_i its squared rank weights summed over the runs, mixed with the
uniform n / N so that no pair's probability is near 0 (docs/ppi.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from reljudge.errors import InputError
from reljudge.infer import ppi

DESIGN = "active"
MIX = 0.2  # share of the budget spread evenly: no pair's probability below MIX * n / N


@dataclass(frozen=True)
class Signal:
    """The judge's uncertainty per pooled pair: u, the expected squared difference between
    the human's and the judge's gain, and what it was built from (said to the user)."""

    source: str
    u: np.ndarray


def _squared_gap(gains: np.ndarray, judge_gain: np.ndarray) -> np.ndarray:
    return (gains - judge_gain) ** 2


def signal_from_distributions(probs: Sequence[Sequence[float]], judge_gain: np.ndarray,
                              gain_of: np.ndarray, judge: str) -> Signal:
    """u from the judge's grade distributions (``probs[i][g]``; ``gain_of[g]``: the gain of
    grade g): E[(gain(H) - gain(judge))^2] with H distributed as the judge says."""
    p = np.asarray(probs, np.float64)
    g = np.asarray(gain_of, np.float64)[: p.shape[1]]
    u = (p[:, : len(g)] * _squared_gap(g[None, :], judge_gain[:, None])).sum(axis=1)
    return Signal(f"the grade distributions of {judge!r}", u)


def signal_from_judges(others: np.ndarray, judge_gain: np.ndarray, names: Sequence[str]
                       ) -> Signal:
    """u from other judges' gains (``others``: (J, pairs), NaN where one did not label):
    their mean squared difference from the judge; a pair no other judge labelled gets the
    mean of the pairs of its judge gain."""
    gap = _squared_gap(others, judge_gain[None, :])
    seen = np.isfinite(gap).sum(axis=0)
    u = np.divide(np.nansum(gap, axis=0), seen, out=np.full(len(judge_gain), np.nan),
                  where=seen > 0)
    return Signal(f"disagreement with {len(names)} other judge(s) ({', '.join(names)})",
                  _fill_by_level(u, judge_gain))


def signal_from_pilot(human_gain: np.ndarray, judge_gain: np.ndarray) -> Signal:
    """u from a pilot (``human_gain``: NaN where no human grade): per judge gain, the mean
    squared difference of the human-graded pairs (grade strata's residual variance)."""
    gap = _squared_gap(human_gain, judge_gain)
    labelled = int(np.isfinite(gap).sum())
    return Signal(f"a pilot of {labelled} human-graded pairs (residual variance per judge "
                  f"grade)", _fill_by_level(np.full(len(gap), np.nan), judge_gain, gap))


def _fill_by_level(u: np.ndarray, level: np.ndarray, known: np.ndarray | None = None
                   ) -> np.ndarray:
    """u where known; elsewhere the mean of ``known`` (default u) over the pairs of the same
    level (at least 2 of them), else over all pairs."""
    known = u if known is None else known
    ok = np.isfinite(known)
    overall = float(known[ok].mean()) if ok.any() else 0.0
    out = np.where(np.isfinite(u), u, np.nan)
    for v in np.unique(level):
        at = level == v
        have = ok & at
        fill = float(known[have].mean()) if have.sum() >= ppi.MIN_PER_STRATUM else overall
        out[at & ~np.isfinite(out)] = fill
    return out


def inclusion_probabilities(size: np.ndarray, budget: int, mix: float = MIX) -> np.ndarray:
    """pi_i proportional to ``size`` mixed with the even share (``mix`` of it), pairs whose
    share exceeds 1 taken with certainty, summing to ``budget``."""
    size = np.asarray(size, np.float64)
    count = len(size)
    if not 0 < budget <= count:
        raise InputError(f"a budget of {budget} pairs is not between 1 and the {count} pairs "
                         f"in the pool")
    total = size.sum()
    share = (1 - mix) * size / total + mix / count if total > 0 else np.ones(count)
    pi = np.ones(count)
    free = np.ones(count, dtype=bool)
    left = float(budget)
    while free.any():
        p = left * share[free] / share[free].sum()
        over = p >= 1.0
        if not over.any():
            pi[free] = p
            break
        taken = np.flatnonzero(free)[over]  # certain: out of the proportional draw
        free[taken] = False
        left -= len(taken)  # stays > 0 while a pair is free: the free shares summed to more
    return np.where(pi > 1.0 - 1e-12, 1.0, pi)  # a share of 1 up to rounding is certain


def systematic(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices drawn by randomised systematic sampling: exactly sum(pi) units, unit i with
    probability pi_i (Madow 1949; the order is shuffled first, Goodman and Kish 1950)."""
    pi = np.asarray(pi, np.float64)
    certain = np.flatnonzero(pi >= 1.0)
    rest = np.flatnonzero(pi < 1.0)
    rest = rest[rng.permutation(len(rest))]
    cum = np.cumsum(pi[rest])
    want = round(float(cum[-1])) if len(cum) else 0
    if want == 0:
        return np.sort(certain)
    cum *= want / cum[-1]
    start = rng.random()
    hits = np.diff(np.ceil(np.concatenate([[0.0], cum]) - start)) > 0
    return np.sort(np.concatenate([certain, rest[hits]]))


@dataclass(frozen=True)
class Sums:
    """Per-cell sums over the sampled pairs, arrays (...): e_a = a / pi, e_b = b / pi and
    c = 1 - pi (0 for a certain pair)."""

    sampled: np.ndarray  # sampled pairs short of certainty
    inside: np.ndarray  # of them, in the cell's domain (the run's top k)
    certain_inside: np.ndarray  # sampled with certainty, in the domain
    ta: np.ndarray  # sum e_a over every sampled pair
    tb: np.ndarray
    c: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    caa: np.ndarray
    cbb: np.ndarray
    cab: np.ndarray
    poisson: np.ndarray  # sum (1 - pi) / pi^2 over the sampled pairs in the domain
    dinv: np.ndarray  # sum 1 / pi and 1 / pi^2 over the uncertain sampled pairs in the domain
    dinv2: np.ndarray
    inv: np.ndarray  # sum 1 / pi, sum a^2 / pi: for the population variance of a
    taa: np.ndarray


def sums(mask: np.ndarray, a: np.ndarray, b: np.ndarray, pi: np.ndarray,
         domain: np.ndarray) -> Sums:
    """The sums of ``Sums`` for every draw and cell: ``mask`` (draws, units) 1 where a unit
    is sampled, ``a``, ``b``, ``domain`` (cells, units), ``pi`` (units,); arrays (draws,
    cells)."""
    mask = np.asarray(mask, np.float64)
    pi = np.asarray(pi, np.float64)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    dom = np.asarray(domain, np.float64)
    c = np.where(pi >= 1.0, 0.0, 1.0 - pi)
    ea, eb = a / pi, b / pi
    mc = mask * c
    every = np.ones_like(a)
    short = mask * (c > 0)
    return Sums(short @ every.T, short @ dom.T, mask * (c == 0) @ dom.T,
                mask @ ea.T, mask @ eb.T, mc @ every.T, mc @ ea.T, mc @ eb.T,
                mc @ (ea * ea).T, mc @ (eb * eb).T, mc @ (ea * eb).T,
                (mc / pi ** 2) @ dom.T, (short / pi) @ dom.T, (short / pi ** 2) @ dom.T,
                (mask / pi) @ every.T, mask @ (a * ea).T)


def estimate_from_sums(s: Sums, b_total: np.ndarray, normaliser: float, population: int,
                       domain_size: np.ndarray, labels: int, level: float = 0.95,
                       spread: float | None = None, lam: float | None = None) -> ppi.Estimate:
    """Horvitz-Thompson PPI estimate of sum(a over the population) / normaliser from the
    sums of a fixed-size unequal-probability sample, vectorised over the sums' axes.

    The estimate is lambda * b_total + sum over the sample of (a - lambda b) / pi; its
    variance Hajek's approximation for fixed-size high-entropy designs (Hajek 1964; Deville
    1999): m / (m - 1) sum c (e - A)^2, e = (a - lambda b) / pi, c = 1 - pi, A the
    c-weighted mean of e, over the m sampled pairs short of certainty; lambda minimises it
    (clipped to [0, 1]) and costs one degree of freedom of the k sampled pairs in the domain
    (t on k - 2; the human-only interval, lambda = 0, on k - 1). ``domain_size``: the
    population's pairs in the domain (a census of them: exact); no sampled pair in the
    domain: an unbounded interval (the caller clips it to the measure's range); residuals
    all equal short of a census: ppi.FLAT_RULE's variance, spread^2 / (k + 1) per unit.
    """
    m, k = s.sampled, s.inside
    factor = np.divide(m, m - 1, out=np.zeros(np.shape(m)), where=m > 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        saa = np.where(s.c > 0, s.caa - s.ca ** 2 / s.c, 0.0)
        sbb = np.where(s.c > 0, s.cbb - s.cb ** 2 / s.c, 0.0)
        sab = np.where(s.c > 0, s.cab - s.ca * s.cb / s.c, 0.0)
        tuned = lam is None
        lam_ = (np.clip(np.where(sbb > 0, sab / sbb, 0.0), 0.0, 1.0) if tuned
                else np.broadcast_to(np.asarray(lam, np.float64), np.shape(saa)))
    exact = np.asarray(s.certain_inside >= domain_size)
    empty = (k == 0) & ~exact
    var_c = factor * np.maximum(saa, 0.0)
    var = factor * np.maximum(saa - 2 * lam_ * sab + lam_ ** 2 * sbb, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # Kish's effective sample size
        k_eff = np.minimum(k, np.where(s.dinv2 > 0, s.dinv ** 2 / s.dinv2, 0.0))
    df_c = np.maximum(k_eff - 1, 1)
    df = np.maximum(k_eff - 2, 1) if tuned else df_c
    var = var * df_c / df  # lambda fitted on the sample, as a regression's residual variance
    flat = np.zeros(np.shape(var), dtype=bool)
    if spread is not None:
        scale = factor * (s.caa + lam_ ** 2 * s.cbb) + 1e-300
        flat_c = (var_c <= 1e-9 * scale) & ~exact & ~empty
        flat_r = (var <= 1e-9 * scale) & ~exact & ~empty
        per_unit = s.poisson / (k + 1.0)
        var_c = np.where(flat_c, spread ** 2 * per_unit, var_c)
        var = np.where(flat_r, ((1.0 + lam_) * spread) ** 2 * per_unit, var)
        flat = flat_c | flat_r
    var = np.where(empty, np.inf, np.where(exact, 0.0, var))
    var_c = np.where(empty, np.inf, np.where(exact, 0.0, var_c))
    value = (lam_ * b_total + s.ta - lam_ * s.tb) / normaliser
    classical = s.ta / normaliser
    se, se_c = np.sqrt(var) / normaliser, np.sqrt(var_c) / normaliser
    q, q_c = stats.t.ppf(0.5 + level / 2, df), stats.t.ppf(0.5 + level / 2, df_c)
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


@dataclass(frozen=True)
class ActiveDesign:
    """An active sample's estimates: each cell holds the sampled pairs' human (``a``) and
    judge (``b``) values, the judge's total over the pool and the values' spread."""

    pi: np.ndarray  # each sampled pair's inclusion probability
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]  # (items, pool) in top k
    population: int
    queries: int
    level: float

    def estimate(self, cell: dict, run: str, m, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The Horvitz-Thompson PPI estimate of a cell (a run, or a run minus ``other``)."""
        items, pool = self.in_top[(run, str(m))]
        if other:  # a difference is 0 outside both runs' top k
            items = items | self.in_top[(other, str(m))][0]
            pool = pool | self.in_top[(other, str(m))][1]
        s = sums(np.ones((1, len(self.pi))), np.asarray(cell["a"])[None],
                 np.asarray(cell["b"])[None], self.pi, items[None])
        e = estimate_from_sums(s, np.asarray(cell["b_total"]), float(self.queries),
                               self.population, np.asarray(int(pool.sum())), len(self.pi),
                               self.level, spread=cell["spread"])
        return _scalar(e), int(items.sum())


def active_design(sample, judge, human, runs, parsed, queries: list[str], cells: dict,
                  level: float) -> ActiveDesign:
    """Add each cell's weighted gains of the sampled pairs under both labels, the judge's
    total over the pool and the values' spread (as for the other pair designs)."""
    from reljudge.grades import GRADE_MAX
    from reljudge.infer.scores import _population, gain, pair_weights

    pop, _, _ = _population(sample, judge)
    item_pairs = sample.pairs()
    hg = {(q, d): g for q, d, g in human}
    jg = {(q, d): g for q, d, g in judge}
    h_grades = np.array([hg[p] for p in item_pairs])
    j_grades = np.array([jg[p] for p in item_pairs])
    pop_grades = np.array([jg[p] for p in pop])
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for m in parsed:
        top_gain = gain(np.array([GRADE_MAX]), m)[0]
        for run in runs:
            w_pop = pair_weights(run, pop, m)
            w_items = pair_weights(run, item_pairs, m)
            cell = cells[(run.name, str(m))]
            cell["a"] = w_items * gain(h_grades, m)
            cell["b"] = w_items * gain(j_grades, m)
            cell["b_total"] = float((w_pop * gain(pop_grades, m)).sum())
            cell["spread"] = float(max(w_pop.max(initial=0), w_items.max(initial=0))
                                   * top_gain)
            in_top[(run.name, str(m))] = (w_items > 0, w_pop > 0)
    pi = np.array([i.prob for i in sample.items], dtype=np.float64)
    return ActiveDesign(pi, in_top, len(pop), len(queries), level)


def draw(pairs: Sequence[tuple[str, str]], sizes: Mapping[tuple[str, str], float],
         budget: int, rng: np.random.Generator) -> list[tuple[str, str, float, str | None]]:
    """(qid, docid, inclusion probability, stratum None) of an active sample of ``pairs``,
    in a random grading order: pi proportional to ``sizes`` (see inclusion_probabilities)."""
    missing = [p for p in pairs if p not in sizes]
    if missing:
        raise InputError(f"{len(missing)} pooled pairs have no size for the active design, "
                         f"e.g. {missing[0][0]} {missing[0][1]}")
    pi = inclusion_probabilities(np.array([sizes[p] for p in pairs]), budget)
    chosen = systematic(pi, rng)
    return [(*pairs[i], float(pi[i]), None) for i in chosen[rng.permutation(len(chosen))]]


def run_weights(runs, pairs: Sequence[tuple[str, str]], measure) -> np.ndarray:
    """Each run's rank weight of each pair in ``measure`` (0 outside its top k), (runs,
    pairs)."""
    from reljudge.infer.scores import pair_weights

    return np.array([pair_weights(run, pairs, measure) for run in runs]).reshape(
        len(runs), len(pairs))


def sizes(signal: Signal, weights: np.ndarray) -> np.ndarray:
    """Neyman-like sizes sqrt(u_i * W_i), W_i the pair's squared rank weights summed over
    the runs (``weights``: (runs, pairs); without runs every pair weighs 1), u_i the
    signal's plus its mean: a signal is noisy, and a pair it calls certain is not (judges
    that agree on 85 % of the pairs gave 0.07 correlation with the human residual; alone,
    their u made intervals wider and cover 72 %, docs/ppi.md)."""
    spread = (weights ** 2).sum(axis=0) if len(weights) else np.ones(len(signal.u))
    u = np.maximum(signal.u, 0.0)
    return np.sqrt((u + u.mean()) * spread)


def expected_width(pi: np.ndarray, u: np.ndarray, weights: np.ndarray, queries: int,
                   level: float = 0.95) -> np.ndarray:
    """Each run's expected interval width with inclusion probabilities ``pi``: 2 z
    sqrt(sum (1 - pi) / pi * w^2 u) / Q (the Poisson-sampling variance, lambda = 1)."""
    z = stats.norm.ppf(0.5 + level / 2)
    var = ((1.0 - pi) / pi * u)[None, :] * weights ** 2
    return 2 * z * np.sqrt(var.sum(axis=1)) / queries


def plan(signal: Signal, weights: np.ndarray, queries: int, width: float, most: int,
         level: float = 0.95) -> tuple[int | None, float]:
    """The smallest budget (at most ``most``) whose widest expected run interval is at most
    ``width``, and that widest width; (None, the narrowest at ``most``) when none is."""
    size = sizes(signal, weights)

    def widest(n: int) -> float:
        return float(expected_width(inclusion_probabilities(size, n), signal.u, weights,
                                    queries, level).max(initial=0.0))

    narrowest = widest(most)
    if narrowest > width:
        return None, narrowest
    low, high = 1, most  # widest(high) <= width; bisect for the smallest such budget
    while low < high:
        mid = (low + high) // 2
        if widest(mid) <= width:
            high = mid
        else:
            low = mid + 1
    return high, widest(high)


PILOT_MIN = 10  # human-graded pooled pairs a pilot needs to say where the judge errs


def store_signal(store, judge: str, pairs: Sequence[tuple[str, str]], measure) -> Signal:
    """The judge's uncertainty on ``pairs`` from the store: its grade distributions (a
    calibrated or panel source has them), else its disagreement with the store's other LLM
    judges, else a pilot of human grades; an InputError naming what to give when none."""
    from reljudge.infer.scores import gain, human_truth

    grades = store.source_grades(judge)
    judge_gain = gain(np.array([grades[p] for p in pairs]), measure)
    dist = store.distributions(judge)
    if any(p in dist for p in pairs):
        width = max(len(v) for v in dist.values())
        probs = np.array([list(dist[p]) + [0.0] * (width - len(dist[p])) if p in dist
                          else [np.nan] * width for p in pairs])
        known = np.isfinite(probs[:, 0])
        found = signal_from_distributions(np.nan_to_num(probs), judge_gain,
                                          gain(np.arange(width), measure), judge)
        return Signal(found.source, _fill_by_level(np.where(known, found.u, np.nan),
                                                   judge_gain))
    others = [s.name for s in store.sources() if s.kind == "llm" and s.name != judge]
    labelled = {o: store.source_grades(o, pairs=pairs) for o in others}
    others = [o for o in others if labelled[o]]
    if others:
        gains = np.array([[np.nan if p not in labelled[o] else
                           float(gain(np.array([labelled[o][p]]), measure)[0]) for p in pairs]
                          for o in others])
        return signal_from_judges(gains, judge_gain, others)
    truth = human_truth(store, set(pairs))
    if len(truth) >= PILOT_MIN:
        human_gain = np.array([np.nan if p not in truth else
                               float(gain(np.array([truth[p]]), measure)[0]) for p in pairs])
        return signal_from_pilot(human_gain, judge_gain)
    raise InputError(f"--design active: the store {store.path} has no uncertainty signal for "
                     f"judge {judge!r} (no grade distributions, no other judge's labels of "
                     f"the pool, {len(truth)} human-graded pooled pairs of the {PILOT_MIN} a "
                     f"pilot needs); give a calibrated source as --judge (reljudge calibrate), "
                     f"label the pool with a second judge, or grade a pilot sample "
                     f"(--design stratified-pairs) first")


def warn_unweighed(sample, rows: list, diffs: list) -> tuple[list, list]:
    """The rows of runs the active draw did not weigh (it weighed ``sample.params["runs"]``)
    with a warning: their top-k pairs may have had small probabilities, and on the benchmark
    such runs' intervals covered 87-92 % (docs/ppi.md)."""
    from dataclasses import replace

    weighed = set(sample.params.get("runs") or [])
    if not weighed:
        return rows, diffs

    def mark(r):
        names = [n.strip() for n in r.run.split(" - ")]
        if all(n in weighed for n in names):
            return r
        said = (f"from an active sample drawn for other runs ({', '.join(sorted(weighed))}): "
                f"pairs of this run's top k had small inclusion probabilities, and on the "
                f"benchmark such intervals covered 87-92 %, not 95 %: likely too narrow")
        return replace(r, warning="; ".join(w for w in (r.warning, said) if w))

    return [mark(r) for r in rows], [mark(r) for r in diffs]
