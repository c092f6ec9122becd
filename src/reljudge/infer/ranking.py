"""Runs ranked per measure, with the pairwise orders a human sample supports.

Every pair of runs gets the paired PPI estimate of its difference on the shared sample and a
two-sided p-value; a measure's p-values are Holm-corrected together (Holm 1979), and "A > B"
is supported where A - B's corrected p-value is at most alpha and the estimate is positive.
The ranking reported is the LLM-only order changed only where the supported orders demand:
a topological sort that places, at each step, the highest LLM-scored run whose supported
superiors are all placed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from reljudge.choices import PPI_PAGE
from reljudge.infer import ppi
from reljudge.infer.cells import estimates
from reljudge.infer.ranges import difference_range
from reljudge.metrics.measures import Measure
from reljudge.stats import holm
from reljudge.tables import Interval

if TYPE_CHECKING:
    from reljudge.infer.cells import Cells, Design, RunEstimate

#: the multiple-testing correction and its family, as the output states them
CORRECTION = "Holm"
FAMILY = "all pairs of runs per measure"
#: what the output says when there is nothing to rank
NO_RANKING = "no ranking: it needs at least two runs"


@dataclass(frozen=True)
class PairOrder:
    """One pair of runs: the paired PPI estimate of ``first`` minus ``second``, its p-values
    and the order the corrected test supports (None: the sample does not say)."""

    first: str
    second: str
    difference: float
    low: float
    high: float
    # two-sided p-value of no difference
    p: float
    # corrected over the family (every pair of runs of the measure)
    p_holm: float
    # "A > B" when the corrected test rejects equality that way
    supported: str | None


@dataclass(frozen=True)
class RankedRun:
    """A run's place in the reported ranking and the runs the sample puts it above/below."""

    rank: int
    run: str
    llm: float
    ppi: float
    ppi_low: float
    ppi_high: float
    # runs the sample supports this run being better than
    above: list[str]
    # runs the sample supports being better than this one
    below: list[str]


@dataclass(frozen=True)
class Ranking:
    """The runs of one measure in reported order, and every pair's test."""

    measure: str
    alpha: float
    runs: list[RankedRun]
    pairs: list[PairOrder]
    # supported orders it could not keep
    conflicts: list[str] = field(default_factory=list)
    correction: str = CORRECTION
    family: str = FAMILY

    def table(self, digits: int = 4) -> tuple[list[str], list[list]]:
        """Headers and rows of the ranking table."""
        pct = f"{1 - self.alpha:.0%}"
        headers = ["rank", "run", "measure", "llm", "ppi", f"ppi {pct} CI",
                   "significantly above", "significantly below"]
        return headers, [[r.rank, r.run, self.measure, r.llm, r.ppi,
                          Interval.of(r.ppi_low, r.ppi_high, digits),
                          ", ".join(r.above) or "-", ", ".join(r.below) or "-"]
                         for r in self.runs]

    def to_json(self) -> dict:
        """The ranking as plain data (for ``--json``): ``dataclasses.asdict``'s dict, built
        without its deep copy of each field of each of the R(R-1)/2 pairs."""
        return _plain(self)


def _plain(obj: Any) -> dict:
    """``asdict`` of a dataclass whose fields are dataclasses, lists of dataclasses or of
    immutable values, and immutable values: each dict and list new, the values shared."""
    out = {}
    for name in _field_names(type(obj)):
        v = getattr(obj, name)
        if isinstance(v, list):
            v = [_plain(x) if is_dataclass(x) else x for x in v]
        elif is_dataclass(v):
            v = _plain(v)
        out[name] = v
    return out


#: each dataclass's field names, found once
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    if cls not in _FIELD_NAMES:
        _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return _FIELD_NAMES[cls]


def supported_orders(difference: np.ndarray, p_holm: np.ndarray, alpha: float) -> np.ndarray:
    """+1 where the corrected test supports first > second, -1 for second > first, else 0."""
    return np.where(np.asarray(p_holm) <= alpha, np.sign(difference), 0).astype(np.int64)


