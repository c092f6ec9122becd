"""A panel of judges combined by Dawid–Skene EM, anchored by a human sample.

Each pair has a true grade z with prior pi; judge r gives grade g with probability
theta_r[z, g], independently given z (Dawid & Skene 1979). A pair with a human label has its
z fixed to that grade; a judge that did not grade a pair adds no factor. Each confusion row
is smoothed by a Dirichlet prior of ``strength`` pseudo-counts centred (``center``) on the
judge's grade distribution (``marginal``) or on the judge being right (``judge``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import N_GRADES
from reljudge.infer.calibrate import CENTERS, TRUST, check_grades, one_hot

_TINY = 1e-300


@dataclass(frozen=True)
class Panel:
    """A fitted panel: the grade prior and each judge's confusion matrix."""

    judges: tuple[str, ...]
    # (N_GRADES,) P(true grade)
    prior: np.ndarray
    # (R, N_GRADES true, N_GRADES judge) P(judge grade | true grade)
    confusion: np.ndarray
    iterations: int
    converged: bool
    # pairs with a human label used in the fit
    anchored: int
    strength: float
    center: str = "marginal"

    def predict(self, labels: np.ndarray) -> np.ndarray:
        """(n, N_GRADES) posterior of the true grade given an (n, R) label matrix (-1 = missing)."""
        labels = check_grades(labels, "panel labels", missing=True)
        if labels.ndim != 2 or labels.shape[1] != len(self.judges):
            raise InputError(f"expected labels of {len(self.judges)} judges, got shape "
                             f"{labels.shape}")
        return _posterior(_indicators(labels), np.log(self.prior), np.log(self.confusion))

    def to_dict(self) -> dict:
        """The fitted model as plain data (for the store's derivation record)."""
        return {"judges": list(self.judges), "prior": self.prior.round(6).tolist(),
                "confusion": self.confusion.round(6).tolist(), "iterations": self.iterations,
                "converged": self.converged, "anchored": self.anchored,
                "strength": self.strength, "center": self.center}


def _indicators(labels: np.ndarray) -> np.ndarray:
    """(n, R, N_GRADES) one-hot of each judge's grade (zero where missing)."""
    n, r = labels.shape
    return one_hot(labels.reshape(-1)).reshape(n, r, N_GRADES)


def _posterior(ind: np.ndarray, log_prior: np.ndarray, log_conf: np.ndarray) -> np.ndarray:
    """P(z | labels) for every pair: prior times each present judge's likelihood."""
    log_post = log_prior[None, :] + np.einsum("nrg,rzg->nz", ind, log_conf)
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True)


def _m_step(ind: np.ndarray, resp: np.ndarray, smooth: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    counts = np.einsum("nz,nrg->rzg", resp, ind) + smooth
    conf = counts / np.maximum(counts.sum(axis=2, keepdims=True), _TINY)
    prior = resp.sum(axis=0) + 1.0
    return prior / prior.sum(), conf


def fit_panel(labels: np.ndarray, human: np.ndarray, *, judges: tuple[str, ...] | None = None,
              strength: float = 4.0, center: str = "marginal", em: bool = True,
              max_iter: int = 200, tol: float = 1e-6) -> Panel:
    """Fit the panel on an (n, R) judge label matrix and (n,) human grades (-1 = no human)."""
    labels = check_grades(labels, "panel labels", missing=True)
    human = check_grades(human, "human grades", missing=True)
    if labels.ndim != 2 or labels.shape[0] != len(human):
        raise InputError(f"labels shaped {labels.shape} do not match {len(human)} human grades")
    n, r = labels.shape
    names = judges if judges is not None else tuple(f"judge{i}" for i in range(r))
    if len(names) != r:
        raise InputError(f"{len(names)} judge names for {r} label columns")
    if strength < 0:
        raise InputError(f"prior strength must be >= 0, got {strength}")
    anchored = human >= 0
    if not anchored.any():
        raise InputError("a panel needs at least one human-labelled pair to anchor it")
    ind = _indicators(labels)
    # (R, N_GRADES) each judge's grade counts, add-one
    marginal = ind.sum(axis=0) + 1.0
    marginal = marginal / marginal.sum(axis=1, keepdims=True)
    if center == "marginal":
        smooth = strength * np.broadcast_to(marginal[:, None, :], (r, N_GRADES, N_GRADES))
    elif center == "judge":
        smooth = strength * (TRUST * np.eye(N_GRADES)[None] + (1 - TRUST) * marginal[:, None, :])
    else:
        raise InputError(f"unknown prior centre {center!r}; expected one of "
                         f"{', '.join(CENTERS)}")
    fixed = one_hot(human)
    # start from the anchored pairs alone (a naive-Bayes fit); EM then adds the rest
    prior, conf = _m_step(ind[anchored], fixed[anchored], smooth)
    iterations, converged = 0, True
    free = ~anchored
    if em and free.any():
        converged = False
        resp = fixed.copy()
        for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
            resp[free] = _posterior(ind[free], np.log(prior), np.log(conf))
            new_prior, new_conf = _m_step(ind, resp, smooth)
            change = max(np.abs(new_conf - conf).max(), np.abs(new_prior - prior).max())
            prior, conf = new_prior, new_conf
            if change < tol:
                converged = True
                break
    return Panel(tuple(names), prior, conf, iterations, converged, int(anchored.sum()),
                 float(strength), center)
