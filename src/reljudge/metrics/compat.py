"""Where trec_eval 10's rules (reljudge's default) and trec_eval 9's (those of pytrec_eval,
ir_measures and the published TREC tables) give different numbers for the input at hand.

trec_eval 9 rounds run scores to float32 before ranking, so two distinct doubles of a query
that are equal as float32 become a tie broken by docid; trec_eval 10 ranks them by score.
That is cheap to detect (one sort of the run's scores); only then, or when a measure whose
rule differs is asked for (``IPrec``), are the values computed again under trec_eval 9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reljudge.metrics.many_runs import batches
from reljudge.metrics.ranking import float32_rounded
from reljudge.types import Run

#: measures whose definition differs between trec_eval 9 and 10 (besides the score rounding)
RULE_MEASURES = ("IPrec", "IPrecAvg")


def float32_ties(run: Run) -> int:
    """Documents in a float32 tie of distinct doubles: scores of one query equal once rounded
    to float32 but not all equal as doubles, which trec_eval 9 orders by docid and trec_eval 10
    by score."""
    return _float32_ties(run.query_codes()[1], run.score)


def any_float32_ties(runs: Sequence[Run]) -> bool:
    """Whether any run has a float32 tie of distinct doubles (``float32_ties``): a batch of
    small runs at a time, their queries told apart by run."""
    for batch in batches(runs):
        codes = [r.query_codes() for r in batch]
        offsets = np.cumsum([0, *(len(uniq) for uniq, _ in codes)])[:-1]
        if _float32_ties(np.concatenate([c + o for (_, c), o in zip(codes, offsets, strict=True)]),
                         np.concatenate([r.score for r in batch])):
            return True
    return False


def _float32_ties(codes: np.ndarray, score: np.ndarray) -> int:
    """``float32_ties`` of the rows with these query codes and scores."""
    score = np.asarray(score, dtype=np.float64)
    # one integer key per (query, float32 value): equal keys side by side after one sort
    bits = float32_rounded(score).astype(np.float32).view(np.uint32).astype(np.int64)
    key = (codes.astype(np.int64) << 32) | bits
    order = np.argsort(key)
    k, s = key[order], score[order]
    if not len(k):
        return 0
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    mixed = np.minimum.reduceat(s, starts) != np.maximum.reduceat(s, starts)
    return int(np.diff(np.r_[starts, len(k)])[mixed].sum())


@dataclass(frozen=True)
class RuleDifference:
    """How the values of an evaluation change under trec_eval 9's rules."""

    changed: int  # per-query values that differ
    values: int  # per-query values compared
    largest: float  # the largest change of a run's mean
    causes: tuple[str, ...]  # which of trec_eval 9's rules apply to the input

    def note(self) -> str:
        """The stderr line ``eval`` prints."""
        return (f"note: {self.changed} of {self.values} per-query values (means by up to "
                f"{self.largest:.4f}) differ under trec_eval 9's rules ({'; '.join(self.causes)}"
                "), those of pytrec_eval, ir_measures and published TREC tables; --compat "
                "trec_eval-9 reproduces them")


def trec_eval_9_difference(qrels, runs: list[Run], results: Mapping, **options
                           ) -> RuleDifference | None:
    """Compare ``results`` (``evaluate_many`` under trec_eval 10's rules, ``options`` as
    given to it) with the same evaluation under trec_eval 9's; None when no value changes.
    Evaluated again only when a run has float32 ties or a measure's rule differs."""
    from reljudge.metrics.evaluate import evaluate_many
    from reljudge.metrics.measures import parse_measure

    measures = next(iter(results.values())).measures
    ruled = [m for m in measures if parse_measure(m).name in RULE_MEASURES]
    ties = any_float32_ties(runs)
    causes = (("scores rounded to float32 before ranking",) if ties else ()) + (
        ("IPrec's cut-off int(r x R + 0.9)",) if ruled else ())
    if not causes:
        return None
    if not ties:  # only the measures whose rule differs can change: evaluate those again
        measures = ruled
    other = evaluate_many(qrels, runs, measures,
                          **{**options, "compat": "trec_eval-9", "float32_scores": None})
    changed = values = 0
    largest = 0.0
    for name, whole in results.items():
        ev = whole.select(measures)
        a, b = ev.scores, other[name].scores
        changed += int((a != b).sum())
        values += whole.scores.size  # every value compared: the others cannot change
        means_a, means_b = ev.mean(), other[name].mean()
        largest = max([largest, *(abs(means_a[m] - means_b[m]) for m in ev.measures)])
    return RuleDifference(changed, values, largest, causes) if changed else None
