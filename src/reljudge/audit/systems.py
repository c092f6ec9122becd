"""System agreement: would the judge's labels rank the runs as the reference labels do?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reljudge.audit.items import clean
from reljudge.io.coerce import as_qrels, as_runs
from reljudge.stats.ranks import kendall_tau_b, order_of
from reljudge.trec_data import Qrels, Run

__all__ = ["SystemAgreement", "kendall_tau_b", "order_of", "pearson", "rank_changes",
           "scores_under", "spearman", "system_agreement", "tau_ap"]


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing their mean rank."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ranks = np.empty(len(x))
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or xs[end] != xs[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation (nan when either side is constant)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx, dy = x - x.mean(), y - y.mean()
    denom = np.sqrt((dx ** 2).sum() * (dy ** 2).sum())
    return float((dx * dy).sum() / denom) if denom else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman correlation: Pearson of average ranks."""
    return pearson(_ranks(np.asarray(x, float)), _ranks(np.asarray(y, float)))


def tau_ap(reference: np.ndarray, judge: np.ndarray, names: list[str]) -> float:
    """AP rank correlation of the judge's system ranking with the reference's (Yilmaz et al.
    2008): errors near the top cost more. Ties are broken by run name."""
    n = len(names)
    if n < 2:
        return float("nan")
    ref_pos = {i: p for p, i in enumerate(order_of(reference, names))}
    est = order_of(judge, names)
    total = 0.0
    for i in range(1, n):
        item = est[i]
        correct = sum(ref_pos[est[j]] < ref_pos[item] for j in range(i))
        total += correct / i
    return 2.0 * total / (n - 1) - 1.0


def rank_changes(reference: np.ndarray, judge: np.ndarray, names: list[str]) -> dict[str, int]:
    """Rank under the judge minus rank under the reference, per run (positive: moved down)."""
    ref = {i: r for r, i in enumerate(order_of(reference, names), 1)}
    est = {i: r for r, i in enumerate(order_of(judge, names), 1)}
    return {names[i]: est[i] - ref[i] for i in range(len(names))}


@dataclass
class SystemAgreement:
    """How the judge's labels rank the runs against how the reference labels do."""

    measure: str
    runs: list[str]
    reference_scores: list[float]
    judge_scores: list[float]
    kendall_tau: float | None
    spearman: float | None
    tau_ap: float | None
    rank_change: dict[str, int]
    max_rank_change: int
    moved_most: list[str]
    per_query_pearson: float | None


def system_agreement(reference: Qrels, judge: Qrels, runs: Sequence[Run],
                     measure: str = "nDCG@10", reference_scores: Mapping | None = None, *,
                     all_queries: bool = False, float32_scores: bool = False
                     ) -> SystemAgreement:
    """Score every run under both label sets and compare the rankings (``all_queries`` and
    ``float32_scores`` as in ``metrics.evaluate``)."""
    from reljudge.metrics import evaluate
    from reljudge.metrics.evaluate import parse_measures

    reference, judge = as_qrels(reference, "reference"), as_qrels(judge, "judge")
    runs = as_runs(runs)
    measure = str(parse_measures(measure)[0])
    names = [r.name for r in runs]
    if reference_scores is None:
        reference_scores = {r.name: evaluate(reference, r, [measure], all_queries=all_queries,
                                             float32_scores=float32_scores) for r in runs}
    judged = {r.name: evaluate(judge, r, [measure], all_queries=all_queries,
                               float32_scores=float32_scores) for r in runs}
    ref = np.array([reference_scores[n].mean()[reference_scores[n].measures[0]] for n in names])
    est = np.array([judged[n].mean()[judged[n].measures[0]] for n in names])
    changes = rank_changes(ref, est, names)
    biggest = max((abs(v) for v in changes.values()), default=0)
    pq_ref, pq_est = [], []
    for n in names:
        a = reference_scores[n].per_query()
        b = judged[n].per_query()
        # sorted: same sum order in every process
        for q in sorted(a.keys() & b.keys()):
            pq_ref.append(next(iter(a[q].values())))
            pq_est.append(next(iter(b[q].values())))
    return SystemAgreement(
        measure, names, ref.tolist(), est.tolist(), clean(kendall_tau_b(ref, est)),
        clean(spearman(ref, est)), clean(tau_ap(ref, est, names)), changes, biggest,
        sorted(n for n, v in changes.items() if abs(v) == biggest and biggest),
        clean(pearson(np.array(pq_ref), np.array(pq_est))) if len(pq_ref) > 1 else None)


def scores_under(reference: Qrels, runs: Sequence[Run] | None, measure: str,
                 **how: Any) -> dict | None:
    """Every run scored under the reference labels (None without runs), once per measure."""
    if not runs:
        return None
    from reljudge.metrics import evaluate

    return {r.name: evaluate(reference, r, [measure], **how) for r in runs}
