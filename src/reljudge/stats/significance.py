"""Paired significance tests between two runs' per-query scores, and multiple comparisons.

t-test and Wilcoxon come from scipy (scipy.stats.ttest_rel, scipy.stats.wilcoxon); the
randomisation (permutation) and bootstrap tests are ours, vectorised; Holm and
Benjamini-Hochberg adjustments are ours.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from reljudge.choices import TESTS, Test
from reljudge.errors import ConfigError

CHUNK = 2_000_000


@dataclass(frozen=True)
class TestResult:
    """A two-sided paired test of run B against run A (B - A)."""

    test: Test
    #: mean of B - A
    diff: float
    p: float
    statistic: float | None = None
    note: str = ""


def paired_t(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Student's paired t-test (scipy.stats.ttest_rel)."""
    from scipy.stats import ttest_rel

    a, b = np.asarray(a, float), np.asarray(b, float)
    d = b - a
    if np.all(d == d[0]):
        return TestResult("t", float(d.mean()), 1.0 if d[0] == 0 else 0.0, None,
                          "all differences equal: t undefined")
    r = ttest_rel(b, a)
    return TestResult("t", float(d.mean()), float(r.pvalue), float(r.statistic))


def wilcoxon(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Wilcoxon signed-rank test (scipy.stats.wilcoxon; zero differences dropped)."""
    from scipy.stats import wilcoxon as scipy_wilcoxon

    d = np.asarray(b, float) - np.asarray(a, float)
    if not np.any(d != 0):
        return TestResult("wilcoxon", 0.0, 1.0, None, "all differences are zero")
    r = scipy_wilcoxon(d)
    return TestResult("wilcoxon", float(d.mean()), float(r.pvalue), float(r.statistic))


def _chunks(n: int, width: int) -> Iterator[int]:
    step = max(1, CHUNK // max(1, width))
    for start in range(0, n, step):
        yield min(step, n - start)


def randomization(a: ArrayLike, b: ArrayLike, trials: int = 10_000, seed: int = 0) -> TestResult:
    """Fisher's randomisation test: random sign flips of the paired differences; two-sided,
    p = (1 + #{|mean| >= observed}) / (1 + trials)."""
    d = np.asarray(b, float) - np.asarray(a, float)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    tol = 1e-12 * max(1.0, observed)
    for size in _chunks(trials, len(d)):
        signs = rng.integers(0, 2, size=(size, len(d)), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) / len(d) >= observed - tol))
    return TestResult("randomization", float(d.mean()), (hits + 1) / (trials + 1))


def bootstrap_test(a: ArrayLike, b: ArrayLike, trials: int = 10_000, seed: int = 0) -> TestResult:
    """Paired bootstrap test (Efron & Tibshirani 16.4): resample the centred differences;
    two-sided, p = (1 + #{|mean*| >= |mean|}) / (1 + trials)."""
    d = np.asarray(b, float) - np.asarray(a, float)
    observed = abs(d.mean())
    centred = d - d.mean()
    rng = np.random.default_rng(seed)
    hits = 0
    tol = 1e-12 * max(1.0, observed)
    for size in _chunks(trials, len(d)):
        idx = rng.integers(0, len(d), size=(size, len(d)))
        hits += int(np.count_nonzero(np.abs(centred[idx].mean(axis=1)) >= observed - tol))
    return TestResult("bootstrap", float(d.mean()), (hits + 1) / (trials + 1))


def paired_test(name: Test, a: ArrayLike, b: ArrayLike, trials: int = 10_000, seed: int = 0) -> TestResult:
    """Run the named test."""
    if name == "randomization":
        return randomization(a, b, trials, seed)
    if name == "bootstrap":
        return bootstrap_test(a, b, trials, seed)
    if name == "t":
        return paired_t(a, b)
    if name == "wilcoxon":
        return wilcoxon(a, b)
    raise ConfigError(f"unknown test {name!r}; expected one of {', '.join(TESTS)}")


def effect_size(a: ArrayLike, b: ArrayLike) -> float | None:
    """Cohen's d for paired samples: mean(B - A) / sd(B - A); None when sd is 0."""
    d = np.asarray(b, float) - np.asarray(a, float)
    if len(d) < 2:
        return None
    sd = d.std(ddof=1)
    return float(d.mean() / sd) if sd > 0 else None


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    p = np.asarray(pvalues, float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    p = np.asarray(pvalues, float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    return out
