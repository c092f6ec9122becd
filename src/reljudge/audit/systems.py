"""System agreement: would the judge's labels rank the runs as the reference labels do?"""

from __future__ import annotations

import numpy as np


def _sign_matrix(x: np.ndarray) -> np.ndarray:
    return np.sign(x[:, None] - x[None, :])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (ties corrected), as scipy.stats.kendalltau's default."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    sx, sy = _sign_matrix(x), _sign_matrix(y)
    iu = np.triu_indices(len(x), 1)
    a, b = sx[iu], sy[iu]
    s = (a * b).sum()
    denom = np.sqrt((a != 0).sum() * (b != 0).sum())
    return float(s / denom) if denom else float("nan")


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


def order_of(scores: np.ndarray, names: list[str]) -> list[int]:
    """Indices from best to worst: score descending, ties by name."""
    return sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))


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
