"""Item agreement between a reference (human) and a judge, from K x K confusion matrices
(K = ``grades.N_GRADES``, the size of the scale).

Every statistic here is a function of the confusion matrix (rows = reference grade, columns =
judge grade), so a bootstrap over queries only re-adds per-query matrices. All functions take
a batch of matrices shaped (B, K, K) and return arrays of length B; a statistic that is
undefined for a matrix (a constant rater, an empty class) is nan there, and ``describe``
says why.
"""

from __future__ import annotations

import numpy as np

from reljudge.errors import ConfigError
from reljudge.grades import GRADE_VALUES, N_GRADES


def confusions(ref: np.ndarray, judge: np.ndarray, group: np.ndarray | int, groups: int,
               k: int = N_GRADES) -> np.ndarray:
    """(groups, k, k) count matrices of (reference, judge) grade pairs, one per group code.

    The three arrays broadcast together: one reference vector against a (B, n) batch of judge
    grades with ``group = arange(B)[:, None]``, or per-query matrices with ``group`` the
    query code of each pair.
    """
    flat = (np.asarray(group) * k + np.asarray(ref)) * k + np.asarray(judge)
    return (np.bincount(flat.reshape(-1), minlength=groups * k * k)
            .reshape(groups, k, k).astype(np.float64))


def confusion(ref: np.ndarray, judge: np.ndarray, k: int = N_GRADES) -> np.ndarray:
    """The k x k count matrix of (reference, judge) grade pairs."""
    return confusions(ref, judge, 0, 1, k)[0]


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def exact_agreement(c: np.ndarray) -> np.ndarray:
    """Share of pairs with the same grade."""
    return _safe_div(np.trace(c, axis1=1, axis2=2), c.sum(axis=(1, 2)))


def weights(kind: str | None, k: int = N_GRADES) -> np.ndarray:
    """Disagreement weights: unweighted (0/1), linear |i-j| or quadratic (i-j)^2."""
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if kind is None:
        return (i != j).astype(np.float64)
    if kind == "linear":
        return np.abs(i - j).astype(np.float64)
    if kind == "quadratic":
        return ((i - j) ** 2).astype(np.float64)
    raise ConfigError(f"unknown kappa weights {kind!r}")


def cohen_kappa(c: np.ndarray, kind: str | None = None) -> np.ndarray:
    """Cohen's kappa, unweighted or with linear / quadratic weights (as scikit-learn)."""
    n = c.sum(axis=(1, 2))
    expected = np.einsum("bi,bj->bij", c.sum(axis=2), c.sum(axis=1)) / n[:, None, None]
    w = weights(kind, c.shape[1])
    return 1.0 - _safe_div((w * c).sum(axis=(1, 2)), (w * expected).sum(axis=(1, 2)))


def binary_kappa(c: np.ndarray, cut: int) -> np.ndarray:
    """Cohen's kappa after collapsing grades to (grade >= cut)."""
    low, high = slice(0, cut), slice(cut, c.shape[1])
    b = np.stack([np.stack([c[:, low, low].sum(axis=(1, 2)), c[:, low, high].sum(axis=(1, 2))], 1),
                  np.stack([c[:, high, low].sum(axis=(1, 2)), c[:, high, high].sum(axis=(1, 2))],
                           1)], 1)
    return cohen_kappa(b)


def _moments(c: np.ndarray, xr: np.ndarray, xj: np.ndarray) -> np.ndarray:
    """Pearson correlation of values xr[ref grade] and xj[judge grade] weighted by counts."""
    n = c.sum(axis=(1, 2))
    pr, pj = c.sum(axis=2), c.sum(axis=1)
    mr = _safe_div((pr * xr).sum(axis=1), n)
    mj = _safe_div((pj * xj).sum(axis=1), n)
    dr = xr - mr[:, None]
    dj = xj - mj[:, None]
    cov = np.einsum("bij,bi,bj->b", c, dr, dj)
    vr = (pr * dr ** 2).sum(axis=1)
    vj = (pj * dj ** 2).sum(axis=1)
    return _safe_div(cov, np.sqrt(vr * vj))


def pearson(c: np.ndarray) -> np.ndarray:
    """Pearson correlation of the grades."""
    b = c.shape[0]
    return _moments(c, np.broadcast_to(GRADE_VALUES[: c.shape[1]], (b, c.shape[1])),
                    np.broadcast_to(GRADE_VALUES[: c.shape[1]], (b, c.shape[1])))


def _average_ranks(counts: np.ndarray) -> np.ndarray:
    """Mid-rank of each grade given the grade counts (ties share their average rank)."""
    before = np.cumsum(counts, axis=1) - counts
    return before + (counts + 1) / 2.0


def spearman(c: np.ndarray) -> np.ndarray:
    """Spearman correlation: Pearson of average ranks (as scipy.stats.spearmanr)."""
    return _moments(c, _average_ranks(c.sum(axis=2)), _average_ranks(c.sum(axis=1)))


def leniency(c: np.ndarray) -> np.ndarray:
    """Mean of judge grade minus reference grade (positive: the judge is more lenient)."""
    k = c.shape[1]
    diff = GRADE_VALUES[None, :k] - GRADE_VALUES[:k, None]
    return _safe_div((c * diff).sum(axis=(1, 2)), c.sum(axis=(1, 2)))


