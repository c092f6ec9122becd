"""Derived label sets: one judge calibrated, or a panel, fitted on a human sample.

The library side of ``reljudge calibrate``: fit on the human sample, predict every pair the
judge(s) graded, say what the fit used (for the store's derivation record), and, when asked,
measure the same fit on held-out queries (k-fold by query) beside the raw judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import N_GRADES
from reljudge.infer.calibrate import (
    Calibration,
    decide,
    expected_grade,
    fit_calibration,
    one_hot,
)
from reljudge.infer.decision import fit_thresholds
from reljudge.infer.heldout import (
    PANEL_METHODS,
    Aligned,
    align,
    calibrate_fit_predict,
    decided_grades,
    mean_fit_predict,
    out_of_fold,
    panel_fit_predict,
    vote_shares,
)
from reljudge.infer.panel import Panel, fit_panel
from reljudge.stats import agreement as ag
from reljudge.trec_data import Qrels

HELDOUT_STATS = ("kappa", "kappa_quadratic", "alpha_ordinal", "mae")


@dataclass
class Derived:
    """A fitted derived label set: per-pair grade distributions and what they came from."""

    name: str
    method: str
    pairs: list[tuple[str, str]]
    # (n, N_GRADES)
    probs: np.ndarray
    # None: a mean panel (nothing fitted but the cuts)
    model: Calibration | Panel | None
    fitted_on: dict
    heldout: dict[str, dict[str, float | None]] | None = None
    # how a grade is read off each distribution (grades.DECISIONS,
    decision: str = "median"
    # or "thresholds": the distributions are then the cut grades, certain)

    # a summary: the pairs and distributions can be millions
    def __repr__(self) -> str:
        return (f"Derived(name={self.name!r}, method={self.method!r}, {len(self.pairs)} pairs, "
                f"decision={self.decision!r})")

    def grades(self) -> np.ndarray:
        """Each pair's grade by the decision rule: the grade the held-out check measured and
        the one written to a store."""
        return decide(self.probs, "mode" if self.decision == "thresholds" else self.decision)

    def worse_than_raw(self) -> str | None:
        """Why these labels must not be written, else None: no held-out check, or held-out
        figures worse than the best raw judge's on the statistic the decision rule aims at
        (MAE; quadratic kappa for thresholds), among the judges that graded at least 90 % as
        many of the pairs (a judge of a few pairs is no yardstick)."""
        if not self.heldout:
            return "they were never checked on held-out queries (--folds 0)"
        stat = "kappa_quadratic" if self.decision == "thresholds" else "mae"
        # MAE: lower is better
        lower = stat == "mae"
        mine = self.heldout[self.name][stat]
        pairs = self.heldout[self.name]["pairs"] or 0
        raw: dict[str, float] = {}
        for k, v in self.heldout.items():
            value, judged = v[stat], v["pairs"]
            # a judge of (nearly) as many pairs as this one
            if k != self.name and value is not None and judged is not None \
                    and judged >= 0.9 * pairs:
                raw[k] = value
        if not raw:
            return None
        name = (min if lower else max)(raw, key=raw.__getitem__)
        if mine is None or (mine > raw[name] if lower else mine < raw[name]):
            shown = "undefined" if mine is None else f"{mine:.3f}"
            return (f"their held-out {stat} ({shown}, decision {self.decision}) is worse than "
                    f"the raw judge {name}'s ({raw[name]:.3f})")
        return None


def agreement(human: np.ndarray, grades: np.ndarray) -> dict[str, float | None]:
    """The audit's statistics (kappa, quadratic kappa, ordinal alpha, MAE) of grades vs human."""
    ok = (human >= 0) & (grades >= 0)
    c = ag.confusion(human[ok], grades[ok])[None]
    stats = ag.all_statistics(c)
    return {"pairs": int(ok.sum()),
            **{k: (None if stats[k][0] != stats[k][0] else float(stats[k][0]))
               for k in HELDOUT_STATS}}


def _check_pair_count(pair_count: int | None, available: int) -> None:
    """A pair count larger than the pairs there are is an error, not all of them silently."""
    if pair_count is not None and pair_count > available:
        raise InputError(f"--pair-count {pair_count}: only {available} pairs have both a human "
                         "and a judge label; give at most that, or leave --pair-count out to use "
                         "them all")


def _sample(train: np.ndarray, pair_count: int | None, seed: int) -> np.ndarray:
    if pair_count is None or pair_count >= train.sum():
        return train
    keep = np.random.default_rng(seed).choice(np.flatnonzero(train), size=pair_count, replace=False)
    out = np.zeros_like(train)
    out[keep] = True
    return out


def _used_pairs(data: Aligned, used: np.ndarray) -> list[list[str]]:
    return [[q, d] for q, d in zip(data.qids[used].tolist(), data.docids[used].tolist(),
                                   strict=True)]


def _apply_thresholds(out: Derived, data: Aligned, used: np.ndarray) -> None:
    """Replace the distributions by grades cut at thresholds fitted on the sampled pairs."""
    score = expected_grade(out.probs)
    rule = fit_thresholds(score[used], data.human[used])
    out.probs = one_hot(rule.apply(score))
    out.fitted_on["decision"] = rule.to_dict()


