"""Uncertainty and significance: scipy as the oracle, a coverage simulation, hand cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.stats import (
    benjamini_hochberg,
    bootstrap,
    bootstrap_ci,
    bootstrap_test,
    effect_size,
    holm,
    paired_t,
    randomization,
    wilcoxon,
)
from reljudge.stats.bootstrap import percentile_cis, resampled_means
from tests.helpers import Lazy

sps = Lazy("scipy.stats")


def pairs(seed, n=40, shift=0.05):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return a, np.clip(a + rng.normal(shift, 0.15, n), 0, 1)


@pytest.mark.parametrize("seed", range(5))
def test_t_and_wilcoxon_agree_with_scipy(seed):
    a, b = pairs(seed)
    assert paired_t(a, b).p == pytest.approx(sps.ttest_rel(b, a).pvalue, abs=1e-12)
    assert wilcoxon(a, b).p == pytest.approx(sps.wilcoxon(b - a).pvalue, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_randomization_agrees_with_scipy_exact_permutation_test(seed):
    a, b = pairs(seed, n=11, shift=0.08)
    exact = sps.permutation_test((a, b), lambda x, y: np.mean(y - x), vectorized=False,
                                 permutation_type="samples", n_resamples=np.inf,
                                 alternative="two-sided").pvalue
    ours = randomization(a, b, trials=20_000, seed=seed).p
    assert ours == pytest.approx(exact, abs=0.01)  # Monte Carlo error at 20,000 trials


def test_identical_runs_are_never_significant():
    a, _ = pairs(1)
    assert randomization(a, a).p == 1.0 and bootstrap_test(a, a).p == 1.0
    assert wilcoxon(a, a).p == 1.0 and "zero" in wilcoxon(a, a).note


def test_bootstrap_test_detects_a_clear_difference_and_not_noise():
    a, b = pairs(2, n=200, shift=0.1)
    assert bootstrap_test(a, b, seed=1).p < 0.001
    rng = np.random.default_rng(5)
    x = rng.random(200)
    y = x + rng.normal(0, 0.1, 200)
    assert bootstrap_test(x, y, seed=1).p > 0.05 or abs(np.mean(y - x)) > 0.01


def test_effect_size_is_mean_over_sd_of_differences():
    a, b = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.2, 0.4, 0.3, 0.6])
    d = b - a
    assert effect_size(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert effect_size(np.array([0.0, 1, 2]), np.array([1.0, 2, 3])) is None  # no spread


def test_holm_and_bh_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert benjamini_hochberg(p) == pytest.approx(sps.false_discovery_control(p))


@pytest.mark.slow  # a coverage simulation
def test_percentile_interval_covers_the_true_mean_at_the_nominal_rate():
    rng = np.random.default_rng(2026)
    hits = 0
    reps = 2000
    for r in range(reps):
        x = rng.normal(0.5, 0.2, 50)
        ci = bootstrap_ci(x, n=1000, seed=r)
        hits += ci.low <= 0.5 <= ci.high
    assert abs(hits / reps - 0.95) <= 0.02


def test_bca_matches_scipy_on_a_skewed_sample():
    rng = np.random.default_rng(4)
    x = rng.exponential(1.0, 40)
    ours = bootstrap_ci(x, n=40_000, seed=1, method="bca")
    ref = sps.bootstrap((x,), np.mean, method="BCa", n_resamples=40_000,
                        random_state=np.random.default_rng(1)).confidence_interval
    sd = x.std() / np.sqrt(len(x))
    assert ours.method == "bca"
    assert ours.low == pytest.approx(ref.low, abs=0.05 * sd)
    assert ours.high == pytest.approx(ref.high, abs=0.05 * sd)


def test_bca_falls_back_and_says_so_for_constant_values():
    ci = bootstrap_ci(np.ones(10), method="bca")
    assert ci.method == "percentile" and "undefined" in ci.note and ci.low == ci.high == 1.0


def test_resampled_means_are_seeded():
    x = np.arange(10.0)
    assert np.array_equal(resampled_means(x, 50, 3), resampled_means(x, 50, 3))


def _rows(seed: int, rows: int, size: int) -> np.ndarray:
    """Values of many magnitudes, so that any other order of adding them rounds apart."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(rows, size)) * 10.0 ** rng.integers(-6, 7, size=(rows, size))


def _means_alone(values: np.ndarray, n: int, seed: int, chunk: int) -> np.ndarray:
    """One row's resampled means the plain way: each chunk of draws indexed and averaged."""
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    step = max(1, chunk // len(values))
    for start in range(0, n, step):
        stop = min(n, start + step)
        out[start:stop] = values[rng.integers(0, len(values), size=(stop - start,
                                                                    len(values)))].mean(axis=1)
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 90), st.integers(1, 300),
       st.sampled_from([7, 500, bootstrap.CHUNK]))
def test_resampled_means_of_rows_equal_each_row_alone_to_the_bit(seed, rows, size, n, chunk):
    """``resampled_means`` of many rows at once (in chunks of draws and of rows of any size)
    is, row by row and bit for bit, the plain indexing of one row alone with the same draws."""
    x = _rows(seed, rows, size)
    saved, bootstrap.CHUNK = bootstrap.CHUNK, chunk
    try:
        many, one = resampled_means(x, n, seed), resampled_means(x[0], n, seed)
    finally:
        bootstrap.CHUNK = saved
    assert many.shape == (rows, n)
    assert np.array_equal(one, _means_alone(x[0], n, seed, chunk))
    for r in range(rows):
        assert np.array_equal(many[r], _means_alone(x[r], n, seed, chunk)), r


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 90), st.integers(2, 300),
       st.sampled_from([0.5, 0.9, 0.95]))
def test_percentile_intervals_of_rows_equal_each_bootstrap_ci_to_the_bit(seed, rows, size, n,
                                                                          level):
    """``percentile_cis`` of many rows is, field by field and bit for bit, ``bootstrap_ci``
    of each row alone."""
    x = _rows(seed, rows, size)
    assert percentile_cis(x, level, n, seed) == [bootstrap_ci(v, level, n, seed) for v in x]


def test_trials_beyond_the_cap_are_refused_at_once_not_run_for_hours(tmp_path, capsys):
    """compare --trials 10000000000 ran silently for hours: refused in one
    line naming the flag and the most allowed, exit 2, before any scoring; compare() too."""
    import time

    from reljudge.choices import MAX_TRIALS
    from reljudge.cli import main
    from reljudge.errors import ConfigError
    from reljudge.stats import compare

    qrels, runs = {"q": {"a": 1}}, {"x": {"q": {"a": 1.0}}, "y": {"q": {"a": 2.0}}}
    with pytest.raises(ConfigError, match=f"at most {MAX_TRIALS} .*not 10000000000"):
        compare(qrels, runs, "AP", trials=10**10)
    assert compare(qrels, runs, "AP", trials=MAX_TRIALS, bootstrap=10).trials == MAX_TRIALS
    (tmp_path / "q.qrels").write_text("q 0 a 1\n")
    (tmp_path / "x.run").write_text("q Q0 a 1 1.0 x\n")
    start = time.monotonic()
    argv = ["compare", str(tmp_path / "q.qrels"), str(tmp_path / "x.run"), "--trials"]
    with pytest.raises(SystemExit) as exited:  # argparse's own checks exit from the parser
        main([*argv, "10000000000"])
    assert exited.value.code == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--trials: expected at most {MAX_TRIALS}" in err