def mae(c: np.ndarray) -> np.ndarray:
    """Mean absolute difference of grades."""
    k = c.shape[1]
    diff = np.abs(GRADE_VALUES[None, :k] - GRADE_VALUES[:k, None])
    return _safe_div((c * diff).sum(axis=(1, 2)), c.sum(axis=(1, 2)))


def delta2(kind: str, counts: np.ndarray) -> np.ndarray:
    """Krippendorff's squared difference between categories (B, K, K)."""
    b, k = counts.shape
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if kind == "nominal":
        return np.broadcast_to((i != j).astype(np.float64), (b, k, k))
    if kind == "interval":
        return np.broadcast_to(((i - j) ** 2).astype(np.float64), (b, k, k))
    if kind == "ordinal":
        cum = np.concatenate([np.zeros((b, 1)), np.cumsum(counts, axis=1)], axis=1)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        # sum of n_g for g in [lo, hi]
        between = cum[:, hi + 1] - cum[:, lo]
        d = between - (counts[:, i] + counts[:, j]) / 2.0
        return d ** 2
    raise ConfigError(f"unknown alpha level {kind!r}")


def alpha_from_coincidence(o: np.ndarray, kind: str) -> np.ndarray:
    """Krippendorff's alpha from coincidence matrices (B, K, K)."""
    nc = o.sum(axis=2)
    n = nc.sum(axis=1)
    d = delta2(kind, nc)
    observed = (o * d).sum(axis=(1, 2))
    expected = _safe_div(np.einsum("bi,bj,bij->b", nc, nc, d), n - 1)
    return 1.0 - _safe_div(observed, expected)


def krippendorff_alpha(c: np.ndarray, kind: str = "ordinal") -> np.ndarray:
    """Alpha for two raters with no missing values: the coincidence matrix is C + C^T."""
    return alpha_from_coincidence(c + np.transpose(c, (0, 2, 1)), kind)


def precision_recall(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-grade precision and recall of the judge against the reference, (B, K) each."""
    diag = np.diagonal(c, axis1=1, axis2=2)
    return _safe_div(diag, c.sum(axis=1)), _safe_div(diag, c.sum(axis=2))


STATISTICS = {
    "exact": exact_agreement,
    "kappa": lambda c: cohen_kappa(c),
    "kappa_linear": lambda c: cohen_kappa(c, "linear"),
    "kappa_quadratic": lambda c: cohen_kappa(c, "quadratic"),
    "kappa_ge1": lambda c: binary_kappa(c, 1),
    "kappa_ge2": lambda c: binary_kappa(c, 2),
    "kappa_ge3": lambda c: binary_kappa(c, 3),
    "alpha_nominal": lambda c: krippendorff_alpha(c, "nominal"),
    "alpha_ordinal": lambda c: krippendorff_alpha(c, "ordinal"),
    "alpha_interval": lambda c: krippendorff_alpha(c, "interval"),
    "pearson": pearson,
    "spearman": spearman,
    "leniency": leniency,
    "mae": mae,
}


def all_statistics(c: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic for a batch of confusion matrices (B, K, K)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {name: fn(c) for name, fn in STATISTICS.items()}


def why_undefined(name: str, c: np.ndarray) -> str:
    """Why a statistic is undefined for one confusion matrix (K, K)."""
    n = c.sum()
    if n == 0:
        return "no shared pairs"
    ref_const = np.count_nonzero(c.sum(axis=1)) <= 1
    judge_const = np.count_nonzero(c.sum(axis=0)) <= 1
    if ref_const and judge_const:
        return "both raters give a single grade"
    if ref_const or judge_const:
        who = "reference" if ref_const else "judge"
        return f"the {who} gives a single grade"
    if name.startswith("kappa_ge"):
        return "one side never crosses this cut"
    return "no variation to compare"


# --- many raters ---------------------------------------------------------------------------

def alpha_many(values: np.ndarray, kind: str = "ordinal", k: int = N_GRADES) -> float:
    """Krippendorff's alpha for a (raters x units) grade matrix, -1 marking a missing value."""
    counts = np.stack([(values == g).sum(axis=0) for g in range(k)], axis=1).astype(np.float64)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts, m = counts[keep], m[keep]
    w = 1.0 / (m - 1)
    o = (counts * w[:, None]).T @ counts - np.diag((counts * w[:, None]).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(alpha_from_coincidence(o[None], kind)[0])


def fleiss_kappa(values: np.ndarray, k: int = N_GRADES) -> float:
    """Fleiss' kappa over the units every rater graded (values: raters x units, -1 missing)."""
    full = values[:, (values >= 0).all(axis=0)]
    if full.shape[1] == 0:
        return float("nan")
    n = full.shape[0]
    counts = np.stack([(full == g).sum(axis=0) for g in range(k)], axis=1).astype(np.float64)
    p_i = ((counts ** 2).sum(axis=1) - n) / (n * (n - 1))
    p_j = counts.sum(axis=0) / counts.sum()
    pe = (p_j ** 2).sum()
    return float((p_i.mean() - pe) / (1 - pe)) if pe < 1 else float("nan")
