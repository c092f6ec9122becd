"""What a probe run shows: per kind, how often the judge's grade of a known non-relevant
passage rose when it was altered (flip rates with Wilson 95 % intervals), the mean grade
shift, an exact McNemar test against the clean pairs, and for each run what it could gain by
the ``query-insert`` exploit under this judge.

A flip is a pair the judge graded 0 clean and at least 1 (or 2) probed; its rate is over the
pairs graded 0 clean. ``changed`` is the share of pairs whose grade moved at all (what an
invariance kind measures). Pairs with no grade for the clean passage or the probe (a failed
answer) are left out and counted in ``unanswered``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from reljudge.probe.build import EXPLOIT, ProbeSet
from reljudge.probe.kinds import CLEAN, KINDS
from reljudge.trec_data import Qrels, Run

#: the normal quantile of a two-sided 95 % interval
Z95 = 1.959963984540054
#: a control (salad) flip rate above this makes the probe set itself suspect
CONTROL_WARN = 0.05

# (qid, synthetic docid) -> grade (None: failed)
Grades = Mapping[tuple[str, str], int | None]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (95 % by default); (0, 1) when n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """The exact (binomial) two-sided McNemar p-value of b pairs that rose and c that fell."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue)


@dataclass(frozen=True)
class KindResult:
    """The numbers of one probe kind under one prompt template."""

    template: str
    kind: str
    tests: str
    control: bool
    #: pairs with a grade for both the clean passage and the probe
    n: int
    #: pairs left out: no grade for one of them
    unanswered: int
    #: grade -> pairs, on the clean passages
    clean_grades: dict[int, int]
    #: grade -> pairs, on the probes
    probe_grades: dict[int, int]
    #: pairs graded 0 clean: the flip rates' denominator
    clean_zero: int
    #: of those, graded >= 1 probed
    flips1: int
    #: of those, graded >= 2 probed
    flips2: int
    flip1_rate: float | None
    flip1_ci: tuple[float, float]
    flip2_rate: float | None
    flip2_ci: tuple[float, float]
    #: pairs whose grade moved at all
    changed: int
    changed_rate: float | None
    changed_ci: tuple[float, float]
    #: mean of (probe grade - clean grade)
    mean_shift: float | None
    #: relevant (>= 1) probed, not clean: McNemar's b
    rose: int
    #: relevant clean, not probed: McNemar's c
    fell: int
    mcnemar_p: float


