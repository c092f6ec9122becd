"""Honest validation: k-fold by query, so nothing fitted ever sees the query it is tested on.

Every pair gets a prediction from a model fitted only on the human labels of the OTHER folds'
queries (optionally a random sample of them, as a user with a few hundred human labels would
have); statistics over these out-of-fold predictions are held-out statistics. Folds are by
query, never by pair: pairs of one query share its topic and its assessor, and splitting them
would leak.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import GRADE_VALUES, N_GRADES, decide
from reljudge.infer.calibrate import fit_calibration, one_hot
from reljudge.infer.panel import fit_panel
from reljudge.stats import agreement as ag
from reljudge.trec_data import Qrels


class FoldLeak(AssertionError):
    """A query appears both in a training fold and in the fold it is tested on."""


@dataclass(frozen=True)
class Aligned:
    """Pairs of several label sets side by side (-1 where a set has no label)."""

    # (n,) object
    qids: np.ndarray
    # (n,) object
    docids: np.ndarray
    # (n,) int, -1 missing
    human: np.ndarray
    # (n, R) int, -1 missing
    labels: np.ndarray
    judges: tuple[str, ...]


def align(reference: Qrels | None, judges: Mapping[str, Qrels]) -> Aligned:
    """Every pair any judge graded, with the reference grade and each judge's grade."""
    index: dict[tuple[str, str], int] = {}
    for q in judges.values():
        for qid, docid, _ in q:
            index.setdefault((qid, docid), len(index))
    n = len(index)
    labels = np.full((n, len(judges)), -1, dtype=np.int64)
    for r, q in enumerate(judges.values()):
        rows = [index[(qid, docid)] for qid, docid, _ in q]
        labels[rows, r] = [g for _, _, g in q]
    human = np.full(n, -1, dtype=np.int64)
    if reference is not None:
        ref = reference.to_dict()
        for (qid, docid), i in index.items():
            g = ref.get(qid, {}).get(docid)
            if g is not None:
                human[i] = g
    pairs = list(index)
    return Aligned(np.array([p[0] for p in pairs], dtype=object),
                   np.array([p[1] for p in pairs], dtype=object), human, labels,
                   tuple(judges))


def query_folds(qids: Sequence[str] | np.ndarray, k: int = 5, seed: int = 0) -> np.ndarray:
    """The fold (0..k-1) of each pair; all pairs of a query share one fold."""
    uq, inv = np.unique(np.asarray(qids, dtype=object).astype(str), return_inverse=True)
    if k < 2:
        raise InputError(f"need at least 2 folds, got {k}")
    if len(uq) < k:
        raise InputError(f"{len(uq)} queries cannot fill {k} folds by query; use fewer folds")
    order = np.random.default_rng(seed).permutation(len(uq))
    fold_of_query = np.empty(len(uq), dtype=np.int64)
    # balanced: sizes differ by at most one
    fold_of_query[order] = np.arange(len(uq)) % k
    return fold_of_query[inv.reshape(-1)]


def assert_no_leak(qids: np.ndarray, train: np.ndarray, test: np.ndarray) -> None:
    """Raise FoldLeak when a query has pairs on both sides of a split."""
    shared = set(np.asarray(qids)[train].tolist()) & set(np.asarray(qids)[test].tolist())
    if shared:
        raise FoldLeak(f"queries in both training and test folds: {sorted(shared)[:5]}")


# training mask (n,) -> (n, N_GRADES) predictions
FitPredict = Callable[[np.ndarray], np.ndarray]
#: how a panel combines its judges
PANEL_METHODS = ("dawid-skene", "mean")