def reported_order(llm: Sequence[float], better: np.ndarray,
                   tiebreak: Sequence[float] | None = None) -> list[int]:
    """Indices of the runs in reported order: at each step, of the runs every supported
    superior of which is placed, the one with the highest LLM score (then ``tiebreak``, then
    input order). ``better[i, j]``: the sample supports run i above run j. Where the supported
    orders form a cycle, the run with the fewest unplaced superiors goes next."""
    n = len(llm)
    by_llm = sorted(range(n), key=lambda i: (-llm[i], -(tiebreak[i] if tiebreak else 0.0), i))
    place = {i: k for k, i in enumerate(by_llm)}
    # unplaced superiors of each run
    waiting = np.asarray(better, dtype=bool).sum(axis=0)
    placed: list[int] = []
    left = list(by_llm)
    while left:
        pick = min(left, key=lambda i: (waiting[i] > 0, waiting[i], place[i]))
        placed.append(pick)
        left.remove(pick)
        waiting = waiting - np.asarray(better[pick], dtype=np.int64)
    return placed


def rank_pairs(names: Sequence[str], measure: str, llm: Sequence[float],
               ppi: Sequence[tuple[float, float, float]], pairs: Sequence[tuple[int, int]],
               diffs: Sequence[tuple[float, float, float, float]], alpha: float) -> Ranking:
    """The ranking from each run's LLM score and PPI row (value, low, high) and each pair's
    (i, j) difference i - j (value, low, high, p-value)."""
    p = np.array([d[3] for d in diffs])
    adjusted = holm(p) if len(p) else p
    sign = supported_orders(np.array([d[0] for d in diffs]), adjusted, alpha)
    better = np.zeros((len(names), len(names)), dtype=bool)
    orders = []
    for (i, j), s, d, q in zip(pairs, sign.tolist(), diffs, adjusted.tolist(), strict=True):
        hi, lo = (i, j) if s > 0 else (j, i)
        if s:
            better[hi, lo] = True
        orders.append(PairOrder(names[i], names[j], d[0], d[1], d[2], d[3], q,
                                f"{names[hi]} > {names[lo]}" if s else None))
    order = reported_order(llm, better, [v for v, _, _ in ppi])
    at = {i: pos for pos, i in enumerate(order)}
    runs = [RankedRun(pos + 1, names[i], llm[i], *ppi[i],
                      [names[j] for j in order if better[i, j]],
                      [names[j] for j in order if better[j, i]])
            for pos, i in enumerate(order)]
    conflicts = [f"{names[i]} > {names[j]}" for i, j in zip(*np.nonzero(better), strict=True)
                 if at[i] > at[j]]
    return Ranking(measure, alpha, runs, orders, conflicts)


def rank_runs(design: Design, cells: Cells, names: Sequence[str], m: Measure,
              rows: Sequence[RunEstimate], level: float) -> Ranking | None:
    """The ranking of the runs ``names`` on ``m`` from their rows and every pair's paired
    difference through ``design``; None for fewer than two runs."""
    if len(names) < 2:
        return None
    mine = {r.run: r for r in rows if r.measure == str(m)}
    low, high = difference_range(m)
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    e = differences(design, cells, names, m, pairs)
    diffs = list(zip(np.clip(e.value, low, high).tolist(), np.clip(e.low, low, high).tolist(),
                     np.clip(e.high, low, high).tolist(), e.p_value().tolist(), strict=True))
    return rank_pairs(names, str(m), [mine[n].llm for n in names],
                      [(mine[n].ppi, mine[n].ppi_low, mine[n].ppi_high) for n in names],
                      pairs, diffs, round(1.0 - level, 12))


def differences(design: Design, cells: Cells, names: Sequence[str], m: Measure,
                pairs: Sequence[tuple[int, int]]) -> ppi.Estimate:
    """The paired estimate of each pair (i, j) of runs' difference, names[i] minus
    names[j], vectorised over the pairs (``infer.cells.estimates``)."""
    return estimates(design, cells, names, m, pairs)[0]


def ranking_note(rankings: Sequence[Ranking]) -> str:
    """One line saying how the rankings were made, and any supported order one could not keep."""
    pairs = len(rankings[0].pairs)
    broken = "; ".join(f"{r.measure}: {', '.join(r.conflicts)}" for r in rankings
                       if r.conflicts)
    return (f"ranking: the LLM-only order, changed only where the sample supports another; "
            f"'significantly above/below': the orders a paired PPI difference supports, its "
            f"two-sided p-value {CORRECTION}-corrected over {FAMILY} ({pairs} pair"
            f"{'s' if pairs > 1 else ''}) at most {rankings[0].alpha:g} ({PPI_PAGE})"
            + (f"; supported orders that form a cycle, not all kept: {broken}" if broken else ""))
