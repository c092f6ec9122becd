"""The range a measure's value (a mean over queries) can take, for clipping intervals.

A clipped interval covers the truth whenever the unclipped one did (the truth lies in the
range), so clipping never costs coverage; it only drops values no run can score.
"""

from __future__ import annotations

import math

import numpy as np

from reljudge.grades import GRADE_MAX
from reljudge.metrics import gain_kernels, kernels
from reljudge.metrics.measures import SPECS, Measure


def measure_range(m: Measure) -> tuple[float, float]:
    """The smallest and largest value of ``m`` on any run and labels: [0, 1] for P@k, nDCG,
    RR, ...; for DCG@k [0, k's summed discounts times the top grade's gain]; else the
    measure's stated bounds (``MeasureSpec.bounds``)."""
    if m.name == "DCG" and m.cutoff is not None:
        top = float(gain_kernels.gains(np.array([GRADE_MAX]), m.param("dcg"))[0])
        return 0.0, float(kernels.discount(int(m.cutoff)).sum()) * top
    spec = SPECS.get(m.name)
    return (float(spec.bounds[0]), float(spec.bounds[1])) if spec else (-math.inf, math.inf)


def difference_range(m: Measure) -> tuple[float, float]:
    """The range of one run's value minus another's on ``m``."""
    low, high = measure_range(m)
    return low - high, high - low
