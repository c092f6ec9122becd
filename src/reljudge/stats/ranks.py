"""Orders of systems by score and the rank correlation of two such orders."""

from __future__ import annotations

from collections.abc import Sequence

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


def order_of(scores: Sequence[float] | np.ndarray, names: Sequence[str]) -> list[int]:
    """Indices from best to worst: score descending, ties by name."""
    return sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))
