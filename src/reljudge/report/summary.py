"""The report's answers in words: which run is best, which differences from the baseline are
significant, and how far the judge's labels can be trusted, with warnings where too little
data backs a statistic. Pure functions over a ``stats.Comparison`` and an ``audit`` result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reljudge.audit.result import AuditResult
    from reljudge.stats.compare import Comparison

#: below this many pairs judged by both, agreement statistics (kappa) are too unstable to read
MIN_PAIRS = 200
#: below this many runs, a rank correlation between two run orderings (Kendall tau) says little
MIN_RUNS = 5
#: Landis & Koch's reading of kappa: upper bound of each band, inclusive
LANDIS_KOCH = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"),
               (1.00, "almost perfect"))
#: what a Kendall tau between two run rankings does and does not say
TAU_CAVEAT = ("Kendall tau counts swapped pairs of runs and weighs every swap alike, near the "
              "top of the ranking or not; 0.9 is the customary bar for 'the same ranking' "
              "(Voorhees 2000), and tau says nothing about how far apart the scores are.")
LANDIS_KOCH_CITATION = ("J. R. Landis and G. G. Koch (1977), The measurement of observer "
                        "agreement for categorical data, Biometrics 33(1):159-174")


def landis_koch(kappa: float) -> str:
    """The plain reading of a kappa value: poor (< 0), slight (0-0.20), fair (0.21-0.40),
    moderate (0.41-0.60), substantial (0.61-0.80) or almost perfect (0.81-1)."""
    if kappa is None or math.isnan(kappa):
        raise ValueError("kappa is undefined; it has no reading")
    if kappa < 0:
        return "poor"
    for upper, word in LANDIS_KOCH:
        if kappa <= upper + 1e-12:
            return word
    return "almost perfect"


def is_coverage(measure: str) -> bool:
    """True for a coverage measure (Judged@k): a share of labelled documents, not a score
    two runs are tested on."""
    return str(measure).startswith("Judged")


@dataclass
class Summary:
    """Sentences for the top of the report, and the warnings that go with them."""

    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _num(v: float, digits: int = 4) -> str:
    return f"{v:.{digits}f}"


def _signed(v: float, digits: int = 4) -> str:
    return f"{v:+.{digits}f}"


def primary_measure(comp: Comparison) -> str:
    """The measure the summary and the plots are about: the first that is not coverage."""
    return next((m for m in comp.measures if not is_coverage(m)), comp.measures[0])


def comparison_summary(comp: Comparison, digits: int = 4, partial: str | None = None) -> Summary:
    """Best run, significant differences (after the comparison's correction), coverage;
    numbers to ``digits`` decimals. On ``partial`` labels (the PARTIAL line) no best run is
    named: the ranking of incomplete labels may not be the ranking of complete ones."""
    from reljudge.stats.compare import CORRECTION_NAMES

    out = Summary()
    m0 = primary_measure(comp)
    means = {n: comp.cells[(n, m0)].interval.mean for n in comp.runs}
    top = max(means.values())
    best = [n for n in comp.runs if means[n] == top]
    iv = comp.cells[(best[0], m0)].interval
    if partial:
        out.lines.append(f"No best run is named: {partial}.")
    elif len(best) > 1:
        out.lines.append(f"Best on {m0}: {', '.join(best)} tie at {_num(top, digits)}.")
    else:
        b = best[0]
        line = (f"Best run on {m0}: {b} ({_num(iv.mean, digits)}, 95% CI "
                f"[{_num(iv.low, digits)}, {_num(iv.high, digits)}])")
        if b == comp.baseline:
            line += "; it is the baseline."
        elif comp.cells[(b, m0)].significant:
            line += f", significantly better than the baseline {comp.baseline}."
        else:
            line += (f", but its lead over the baseline {comp.baseline} is not significant: "
                     "on these queries the two cannot be told apart.")
        out.lines.append(line)
    tested = [m for m in comp.measures if not is_coverage(m)]
    others = [n for n in comp.runs if n != comp.baseline]
    if others and tested:
        corr = CORRECTION_NAMES[comp.correction]
        out.lines.append(
            f"Differences from the baseline {comp.baseline}: two-sided {comp.test} test per "
            f"measure, {corr} correction over {len(others)} comparison(s), alpha "
            f"{comp.alpha}, over {len(comp.queries)} queries.")
        for m in tested:
            better: list[str] = []
            worse: list[str] = []
            same: list[str] = []
            for n in others:
                c = comp.cells[(n, m)]
                # compare sets both for every run but the baseline
                assert c.diff is not None and c.p_adjusted is not None
                text = (f"{n} ({_signed(c.diff, digits)}, adjusted p "
                        f"{_num(c.p_adjusted, digits)})")
                if c.significant:
                    (better if c.diff > 0 else worse).append(text)
                else:
                    same.append(n)
            parts = []
            if better:
                parts.append("significantly better: " + "; ".join(better))
            if worse:
                parts.append("significantly worse: " + "; ".join(worse))
            if same:
                parts.append("no significant difference: " + ", ".join(same))
            out.lines.append(f"{m}: " + "; ".join(parts) + ".")
    for m in comp.measures:
        if is_coverage(m):
            vals = ", ".join(f"{n} {_num(comp.cells[(n, m)].interval.mean, digits)}"
                             for n in comp.runs)
            out.lines.append(f"{m} is coverage (the share of each ranking's top documents "
                             f"that has a label), not a test: {vals}.")
    if len(comp.queries) < 25:
        out.warnings.append(f"Only {len(comp.queries)} queries back the paired tests: "
                            "differences smaller than the spread between queries cannot be "
                            "detected; a 'not significant' here is weak evidence of no "
                            "difference.")
    out.warnings += list(comp.warnings)
    return out


def judge_summary(result: AuditResult, digits: int = 3) -> Summary:
    """How far each judge agrees with the reference labels, in Landis & Koch's words, and
    whether its run ranking matches; warnings when too few pairs or runs back a number.
    Statistics to ``digits`` decimals."""
    out = Summary()
    for j in result.judges:
        it = j.items
        kappa = it.stats.get("kappa")
        quad = it.stats.get("kappa_quadratic")
        if kappa is None:
            why = it.undefined.get("kappa", "undefined")
            out.lines.append(f"Judge {j.name}: Cohen's kappa is undefined on its {it.pairs} "
                             f"pairs ({why}).")
        else:
            line = (f"Judge {j.name} against {result.reference}: Cohen's kappa "
                    f"{_num(kappa, digits)} over {it.pairs} pairs, {landis_koch(kappa)} "
                    "agreement (Landis & Koch 1977)")
            if "kappa" in it.ci:
                lo, hi = it.ci["kappa"]
                words = landis_koch(lo), landis_koch(hi)
                span = words[0] if words[0] == words[1] else f"{words[0]} to {words[1]}"
                line += (f", 95% CI {_num(lo, digits)} to {_num(hi, digits)} over resampled "
                         f"queries ({span})")
            if quad is not None:
                line += (f"; weighted by grade distance (quadratic) {_num(quad, digits)}, "
                         f"{landis_koch(quad)}")
            exact = it.stats.get("exact")
            if exact is not None:
                line += f"; same grade on {exact * 100:.0f}% of pairs"
            out.lines.append(line + ".")
        if it.pairs < MIN_PAIRS:
            out.warnings.append(
                f"Judge {j.name}: the agreement statistics rest on {it.pairs} pairs, fewer "
                f"than {MIN_PAIRS}: kappa would move a lot with other pairs, so its reading "
                "is a rough indication only. Have people label more pairs (reljudge sample).")
        sy = j.systems
        if sy is None:
            continue
        n = len(sy.runs)
        tau = sy.kendall_tau
        if tau is None:
            out.lines.append(f"Judge {j.name}: Kendall tau of the run ranking is undefined "
                             f"over {n} run(s).")
        else:
            out.lines.append(
                f"Judge {j.name}: the runs ranked by {sy.measure} under its labels and under "
                f"the reference's agree with Kendall tau {_num(tau, digits)} over {n} runs "
                f"(largest rank change {sy.max_rank_change}).")
        if n < MIN_RUNS:
            if n <= 2:
                what = (f"over {n} runs tau can only be +1 or -1 (or undefined): it means "
                        "nothing")
            else:
                what = (f"over {n} runs tau takes only a handful of values: one swap moves "
                        "it by a large step, so it means little")
            out.warnings.append(f"Judge {j.name}: Kendall tau is computed from {n} runs, "
                                f"fewer than {MIN_RUNS}; {what}.")
    if any(j.systems is not None and j.systems.kendall_tau is not None
           for j in result.judges):
        out.lines.append(TAU_CAVEAT)
    return out