def calibrate_judge(reference: Qrels, judge: Qrels, *, judge_name: str, human_name: str,
                    probs: Mapping[tuple[str, str], tuple[float, ...]] | None = None,
                    strength: float = 10.0, pair_count: int | None = None, seed: int = 0,
                    folds: int = 0, decision: str = "median") -> Derived:
    """Calibrate one judge on the human labels (all, or a random ``sample`` of pairs)."""
    data = align(reference, {judge_name: judge})
    grades = data.labels[:, 0]
    soft = None
    if probs is not None:
        soft = np.array([probs.get((q, d), (np.nan,) * N_GRADES)
                         for q, d in zip(data.qids.tolist(), data.docids.tolist(), strict=True)])
        if np.isnan(soft).any():
            # some labels have no distribution: calibrate the grades alone
            soft = None
    _check_pair_count(pair_count, int((data.human >= 0).sum()))
    used = _sample(data.human >= 0, pair_count, seed)
    if not used.any():
        raise InputError(f"no pair graded by both {human_name!r} and {judge_name!r}")
    model = fit_calibration(grades[used], data.human[used], strength=strength,
                            probs=None if soft is None else soft[used])
    predicted = model.predict(grades) if soft is None else model.predict(probs=soft)
    fitted_on: dict[str, object] = {
        "judge_source": judge_name, "human_source": human_name,
        "method": "dirichlet-smoothed P(human | judge)", "strength": strength,
        "judge_probs": soft is not None, "pair_count": pair_count, "seed": seed,
        "pairs_used": int(used.sum()), "queries_used": sorted(set(data.qids[used].tolist())),
        "pairs": _used_pairs(data, used), "model": model.to_dict()}
    out = Derived(f"calibrated:{judge_name}", "calibration",
                  list(zip(data.qids.tolist(), data.docids.tolist(), strict=True)), predicted,
                  model, fitted_on, decision=decision)
    fitted_on["decision_rule"] = decision
    if decision == "thresholds":
        _apply_thresholds(out, data, used)
    if folds:
        oof = decided_grades(out_of_fold(data, calibrate_fit_predict(data, 0, strength),
                                         folds=folds, seed=seed, pair_count=pair_count,
                                         decision=decision), decision)
        out.heldout = {out.name: agreement(data.human, oof),
                       judge_name: agreement(data.human, grades)}
        out.fitted_on["heldout"] = {"folds": folds, "by": "query", "decision": decision,
                                    "seed": seed, "stats": out.heldout}
    return out


def panel_judges(reference: Qrels, judges: Mapping[str, Qrels], *, name: str,
                 human_name: str, strength: float = 4.0, em: bool = True,
                 pair_count: int | None = None, seed: int = 0, folds: int = 0,
                 decision: str = "median", method: str = "dawid-skene") -> Derived:
    """Combine several judges: Dawid–Skene EM anchored by the human labels, or their mean."""
    if len(judges) < 2:
        raise InputError("a panel needs at least two judges")
    if method not in PANEL_METHODS:
        raise InputError(f"unknown panel method {method!r}; expected one of "
                         f"{', '.join(PANEL_METHODS)}")
    data = align(reference, judges)
    _check_pair_count(pair_count, int((data.human >= 0).sum()))
    used = _sample(data.human >= 0, pair_count, seed)
    if not used.any():
        raise InputError(f"no pair graded by {human_name!r} and the judges")
    fitted_on: dict[str, object] = {
        "judge_sources": list(data.judges), "human_source": human_name, "pair_count": pair_count,
        "seed": seed, "pairs_used": int(used.sum()),
        "queries_used": sorted(set(data.qids[used].tolist())), "pairs": _used_pairs(data, used)}
    model: Panel | None = None
    if method == "mean":
        probs = vote_shares(data.labels)
        fit_predict = mean_fit_predict(data)
        fitted_on["method"] = "mean: each pair's share of judges giving each grade"
    else:
        model = fit_panel(data.labels, np.where(used, data.human, -1), judges=data.judges,
                          strength=strength, em=em)
        probs = model.predict(data.labels)
        fit_predict = panel_fit_predict(data, strength=strength, em=em)
        fitted_on |= {"method": "Dawid-Skene EM anchored by human labels",
                      "strength": strength, "em": em, "model": model.to_dict()}
    out = Derived(f"panel:{name}", "panel",
                  list(zip(data.qids.tolist(), data.docids.tolist(), strict=True)),
                  probs, model, fitted_on, decision=decision)
    fitted_on["decision_rule"] = decision
    if decision == "thresholds":
        _apply_thresholds(out, data, used)
    if folds:
        oof = decided_grades(out_of_fold(data, fit_predict, folds=folds, seed=seed,
                                         pair_count=pair_count, decision=decision), decision)
        out.heldout = {out.name: agreement(data.human, oof)}
        for r, judge in enumerate(data.judges):
            out.heldout[judge] = agreement(data.human, data.labels[:, r])
        out.fitted_on["heldout"] = {"folds": folds, "by": "query", "decision": decision,
                                    "seed": seed, "stats": out.heldout}
    return out
