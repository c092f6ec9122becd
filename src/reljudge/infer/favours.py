"""The runs a judge favours: per run, the judge-only score minus the human-based estimate of
the score under human labels, with its interval, a flag where the interval excludes 0, and
each run's rank under either.

The judge-only score is a fixed number, so the bias's interval is the estimate's turned
around it: [judge - high, judge - low]. The flag is per run at the confidence level; the
p-value of no bias is Holm-corrected over the runs of the measure, for a reader who asks
whether any of many runs is favoured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.stats.ranks import kendall_tau_b, order_of
from reljudge.stats.significance import holm
from reljudge.tables import Interval

if TYPE_CHECKING:
    from reljudge.infer import ppi
    from reljudge.infer.cells import RunEstimate
    from reljudge.metrics.measures import Measure

#: the top k systems, by the human-based estimate, whose two rankings Kendall's tau compares
TOP = 10
#: the multiple-testing correction of the flags and its family, as the output states them
CORRECTION = "Holm"
FAMILY = "the runs of the measure"
#: a bias within this share of the measure's scale is rounding: an exact 0
ROUNDING = 1e-12
OVER, UNDER = "over-rates", "under-rates"


@dataclass(frozen=True)
class RunBias:
    """One run: its judge-only score, the human-based estimate, their difference (the bias)
    with intervals, whether the judge over- or under-rates it, and its rank under each."""

    run: str
    measure: str
    # the score under the judge's labels alone
    judge: float
    # the human-based estimate (PPI; exact for a census)
    human: float
    human_low: float
    human_high: float
    # judge - human: positive where the judge over-rates the run
    bias: float
    bias_low: float
    bias_high: float
    # two-sided p-value of no bias
    p: float
    # Holm-corrected over the runs of the measure
    p_holm: float
    # OVER or UNDER where the bias's interval excludes 0, else None
    flag: str | None
    # flagged, and still so after the correction
    holm: bool
    # 1 = best
    rank_judge: int
    rank_human: int
    # a census: no sampling error
    exact: bool

    def says(self, digits: int = 2) -> str | None:
        """The flag in words: "the judge over-rates RUN by 0.08 nDCG@10 [0.03, 0.13]"."""
        if self.flag is None:
            return None
        size, low, high = (abs(v) for v in (self.bias, self.bias_low, self.bias_high))
        low, high = sorted((low, high))
        span = "(exact)" if self.exact else f"[{low:.{digits}f}, {high:.{digits}f}]"
        return f"the judge {self.flag} {self.run} by {size:.{digits}f} {self.measure} {span}"


@dataclass(frozen=True, repr=False)
class Favours(Tabular):
    """The runs of one measure: each run's bias, and how the two rankings agree (Kendall's
    tau-b over the top ``top`` runs by the human-based estimate, and over all)."""

    measure: str
    level: float
    top: int
    runs: list[RunBias]
    tau_top: float | None
    tau_all: float | None
    correction: str = CORRECTION
    family: str = FAMILY

    def flagged(self) -> list[RunBias]:
        """The runs whose bias's interval excludes 0, largest bias first."""
        return sorted((r for r in self.runs if r.flag), key=lambda r: -abs(r.bias))

    def table(self, digits: int = 4) -> tuple[list[str], list[list]]:
        """Headers and rows of the per-run table, in the judge-only order."""
        pct = f"{self.level:.0%}"
        exact = Interval("exact (census)")
        headers = ["run", "measure", "judge-only", "human-based", f"human {pct} CI", "bias",
                   f"bias {pct} CI", "p", "p (Holm)", "flag", "after Holm", "rank judge",
                   "rank human"]
        rows = [[r.run, r.measure, r.judge, r.human,
                 exact if r.exact else Interval.of(r.human_low, r.human_high, digits), r.bias,
                 exact if r.exact else Interval.of(r.bias_low, r.bias_high, digits), r.p,
                 r.p_holm, r.flag or "-", r.flag if r.holm else "-", r.rank_judge,
                 r.rank_human] for r in sorted(self.runs, key=lambda r: r.rank_judge)]
        return headers, rows

    def tau_line(self) -> str:
        """Kendall's tau-b between the judge-only and the human-based ranking."""
        def show(t: float | None) -> str:
            return "-" if t is None else f"{t:.3f}"

        n = len(self.runs)
        top = f"top {self.top}" if n > self.top else f"top {self.top} (all {n} runs)"
        return (f"{self.measure}: Kendall's tau-b, judge-only vs human-based ranking: {top} "
                f"by the human-based estimate {show(self.tau_top)}; all runs "
                f"{show(self.tau_all)}")

    def lines(self) -> list[str]:
        """The flags in words, then the tau line."""
        return [*(r.says() or "" for r in self.flagged()), self.tau_line()]

    def how(self) -> str:
        """How the bias and its flags were made."""
        alpha = round(1.0 - self.level, 12)
        return (f"bias = judge-only - human-based; flag: its {self.level:.0%} interval "
                f"excludes 0, per run (an unbiased run is flagged with probability about "
                f"{alpha:g}); 'after Holm': its p-value {self.correction}-corrected over "
                f"{self.family} at most {alpha:g} (the reljudge docs: Scores from a few human labels)")

    def notes(self) -> list[str]:
        """The flags in words, the tau line, and how the flags were made."""
        return [*self.lines(), self.how()]

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame, one row per run, every field of ``RunBias`` as a column."""
        from dataclasses import astuple, fields

        return dataframe([f.name for f in fields(RunBias)], [astuple(r) for r in self.runs])

    def to_json(self) -> dict:
        """The table as plain data (for ``--json``)."""
        return {**asdict(self), "says": [r.says() for r in self.flagged()]}


def favours_of(measure: str, rows: Sequence[RunEstimate], p: Sequence[float], level: float,
               top: int = TOP) -> Favours:
    """The table from each run's estimate row (its ``llm`` and ``ppi`` columns) and the
    p-value of no bias of each."""
    names = [r.run for r in rows]
    judge = np.array([r.llm for r in rows])
    human = np.array([r.ppi for r in rows])
    alpha = round(1.0 - level, 12)
    flags = [_flag(r) for r in rows]
    # a census has no sampling error: its bias is there (p 0) or is not (p 1)
    p = [(0.0 if f else 1.0) if r.exact else float(v) for r, f, v in zip(rows, flags, p,
                                                                         strict=True)]
    adjusted = holm(np.asarray(p, np.float64)) if len(p) else np.asarray(p, np.float64)
    by_judge = {i: k for k, i in enumerate(order_of(judge, names), 1)}
    by_human = {i: k for k, i in enumerate(order_of(human, names), 1)}
    out = []
    for i, (r, flag) in enumerate(zip(rows, flags, strict=True)):
        out.append(RunBias(r.run, measure, r.llm, r.ppi, r.ppi_low, r.ppi_high,
                           r.llm - r.ppi, r.llm - r.ppi_high, r.llm - r.ppi_low, p[i],
                           float(adjusted[i]), flag,
                           flag is not None and float(adjusted[i]) <= alpha, by_judge[i],
                           by_human[i], r.exact))
    best = order_of(human, names)[:top]
    return Favours(measure, level, top, out, _tau(human[best], judge[best]),
                   _tau(human, judge))


def _flag(r: RunEstimate) -> str | None:
    """OVER where the bias's interval lies above 0, UNDER where below, else None."""
    tol = ROUNDING * max(1.0, abs(r.llm))
    if r.llm - r.ppi_high > tol:
        return OVER
    return UNDER if r.llm - r.ppi_low < -tol else None


def judge_bias(estimates: ppi.Estimate, rows: Sequence[RunEstimate], m: Measure,
               level: float, top: int = TOP) -> Favours:
    """The table of measure ``m`` from the runs' estimate rows and, for each run's p-value,
    the estimate behind its row (``estimates``, vectorised over the rows of ``m`` in their
    order) shifted by the judge-only score."""
    mine = [r for r in rows if r.measure == str(m)]
    shifted = replace(estimates, value=estimates.value - np.array([r.llm for r in mine]))
    return favours_of(str(m), mine, shifted.p_value().tolist(), level, top)


def _tau(x: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b, None where undefined (fewer than two runs, or one ranking all ties)."""
    t = kendall_tau_b(x, y) if len(x) >= 2 else float("nan")
    return None if np.isnan(t) else t