def cross_fit(data: Aligned, fit_predict: FitPredict, *, folds: int = 5, seed: int = 0,
              pair_count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold (n, N_GRADES) predictions and the fold of each pair.

    For each fold, the training mask holds the human-labelled pairs of the other folds (a
    random ``pair_count`` of them when given); ``fit_predict`` may use human grades only there.
    Pairs without a human label are predicted too (so the result covers every pair).
    """
    fold = query_folds(data.qids, folds, seed)
    rng = np.random.default_rng(seed + 1)
    out = np.full((len(fold), N_GRADES), np.nan)
    for f in range(folds):
        test = fold == f
        train = ~test & (data.human >= 0)
        if pair_count is not None:
            pool = np.flatnonzero(train)
            if pair_count < len(pool):
                keep = rng.choice(pool, size=pair_count, replace=False)
                train = np.zeros_like(train)
                train[keep] = True
        assert_no_leak(data.qids, train, test)
        if not train.any():
            raise InputError(f"fold {f}: no human-labelled pairs in the other folds to fit on")
        out[test] = fit_predict(train)[test]
    return out, fold


def calibrate_fit_predict(data: Aligned, judge: int, strength: float = 10.0,
                          center: str = "judge") -> FitPredict:
    """Fit-and-predict for one judge's calibration (pairs it did not grade stay nan)."""
    grades = data.labels[:, judge]

    def run(train: np.ndarray) -> np.ndarray:
        use = train & (grades >= 0)
        if not use.any():
            raise InputError(f"{data.judges[judge]}: no human-labelled pair it graded to "
                             "calibrate on")
        model = fit_calibration(grades[use], data.human[use], strength=strength,
                                center=center)
        out = np.full((len(grades), N_GRADES), np.nan)
        ok = grades >= 0
        out[ok] = model.predict(grades[ok])
        return out

    return run


def best_judges(data: Aligned, train: np.ndarray, best: int | None,
                cols: np.ndarray | None = None) -> np.ndarray:
    """The ``best`` columns by quadratic kappa on the training pairs only (all when None)."""
    cols = np.arange(data.labels.shape[1]) if cols is None else np.asarray(cols)
    if best is None or best >= len(cols):
        return cols
    scores = []
    for c in cols:
        use = train & (data.labels[:, c] >= 0)
        conf = ag.confusion(data.human[use], data.labels[use, c])
        with np.errstate(invalid="ignore", divide="ignore"):
            s = ag.cohen_kappa(conf[None], "quadratic")[0]
        scores.append(-np.inf if s != s else s)
    return cols[np.argsort(-np.array(scores), kind="stable")[:best]]


def panel_fit_predict(data: Aligned, judges: Sequence[int] | None = None, *,
                      best: int | None = None, strength: float = 4.0,
                      em: bool = True) -> FitPredict:
    """Fit-and-predict for a Dawid–Skene panel of the given judges (all by default).

    With ``best``, the panel takes the ``best`` judges by quadratic kappa against the human
    labels of the training pairs only (choosing them on all labels would leak).
    """
    cols = np.arange(data.labels.shape[1]) if judges is None else np.asarray(judges)

    def run(train: np.ndarray) -> np.ndarray:
        chosen = best_judges(data, train, best, cols)
        labels = data.labels[:, chosen]
        human = np.where(train, data.human, -1)
        model = fit_panel(labels, human, judges=tuple(data.judges[c] for c in chosen),
                          strength=strength, em=em)
        return model.predict(labels)

    return run


def vote_shares(labels: np.ndarray) -> np.ndarray:
    """(n, N_GRADES) share of the judges giving each grade (nan rows where no judge graded)."""
    votes = one_hot(labels.reshape(-1)).reshape(*labels.shape, N_GRADES).sum(axis=1)
    total = votes.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return votes / total


def mean_fit_predict(data: Aligned, judges: Sequence[int] | None = None, *,
                     best: int | None = None) -> FitPredict:
    """Fit-and-predict for a mean panel: each pair's vote shares over the chosen judges.

    The expected grade of the shares is the judges' mean grade, their mode the majority; with
    ``best`` the judges are the best by training quadratic kappa. Nothing else is fitted: pair
    it with :func:`thresholded` to cut the mean grade where the training sample says.
    """
    cols = np.arange(data.labels.shape[1]) if judges is None else np.asarray(judges)
    return lambda train: vote_shares(data.labels[:, best_judges(data, train, best, cols)])


def thresholded(data: Aligned, fit_predict: FitPredict) -> FitPredict:
    """Wrap a fit-and-predict so its expected grade is cut by thresholds fitted on training.

    The thresholds (:func:`reljudge.infer.decision.fit_thresholds`) are fitted on the training
    pairs' predicted expected grades and human grades only; the result is one-hot (every
    fixed decision rule then returns the thresholded grade).
    """
    from reljudge.infer.decision import fit_thresholds

    def run(train: np.ndarray) -> np.ndarray:
        probs = fit_predict(train)
        ok = ~np.isnan(probs).any(axis=1)
        score = np.where(ok, np.nan_to_num(probs) @ GRADE_VALUES, np.nan)
        use = train & ok
        if not use.any():
            raise InputError("thresholds: no human-labelled training pair was predicted")
        rule = fit_thresholds(score[use], data.human[use])
        out = np.full(probs.shape, np.nan)
        out[ok] = one_hot(rule.apply(score[ok]))
        return out

    return run


def out_of_fold(data: Aligned, fit_predict: FitPredict, *, folds: int, seed: int,
                pair_count: int | None = None, decision: str = "median") -> np.ndarray:
    """Out-of-fold (n, N_GRADES) distributions by query (``cross_fit``); for the decision
    "thresholds" the cuts too are fitted inside each fold (:func:`thresholded`)."""
    if decision == "thresholds":
        fit_predict = thresholded(data, fit_predict)
    return cross_fit(data, fit_predict, folds=folds, seed=seed, pair_count=pair_count)[0]


def decided_grades(probs: np.ndarray, decision: str) -> np.ndarray:
    """Each row's grade by the decision rule ("thresholds" rows are one-hot: their mode),
    -1 where the row is nan (a pair nothing predicted)."""
    ok = ~np.isnan(probs).any(axis=1)
    out = np.full(len(probs), -1, dtype=np.int64)
    out[ok] = decide(probs[ok], "mode" if decision == "thresholds" else decision)
    return out


@dataclass(frozen=True)
class Selection:
    """What an inner cross-validation chose, and every candidate's inner score."""

    chosen: str
    # candidate -> quadratic kappa over the inner held-out pairs
    scores: dict[str, float]


def select_by_inner_cv(data: Aligned, candidates: Mapping[str, FitPredict], train: np.ndarray,
                       *, folds: int = 3, seed: int = 0) -> Selection:
    """The candidate with the best quadratic kappa in k-fold-by-query CV inside ``train``.

    Only the human labels of ``train`` are read: its queries are split into inner folds, each
    candidate is fitted on the others and scored on the held-out inner fold (every
    candidate's fit-and-predict must make its own decision, e.g. :func:`thresholded`; its
    most probable grade is scored). Ties go to the first candidate.
    """
    if not candidates:
        raise InputError("no candidates to select from")
    inner = np.full(len(train), -1)
    inner[train] = query_folds(data.qids[train], folds, seed)
    grades = {name: np.full(len(train), -1) for name in candidates}
    for f in range(folds):
        test = inner == f
        fit_on = train & ~test
        assert_no_leak(data.qids, fit_on, test)
        for name, fit_predict in candidates.items():
            probs = fit_predict(fit_on)[test]
            ok = ~np.isnan(probs).any(axis=1)
            grades[name][np.flatnonzero(test)[ok]] = probs[ok].argmax(axis=1)
    scores = {}
    for name, g in grades.items():
        ok = train & (g >= 0)
        conf = ag.confusion(data.human[ok], g[ok])
        with np.errstate(invalid="ignore", divide="ignore"):
            s = float(ag.cohen_kappa(conf[None], "quadratic")[0])
        scores[name] = -np.inf if s != s else s
    chosen = max(scores, key=lambda n: (scores[n], -list(scores).index(n)))
    return Selection(chosen, scores)


def selected_fit_predict(data: Aligned, candidates: Mapping[str, FitPredict], *,
                         folds: int = 3, seed: int = 0,
                         record: list[Selection] | None = None) -> FitPredict:
    """Fit-and-predict that first picks a candidate by inner CV on the training pairs only.

    Pass ``record`` to collect each fit's :class:`Selection`.
    """
    def run(train: np.ndarray) -> np.ndarray:
        sel = select_by_inner_cv(data, candidates, train, folds=folds, seed=seed)
        if record is not None:
            record.append(sel)
        return candidates[sel.chosen](train)

    return run
