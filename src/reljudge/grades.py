"""The TREC 0-3 relevance scale: its bounds, the range check, clipping, aggregation, rounding.

One home for the scale so that no other module writes ``4``, ``range(4)`` or ``0..3``.
Plain data and arithmetic: no I/O, no store, no network. numpy is imported by the calls that
use it, so that the scale itself (as ``reljudge --help`` shows it) is read without numpy.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reljudge.choices import AGGREGATES, Aggregate
from reljudge.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

GRADE_MIN = 0
GRADE_MAX = 3
#: how many grades the scale has (the side of a confusion matrix)
N_GRADES = GRADE_MAX - GRADE_MIN + 1
#: the grades in order, as ints (``for g in SCALE``)
SCALE = tuple(range(GRADE_MIN, GRADE_MAX + 1))
#: the grades as float64 values (for expectations over a probability row), made on first use
GRADE_VALUES: np.ndarray
#: what each grade means (the TREC deep-learning track's wording)
GRADE_NAMES = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}
#: the text every range error uses
SCALE_TEXT = f"{GRADE_MIN}..{GRADE_MAX}"



@functools.cache
def _grade_values() -> np.ndarray:
    import numpy as np

    return np.arange(GRADE_MIN, GRADE_MAX + 1, dtype=np.float64)


def __getattr__(name: str) -> Any:
    if name == "GRADE_VALUES":
        return _grade_values()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def in_scale(grade: int) -> bool:
    """True when ``grade`` lies on the scale."""
    return GRADE_MIN <= grade <= GRADE_MAX


def out_of_scale(grades: np.ndarray) -> np.ndarray:
    """Positions of the grades outside the scale (an integer array, maybe empty)."""
    import numpy as np

    grades = np.asarray(grades)
    return np.flatnonzero((grades < GRADE_MIN) | (grades > GRADE_MAX))


def check_grade(grade: object, where: str = "") -> int:
    """``grade`` as an int on the scale, or an InputError naming ``where`` and the scale."""
    if type(grade) is not int or not in_scale(grade):
        place = f"{where}: " if where else ""
        raise InputError(f"{place}a grade is an integer {SCALE_TEXT}, found {grade!r}")
    return grade


def clip(grade: int) -> int:
    """The nearest grade on the scale."""
    return min(max(grade, GRADE_MIN), GRADE_MAX)


def round_half_up(x: float) -> int:
    """Round to the nearest integer, halves upward (1.5 -> 2, 2.5 -> 3)."""
    return math.floor(x + 0.5)


def check_aggregate(how: str) -> None:
    """An InputError unless ``how`` names an aggregation rule."""
    if how not in AGGREGATES:
        raise InputError(f"unknown aggregation {how!r}; expected one of {', '.join(AGGREGATES)}")


def aggregate_grades(grades: Sequence[int], how: Aggregate, fractional: bool = False) -> float:
    """Aggregate several grades of one pair by the named rule."""
    if not grades:
        raise InputError("no grades to aggregate")
    check_aggregate(how)
    if how == "majority":
        counts = Counter(grades)
        top = max(counts.values())
        return float(min(g for g, c in counts.items() if c == top))
    if how == "mean":
        value = sum(grades) / len(grades)
    else:
        s = sorted(grades)
        mid = len(s) // 2
        value = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    return float(value) if fractional else float(round_half_up(value))


def most_probable(probs: Sequence[float]) -> int:
    """The grade with the highest probability (the lowest grade on a tie)."""
    return max(SCALE, key=lambda g: probs[g - GRADE_MIN])


#: how one grade is read off a distribution over the scale (a calibrated judge, a panel)
DECISIONS = ("mode", "median", "expected")


def decide(probs: np.ndarray, rule: str = "mode") -> np.ndarray:
    """One grade per row of an (n, N_GRADES) distribution: its most probable grade (``mode``,
    ties to the lower), its median (least absolute error), or its expected grade rounded half
    up (``expected``)."""
    import numpy as np

    probs = np.asarray(probs, dtype=np.float64)
    if rule == "mode":
        return probs.argmax(axis=1) + GRADE_MIN
    if rule == "median":
        cdf = np.cumsum(probs, axis=1)
        return (cdf < 0.5 - 1e-12).sum(axis=1) + GRADE_MIN
    if rule == "expected":
        values = _grade_values()[: probs.shape[1]]
        return np.minimum(np.floor(probs @ values + 0.5), GRADE_MAX).astype(np.int64)
    raise InputError(f"unknown decision {rule!r}; expected one of {', '.join(DECISIONS)}")
