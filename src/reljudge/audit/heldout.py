"""Calibrated and panel judges for the audit, every label predicted from held-out queries.

Each derived row holds, for every pair, the grade given by a model fitted only on the human
labels of OTHER queries (k-fold by query), so its statistics in the audit table are held-out
statistics, comparable with the raw judges' rows over the same pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reljudge.errors import ConfigError, InputError
from reljudge.infer.calibrate import decide
from reljudge.infer.heldout import (
    PANEL_METHODS,
    align,
    calibrate_fit_predict,
    cross_fit,
    mean_fit_predict,
    panel_fit_predict,
    thresholded,
)
from reljudge.types import Qrels


@dataclass(frozen=True)
class HeldoutSpec:
    """What to fit for the audit, and how to hold out."""

    calibrate: bool = False
    panel: bool = False
    panel_best: tuple[int, ...] = ()  # also panels of the best N judges (chosen per fold)
    folds: int = 5
    sample: int | None = None  # human pairs drawn from each fold's training queries
    seed: int = 0
    strength: float | None = None  # Dirichlet pseudo-counts; None: each model's default
    decision: str = "median"  # or "thresholds": cuts on the expected grade fitted per fold
    panel_method: str = "dawid-skene"  # or "mean": the chosen judges' mean grade


def heldout_judges(reference: Qrels, judges: Mapping[str, Qrels], spec: HeldoutSpec
                   ) -> dict[str, Qrels]:
    """{row name: out-of-fold qrels} for the calibrated judges and the panels asked for; a
    panel that cannot be formed (fewer than two judges, a best-N out of range) or a sample of
    no pairs is a ConfigError, never a row silently left out."""
    check(spec, len(judges))
    if spec.panel_method not in PANEL_METHODS:
        raise InputError(f"unknown panel method {spec.panel_method!r}; expected one of "
                         f"{', '.join(PANEL_METHODS)}")
    data = align(reference, judges)
    out: dict[str, Qrels] = {}
    rule = "mode" if spec.decision == "thresholds" else spec.decision

    def as_qrels(probs: np.ndarray) -> Qrels:
        ok = ~np.isnan(probs).any(axis=1)
        return Qrels.from_arrays(data.qids[ok], data.docids[ok], decide(probs[ok], rule),
                                 check=False)

    def fold(fit_predict) -> np.ndarray:
        if spec.decision == "thresholds":  # the cuts too are fitted inside each fold
            fit_predict = thresholded(data, fit_predict)
        return cross_fit(data, fit_predict, folds=spec.folds, seed=spec.seed,
                         sample=spec.sample)[0]

    kw = {} if spec.strength is None else {"strength": spec.strength}

    def panel(best: int | None):
        if spec.panel_method == "mean":
            return mean_fit_predict(data, best=best)
        return panel_fit_predict(data, best=best, **kw)

    if spec.calibrate:
        for r, name in enumerate(data.judges):
            out[f"calibrated:{name}"] = as_qrels(fold(calibrate_fit_predict(data, r, **kw)))
    if spec.panel:
        out["panel:all"] = as_qrels(fold(panel(None)))
    for best in spec.panel_best:
        out[f"panel:best{best}"] = as_qrels(fold(panel(best)))
    return out


def check(spec: HeldoutSpec, judges: int) -> None:
    """Refuse what ``heldout_judges`` cannot fit with this many judges (the CLI's words)."""
    if spec.sample is not None and spec.sample < 1:
        raise ConfigError(f"--sample {spec.sample}: give a positive number of pairs")
    if (spec.panel or spec.panel_best) and judges < 2:
        raise ConfigError("--panel needs at least two judges")
    for n in spec.panel_best:
        if not 2 <= n < judges:
            raise ConfigError(f"--panel-best {n}: give 2 to {judges - 1} (of {judges} judges; "
                              "--panel takes them all)")


def describe(spec: HeldoutSpec) -> str:
    """One line saying how the derived rows were validated."""
    what = spec.sample if spec.sample is not None else "all"
    strength = ("default: 10 calibration, 4 panel" if spec.strength is None
                else f"{spec.strength:g}")
    return (f"calibrated/panel rows: {spec.folds}-fold cross-fitting by query (seed "
            f"{spec.seed}); each fold fitted on {what} human pairs of the other folds' queries "
            f"(panels: {spec.panel_method}; Dirichlet strength {strength}, decision "
            f"{spec.decision}); statistics over held-out labels only")
