"""Uncertainty and significance: bootstrap intervals, paired tests, multiple comparisons."""

from reljudge.stats.bootstrap import Interval, bootstrap_ci
from reljudge.stats.significance import (
                                         TESTS,
                                         benjamini_hochberg,
                                         bootstrap_test,
                                         effect_size,
                                         holm,
                                         paired_t,
                                         paired_test,
                                         randomization,
                                         wilcoxon,
)

__all__ = ["TESTS", "Interval", "benjamini_hochberg", "bootstrap_ci", "bootstrap_test",
           "effect_size", "holm", "paired_t", "paired_test", "randomization", "wilcoxon"]
from reljudge.stats.compare import Comparison, compare  # noqa: E402

__all__ += ["Comparison", "compare"]
