"""Calibrated and panel rows for the audit, every label predicted from held-out queries.

Each fitted row holds, for every pair, the grade given by a model fitted only on the human
labels of OTHER queries (k-fold by query: ``infer.heldout.out_of_fold``, the helper that
``reljudge calibrate``'s check uses too), so its statistics in the audit table are held-out
statistics, comparable with the raw judges' rows over the same pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reljudge.errors import ConfigError, InputError
from reljudge.infer import heldout as ho
from reljudge.trec_data import Qrels


@dataclass(frozen=True)
class HeldoutSpec:
    """What to fit for the audit, and how to hold out."""

    calibrate: bool = False
    panel: bool = False
    #: also panels of the best N judges (chosen per fold)
    panel_best: tuple[int, ...] = ()
    folds: int = 5
    #: human pairs drawn from each fold's training queries
    pair_count: int | None = None
    seed: int = 0
    #: Dirichlet pseudo-counts; None: each model's default
    strength: float | None = None
    #: "median", or "thresholds": cuts on the expected grade fitted per fold
    decision: str = "median"
    #: "dawid-skene", or "mean": the chosen judges' mean grade
    panel_method: str = "dawid-skene"


def heldout_judges(reference: Qrels, judges: Mapping[str, Qrels], spec: HeldoutSpec
                   ) -> dict[str, Qrels]:
    """{row name: out-of-fold qrels} for the calibrated judges and the panels asked for; a
    panel that cannot be formed (fewer than two judges, a best-N out of range) or a sample of
    no pairs is a ConfigError, never a row silently left out."""
    check(spec, len(judges))
    if spec.panel_method not in ho.PANEL_METHODS:
        raise InputError(f"unknown panel method {spec.panel_method!r}; expected one of "
                         f"{', '.join(ho.PANEL_METHODS)}")
    data = ho.align(reference, judges)
    humans = int((data.human >= 0).sum())
    if spec.pair_count is not None and spec.pair_count > humans:
        raise ConfigError(f"--pair-count {spec.pair_count}: there are {humans} human pairs to "
                          "fit on (each fold draws from those of the other folds' queries); "
                          "give fewer, or leave --pair-count out to fit on them all")

    def heldout(fit_predict: ho.FitPredict) -> Qrels:
        folds = ho.out_of_fold(data, fit_predict, folds=spec.folds, seed=spec.seed,
                               pair_count=spec.pair_count, decision=spec.decision)
        grades = ho.decided_grades(folds, spec.decision)
        ok = grades >= 0
        return Qrels.from_arrays(data.qids[ok], data.docids[ok], grades[ok], check=False)

    def panel(best: int | None) -> ho.FitPredict:
        if spec.panel_method == "mean":
            return ho.mean_fit_predict(data, best=best)
        if spec.strength is None:
            return ho.panel_fit_predict(data, best=best)
        return ho.panel_fit_predict(data, best=best, strength=spec.strength)

    out: dict[str, Qrels] = {}
    if spec.calibrate:
        for r, name in enumerate(data.judges):
            fit = (ho.calibrate_fit_predict(data, r) if spec.strength is None
                   else ho.calibrate_fit_predict(data, r, strength=spec.strength))
            out[f"calibrated:{name}"] = heldout(fit)
    if spec.panel:
        out["panel:all"] = heldout(panel(None))
    for best in spec.panel_best:
        out[f"panel:best{best}"] = heldout(panel(best))
    return out


def check(spec: HeldoutSpec, judges: int) -> None:
    """Refuse what ``heldout_judges`` cannot fit with this many judges (the CLI's words)."""
    if spec.pair_count is not None and spec.pair_count < 1:
        raise ConfigError(f"--pair-count {spec.pair_count}: give a positive number of pairs")
    if (spec.panel or spec.panel_best) and judges < 2:
        raise ConfigError("--panel needs at least two judges")
    for n in spec.panel_best:
        if not 2 <= n < judges:
            raise ConfigError(f"--panel-best {n}: give 2 to {judges - 1} (of {judges} judges; "
                              "--panel takes them all)")


def describe(spec: HeldoutSpec) -> str:
    """One line saying how the derived rows were validated."""
    what = spec.pair_count if spec.pair_count is not None else "all"
    strength = ("default: 10 calibration, 4 panel" if spec.strength is None
                else f"{spec.strength:g}")
    return (f"calibrated/panel rows: {spec.folds}-fold cross-fitting by query (seed "
            f"{spec.seed}); each fold fitted on {what} human pairs of the other folds' queries "
            f"(panels: {spec.panel_method}; Dirichlet strength {strength}, decision "
            f"{spec.decision}); statistics over held-out labels only")
