"""A decision rule fitted on the human sample: thresholds on the expected grade.

``thresholds`` cuts a continuous score (a distribution's expected grade, or a panel's mean
grade) at three points fitted on the training sample to maximise quadratic kappa against its
human grades, where the fixed rules (``mode``, ``median``, ``expected``) pull grades toward
the middle. The search is coordinate ascent over the score's quantiles from the cuts that
match the sample's human grade marginal: deterministic, and never below that start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import N_GRADES
from reljudge.infer.calibrate import check_grades
from reljudge.stats import agreement as ag

#: quantiles of the score tried for each cut
CANDIDATES = 201
#: coordinate-ascent sweeps over the three cuts (usually 2 suffice)
PASSES = 5


def _quadratic_kappa(human: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """Quadratic kappa of each row of a (B, n) grade batch against the (n,) human grades."""
    b = grades.shape[0]
    conf = ag.confusions(human[None, :], grades, np.arange(b)[:, None], b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(ag.cohen_kappa(conf, "quadratic"), nan=-np.inf)


@dataclass(frozen=True)
class Thresholds:
    """Three cuts on a score: grade = number of cuts the score is at or above."""

    cuts: tuple[float, ...]
    # training pairs the cuts were fitted on
    pairs: int
    # on those pairs
    kappa_quadratic: float

    def apply(self, score: np.ndarray) -> np.ndarray:
        """Grades 0..3 of each score."""
        score = np.asarray(score, dtype=np.float64)
        if not np.isfinite(score).all():
            raise InputError("thresholds: scores must be finite")
        return np.searchsorted(np.asarray(self.cuts), score, side="right").astype(np.int64)

    def to_dict(self) -> dict:
        """The fitted rule as plain data (for the store's derivation record)."""
        return {"decision": "thresholds", "cuts": [round(c, 6) for c in self.cuts],
                "pairs": self.pairs, "kappa_quadratic": round(self.kappa_quadratic, 6)}


def fit_thresholds(score: np.ndarray, human: np.ndarray) -> Thresholds:
    """Cuts on ``score`` that maximise quadratic kappa against ``human`` on these pairs."""
    score = np.asarray(score, dtype=np.float64)
    human = check_grades(human, "human grades")
    if score.shape != human.shape or score.ndim != 1:
        raise InputError(f"{score.shape} scores for {human.shape} human grades")
    if len(human) == 0:
        raise InputError("thresholds: no human-labelled pairs to fit on")
    if not np.isfinite(score).all():
        raise InputError("thresholds: scores must be finite")
    # start: the cuts that give the sample's own human grade marginal (quantile matching)
    share = np.cumsum(np.bincount(human, minlength=N_GRADES))[:-1] / len(human)
    cuts = np.quantile(score, share)
    candidates = np.unique(np.quantile(score, np.linspace(0, 1, CANDIDATES)))
    candidates = np.concatenate([candidates, [np.nextafter(candidates[-1], np.inf)]])
    best = float(_quadratic_kappa(human, np.searchsorted(cuts, score, side="right")[None])[0])
    for _ in range(PASSES):
        moved = False
        for j in range(N_GRADES - 1):
            lo = cuts[j - 1] if j > 0 else -np.inf
            hi = cuts[j + 1] if j < N_GRADES - 2 else np.inf
            cand = candidates[(candidates >= lo) & (candidates <= hi)]
            if len(cand) == 0:
                continue
            trial = np.repeat(cuts[None], len(cand), axis=0)
            trial[:, j] = cand
            # grade of each pair under each trial: count of cuts at or below its score
            grades = (score[None, :, None] >= trial[:, None, :]).sum(axis=2)
            kq = _quadratic_kappa(human, grades)
            i = int(np.argmax(kq))
            if kq[i] > best + 1e-12:
                best, cuts, moved = float(kq[i]), trial[i], True
        if not moved:
            break
    return Thresholds(tuple(float(c) for c in cuts), int(len(human)), best)
