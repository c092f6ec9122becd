"""One judge calibrated on a human sample: P(human grade | judge grade), smoothed.

Row j of the table is the distribution of the human grade among the sampled pairs the judge
graded j, smoothed by a Dirichlet prior of ``strength`` pseudo-counts centred (``center``)
on the judge itself (``judge``: 0.9 on grade j) or on the human grade marginal
(``marginal``). With the judge's own grade distributions (logprobs), each sampled pair adds
soft counts. Decisions turn a distribution into one grade: ``mode``, ``median`` or
``expected`` (rounded half up).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import (  # noqa: F401 (DECISIONS, decide: the rules' home is grades)
    DECISIONS,
    GRADE_MIN,
    GRADE_VALUES,
    N_GRADES,
    SCALE_TEXT,
    decide,
    out_of_scale,
)

CENTERS = ("judge", "marginal")
#: weight of the judge's own grade in the "judge" prior centre
TRUST = 0.9


def one_hot(grades: np.ndarray, k: int = N_GRADES) -> np.ndarray:
    """(n, k) indicator rows; a grade of -1 (missing) gives a zero row."""
    grades = np.asarray(grades, dtype=np.int64)
    out = np.zeros((len(grades), k))
    ok = grades >= 0
    out[np.flatnonzero(ok), grades[ok]] = 1.0
    return out


#: a grade a judge did not give (``missing=True``)
MISSING = -1


def check_grades(grades: np.ndarray, what: str, missing: bool = False) -> np.ndarray:
    """Grades as int64, all on the scale (or MISSING where allowed), else InputError."""
    g = np.asarray(grades, dtype=np.int64)
    bad = out_of_scale(np.where(g == MISSING, GRADE_MIN, g) if missing else g)
    if len(bad):
        i = int(bad[0])
        raise InputError(f"{what}: grade {int(g[i])} at position {i} is outside {SCALE_TEXT}")
    return g


def check_probs(probs: np.ndarray, n: int, what: str) -> np.ndarray:
    """An (n, N_GRADES) array of grade distributions (rows summing to 1), else InputError."""
    p = np.asarray(probs, dtype=np.float64)
    if p.shape != (n, N_GRADES):
        raise InputError(f"{what}: expected {n} rows of {N_GRADES} grade probabilities, got "
                         f"shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any() or not np.allclose(p.sum(axis=1), 1.0,
                                                                     atol=1e-6):
        raise InputError(f"{what}: grade probabilities must be finite, >= 0 and sum to 1")
    return p


def expected_grade(probs: np.ndarray) -> np.ndarray:
    """The expected grade of each (n, N_GRADES) distribution row."""
    return np.asarray(probs, dtype=np.float64) @ GRADE_VALUES


@dataclass(frozen=True)
class Calibration:
    """P(human grade | judge grade) fitted on a human sample."""

    # (N_GRADES judge grades, N_GRADES human grades), rows sum to 1
    table: np.ndarray
    # (N_GRADES, N_GRADES) sample counts, judge grade x human grade (soft with probs)
    counts: np.ndarray
    # (N_GRADES,) the human grade marginal of the sample (add-one)
    prior: np.ndarray
    strength: float
    pairs: int
    center: str = "judge"

    def predict(self, grades: np.ndarray | None = None,
                probs: np.ndarray | None = None) -> np.ndarray:
        """Calibrated (n, N_GRADES) human-grade distributions for judge grades or judge probabilities."""
        if probs is not None:
            return check_probs(probs, len(probs), "judge probabilities") @ self.table
        if grades is None:
            raise InputError("give the judge's grades or grade probabilities")
        return self.table[check_grades(grades, "judge grades")]

    def to_dict(self) -> dict:
        """The fitted model as plain data (for the store's derivation record)."""
        return {"table": self.table.round(6).tolist(), "counts": self.counts.tolist(),
                "prior": self.prior.round(6).tolist(), "strength": self.strength,
                "center": self.center, "pairs": self.pairs}


def prior_rows(marginal: np.ndarray, center: str) -> np.ndarray:
    """(N_GRADES, N_GRADES) centre of each row's Dirichlet prior."""
    if center == "judge":
        return TRUST * np.eye(N_GRADES) + (1 - TRUST) * marginal[None, :]
    if center == "marginal":
        return np.tile(marginal, (N_GRADES, 1))
    raise InputError(f"unknown prior centre {center!r}; expected one of {', '.join(CENTERS)}")


def fit_calibration(judge: np.ndarray, human: np.ndarray, *, probs: np.ndarray | None = None,
                    strength: float = 10.0, center: str = "judge") -> Calibration:
    """Fit P(human | judge) on the sampled pairs (aligned arrays of grades)."""
    human = check_grades(human, "human grades")
    if probs is not None:
        soft = check_probs(probs, len(human), "judge probabilities")
    else:
        judge = check_grades(judge, "judge grades")
        if len(judge) != len(human):
            raise InputError(f"{len(judge)} judge grades but {len(human)} human grades")
        soft = one_hot(judge)
    if len(human) == 0:
        raise InputError("no human-labelled pairs to calibrate on")
    if strength < 0:
        raise InputError(f"prior strength must be >= 0, got {strength}")
    counts = soft.T @ one_hot(human)
    # add-one marginal: a grade the sample never shows still keeps a little probability
    prior = (np.bincount(human, minlength=N_GRADES) + 1.0) / (len(human) + N_GRADES)
    centre = prior_rows(prior, center)
    rows = counts + strength * centre
    total = rows.sum(axis=1, keepdims=True)
    table = np.where(total > 0, rows / np.where(total > 0, total, 1), centre)
    return Calibration(table, counts, prior, float(strength), int(len(human)), center)
