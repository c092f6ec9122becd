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

#: measures whose every per-query value lies in [0, 1] (used where the measure's spec
#: carries no bounds of its own)
UNIT_MEASURES = frozenset({"P", "nDCG", "RR", "AP", "R", "RBP", "ERR", "Success", "Judged",
                           "Rprec", "Bpref", "infAP", "SetP", "SetR"})


def measure_range(m: Measure) -> tuple[float, float]:
    """The smallest and largest value of ``m`` on any run and labels: [0, 1] for P@k, nDCG,
    RR, ...; for DCG@k [0, k's summed discounts times the top grade's gain]; else unbounded."""
    if m.name == "DCG" and m.cutoff is not None:
        top = float(gain_kernels.gains(np.array([GRADE_MAX]), m.param("dcg"))[0])
        return 0.0, float(kernels.discount(int(m.cutoff)).sum()) * top
    bounds = getattr(SPECS.get(m.name), "bounds", None)  # MeasureSpec.bounds, where it has them
    if bounds is not None:
        return float(bounds[0]), float(bounds[1])
    return (0.0, 1.0) if m.name in UNIT_MEASURES else (-math.inf, math.inf)


def difference_range(m: Measure) -> tuple[float, float]:
    """The range of one run's value minus another's on ``m``."""
    low, high = measure_range(m)
    return low - high, high - low
