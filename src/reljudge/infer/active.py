"""What an active pair sample draws: inclusion probabilities from the judge's uncertainty on
each pair and the pair's weight in the runs' measures, a fixed-size draw with them, and the
budget that reaches a target width (``reljudge sample --design active``).

The probabilities are Neyman-like, pi_i proportional to sqrt(u_i * W_i): u_i the expected
squared difference of the human and the judge's gain on the pair (``Signal``), W_i its
squared rank weights summed over the runs, mixed with the uniform n / N (Zrnic and Candes
2024). ``infer.weighted`` estimates from such a sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reljudge.errors import InputError
from reljudge.infer import ppi
from reljudge.infer.cells import gain, human_truth, pair_weights
from reljudge.metrics.measures import Measure
from reljudge.stats import special
from reljudge.trec_data import Run

if TYPE_CHECKING:
    from reljudge.store import LabelStore

#: share of the budget spread evenly: no pair's probability below MIX * n / N
MIX = 0.2


@dataclass(frozen=True)
class Signal:
    """The judge's uncertainty per pooled pair: u, the expected squared difference between
    the human's and the judge's gain, and what it was built from (said to the user)."""

    source: str
    u: np.ndarray
    # each pair's expected squared human-judge gain difference, for the planner's widths
    # (None: u says where the judge errs, not how much)
    residual: np.ndarray | None = None


def _squared_gap(gains: np.ndarray, judge_gain: np.ndarray) -> np.ndarray:
    return (gains - judge_gain) ** 2


def signal_from_distributions(probs: Sequence[Sequence[float]], judge_gain: np.ndarray,
                              gain_of: np.ndarray, judge: str) -> Signal:
    """u from the judge's grade distributions (``probs[i][g]``; ``gain_of[g]``: the gain of
    grade g): E[(gain(H) - gain(judge))^2] with H distributed as the judge says."""
    p = np.asarray(probs, np.float64)
    g = np.asarray(gain_of, np.float64)[: p.shape[1]]
    u = (p[:, : len(g)] * _squared_gap(g[None, :], judge_gain[:, None])).sum(axis=1)
    return Signal(f"the grade distributions of {judge!r}", u, u)


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
    u = _fill_by_level(np.full(len(gap), np.nan), judge_gain, gap)
    return Signal(f"a pilot of {labelled} human-graded pairs (residual variance per judge "
                  f"grade)", u, u)


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
        # certain: out of the proportional draw
        taken = np.flatnonzero(free)[over]
        free[taken] = False
        # stays > 0 while a pair is free: the free shares summed to more
        left -= len(taken)
    # a share of 1 up to rounding is certain
    return np.where(pi > 1.0 - 1e-12, 1.0, pi)


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


def run_weights(runs: Sequence[Run], pairs: Sequence[tuple[str, str]], measure: Measure
                ) -> np.ndarray:
    """Each run's rank weight of each pair in ``measure`` (0 outside its top k), (runs,
    pairs)."""
    return np.array([pair_weights(run, pairs, measure) for run in runs]).reshape(
        len(runs), len(pairs))


def sizes(signal: Signal, weights: np.ndarray) -> np.ndarray:
    """Neyman-like sizes sqrt(u_i * W_i), W_i the pair's squared rank weights summed over
    the runs (``weights``: (runs, pairs); without runs every pair weighs 1), u_i the
    signal's plus its mean: a signal is noisy, and a pair it calls certain is not (judges
    that agree on 85 % of the pairs gave 0.07 correlation with the human residual; alone,
    their u made intervals wider and cover 72 %, docs/ppi-validation.md)."""
    spread = (weights ** 2).sum(axis=0) if len(weights) else np.ones(len(signal.u))
    u = np.maximum(signal.u, 0.0)
    return np.sqrt((u + u.mean()) * spread)


def expected_width(pi: np.ndarray, u: np.ndarray, weights: np.ndarray, queries: int,
                   level: float = 0.95) -> np.ndarray:
    """Each run's expected interval width with inclusion probabilities ``pi``: 2 z
    sqrt(sum (1 - pi) / pi * w^2 u) / Q (the Poisson-sampling variance, lambda = 1)."""
    z = special.ndtri(0.5 + level / 2)
    var = ((1.0 - pi) / pi * u)[None, :] * weights ** 2
    return 2 * z * np.sqrt(var.sum(axis=1)) / queries


def plan(signal: Signal, weights: np.ndarray, queries: int, width: float, most: int,
         level: float = 0.95) -> tuple[int | None, float]:
    """The smallest budget (at most ``most``) whose widest expected run interval is at most
    ``width``, and that widest width; (None, the narrowest at ``most``) when none is. The
    widths come from the signal's residual (else its u, which may not be on that scale)."""
    size = sizes(signal, weights)
    residual = signal.u if signal.residual is None else signal.residual

    def widest(n: int) -> float:
        return float(expected_width(inclusion_probabilities(size, n), residual, weights,
                                    queries, level).max(initial=0.0))

    narrowest = widest(most)
    if narrowest > width:
        return None, narrowest
    # widest(high) <= width; bisect for the smallest such budget
    low, high = 1, most
    while low < high:
        mid = (low + high) // 2
        if widest(mid) <= width:
            high = mid
        else:
            low = mid + 1
    return high, widest(high)


#: human-graded pooled pairs a pilot needs to say where the judge errs
PILOT_MIN = 10


def store_signal(store: LabelStore, judge: str, pairs: Sequence[tuple[str, str]],
                 measure: Measure) -> Signal:
    """The judge's uncertainty on ``pairs`` from the store: its grade distributions (a
    calibrated or panel source has them), else its disagreement with the store's other LLM
    judges, else a pilot of human grades; an InputError naming what to give when none."""
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
        u = _fill_by_level(np.where(known, found.u, np.nan), judge_gain)
        return Signal(found.source, u, u)
    others = [s.name for s in store.sources() if s.kind == "llm" and s.name != judge]
    labelled = {o: store.source_grades(o, pairs=pairs) for o in others}
    others = [o for o in others if labelled[o]]
    truth = human_truth(store, set(pairs))
    human_gain = _gains_of(truth, pairs, measure)
    if others:
        gains = np.array([_gains_of(labelled[o], pairs, measure) for o in others])
        found = signal_from_judges(gains, judge_gain, others)
        if len(truth) < PILOT_MIN:
            return found
        # how much the judge errs
        pilot = signal_from_pilot(human_gain, judge_gain)
        return Signal(f"{found.source}; widths from {pilot.source}", found.u, pilot.u)
    if len(truth) >= PILOT_MIN:
        return signal_from_pilot(human_gain, judge_gain)
    raise InputError(f"--design active: the store {store.path} has no uncertainty signal for "
                     f"judge {judge!r} (no grade distributions, no other judge's labels of "
                     f"the pool, {len(truth)} human-graded pooled pairs of the {PILOT_MIN} a "
                     f"pilot needs); give a calibrated source as --judge (reljudge calibrate), "
                     f"label the pool with a second judge, or grade a pilot sample "
                     f"(--design stratified-pairs) first")


def _gains_of(grades: Mapping[tuple[str, str], int], pairs: Sequence[tuple[str, str]],
              measure: Measure) -> np.ndarray:
    """The gain of each pair's grade in ``grades``, NaN where it has none."""
    g = np.array([grades.get(p, -1) for p in pairs], dtype=np.int64)
    return np.where(g >= 0, gain(np.maximum(g, 0), measure), np.nan)