def kind_result(template: str, kind: str, pairs: Sequence[tuple[int | None, int | None]]
                ) -> KindResult:
    """The numbers of one kind from its (clean grade, probe grade) pairs."""
    both = [(int(c), int(p)) for c, p in pairs if c is not None and p is not None]
    zero = [p for c, p in both if c == 0]
    f1, f2 = sum(p >= 1 for p in zero), sum(p >= 2 for p in zero)
    moved = sum(p != c for c, p in both)
    rose = sum(c == 0 and p >= 1 for c, p in both)
    fell = sum(c >= 1 and p == 0 for c, p in both)

    def rate(k: int, n: int) -> float | None:
        return k / n if n else None

    def counts(values: Iterable[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        for v in values:
            out[v] = out.get(v, 0) + 1
        return dict(sorted(out.items()))

    return KindResult(
        template, kind, KINDS[kind].tests, KINDS[kind].control, len(both),
        len(pairs) - len(both), counts(c for c, _ in both), counts(p for _, p in both),
        len(zero), f1, f2, rate(f1, len(zero)), wilson(f1, len(zero)), rate(f2, len(zero)),
        wilson(f2, len(zero)), moved, rate(moved, len(both)), wilson(moved, len(both)),
        sum(p - c for c, p in both) / len(both) if both else None, rose, fell,
        mcnemar_exact(rose, fell))


def pair_rows(template: str, probes: ProbeSet, grades: Grades) -> list[dict[str, Any]]:
    """Every probed pair of every kind: the pair it came from, the probe's id and exact text,
    the clean and the probed grade (None: no grade)."""
    rows = []
    for kind, bases in probes.bases.items():
        for qid, docid in bases:
            clean, probed = probes.docid(CLEAN, qid, docid), probes.docid(kind, qid, docid)
            rows.append({"judge": template, "kind": kind, "qid": qid, "docid": docid,
                         "probe": probed, "text": probes.probes[probed].text if probed else None,
                         "clean_grade": grades.get((qid, clean or "")),
                         "probe_grade": grades.get((qid, probed or ""))})
    return rows


def kind_results(template: str, probes: ProbeSet, grades: Grades) -> list[KindResult]:
    """Every kind's numbers for one template's probe set and the judge's grades."""
    out = []
    for kind, bases in probes.bases.items():
        pairs = []
        for qid, docid in bases:
            clean, probed = probes.docid(CLEAN, qid, docid), probes.docid(kind, qid, docid)
            pairs.append((grades.get((qid, clean or "")), grades.get((qid, probed or ""))))
        out.append(kind_result(template, kind, pairs))
    return out


@dataclass(frozen=True)
class RunGain:
    """What one run gets under a judge's grades of the clean passages (``now``), and with its
    known non-relevant top documents replaced by their ``query-insert`` probes (the probes join
    the judged documents; the other runs are scored on the same judgments, unchanged)."""

    template: str
    run: str
    measure: str
    now: float
    exploited: float
    #: exploited - now, in the measure's units
    gain: float
    #: among the runs given, 1 = best
    rank_now: int
    rank_exploited: int
    #: top documents replaced by their probe
    replaced: int
    #: the best other run on the same judgments (None: no other)
    others_exploited: float | None


def run_gains(template: str, probes: ProbeSet, grades: Grades, runs: Sequence[Run],
              measure: str = "nDCG@10") -> list[RunGain]:
    """Each run's measure under this judge's clean grades and under the exploit (see RunGain)."""
    now: dict[str, dict[str, int]] = {}
    for qid, docid in probes.exploit:
        clean = grades.get((qid, probes.docid(CLEAN, qid, docid) or ""))
        # not graded: unjudged, as the metrics read it
        if clean is not None:
            now.setdefault(qid, {})[docid] = clean
    qrels_now = Qrels.from_dict(now)
    means_now = {r.name: _mean(qrels_now, r, measure) for r in runs}
    out = []
    for run in runs:
        swap: dict[tuple[str, str], str] = {}
        judged = {q: dict(docs) for q, docs in now.items()}
        for qid, docid in _top(run, probes.depth):
            probe = probes.docid(EXPLOIT, qid, docid)
            probed = grades.get((qid, probe)) if probe is not None else None
            if probe is not None and probed is not None:
                swap[(qid, docid)] = probe
                judged.setdefault(qid, {})[probe] = probed
        qrels = Qrels.from_dict(judged)
        cheat = _swapped(run, swap)
        scores = {r.name: _mean(qrels, cheat if r is run else r, measure) for r in runs}
        out.append(RunGain(template, run.name, measure, means_now[run.name], scores[run.name],
                           scores[run.name] - means_now[run.name], _rank(means_now, run.name),
                           _rank(scores, run.name), len(swap),
                           max((v for k, v in scores.items() if k != run.name), default=None)))
    return out


def _swapped(run: Run, swap: Mapping[tuple[str, str], str]) -> Run:
    """The run with these documents renamed, in the same order: scored by rank, since a new
    name would move a document among tied scores (trec_eval breaks ties by docid)."""
    from reljudge.pool import top_k

    q, d, rank = top_k(run, len(run))
    docids = [swap.get(pair, pair[1]) for pair in zip(q.tolist(), d.tolist(), strict=True)]
    return Run.from_arrays(q, docids, -rank.astype(float), name=run.name)


def _mean(qrels: Qrels, run: Run, measure: str) -> float:
    from reljudge.metrics import evaluate

    if len(qrels) == 0:
        return 0.0
    return float(evaluate(qrels, run, [measure]).mean()[measure])


def _top(run: Run, depth: int) -> list[tuple[str, str]]:
    from reljudge.pool import top_k

    q, d, _ = top_k(run, depth)
    return list(zip(q.tolist(), d.tolist(), strict=True))


def _rank(means: Mapping[str, float], name: str) -> int:
    """1 + the runs that score strictly higher."""
    return 1 + sum(v > means[name] for v in means.values())


@dataclass
class ProbeReport:
    """A probe run's result: per template and kind the numbers, the runs' possible gains,
    the queries skipped, warnings, and what the labelling jobs did."""

    kinds: list[KindResult] = field(default_factory=list)
    gains: list[RunGain] = field(default_factory=list)
    skipped_queries: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    labelling: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    complete: bool = True
    #: pair_rows of every judge
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Every number, as JSON-ready data."""
        return {"judges": self.judges, "kinds": [asdict(k) for k in self.kinds],
                "gains": [asdict(g) for g in self.gains],
                "skipped_queries": self.skipped_queries, "warnings": self.warnings,
                "labelling": self.labelling, "stop_reason": self.stop_reason,
                "complete": self.complete}


def control_warnings(results: Sequence[KindResult]) -> list[str]:
    """A line for each control kind that flips more than CONTROL_WARN."""
    return [f"the control ({r.kind}) flipped {r.flip1_rate:.0%} of {r.clean_zero} pairs under "
            f"{r.template}: more than {CONTROL_WARN:.0%}, so the probe set itself is suspect "
            "(are the known non-relevant passages really non-relevant to this judge?)"
            for r in results if r.control and r.flip1_rate is not None
            and r.flip1_rate > CONTROL_WARN]
