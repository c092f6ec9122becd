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
    uniq, codes = run.query_codes()
    return int(_tied_per_query(codes, run.score, len(uniq)).sum())


def float32_tied_runs(runs: Sequence[Run]) -> list[bool]:
    """Whether each run has a float32 tie of distinct doubles (``float32_ties``): a batch of
    small runs at a time, their queries told apart by run."""
    out = []
    for batch in batches(runs):
        codes = [r.query_codes() for r in batch]
        ends = np.cumsum([len(uniq) for uniq, _ in codes])
        tied = _tied_per_query(
            np.concatenate([c + e - len(u) for (u, c), e in zip(codes, ends, strict=True)]),
            np.concatenate([r.score for r in batch]), int(ends[-1]))
        total = np.r_[0, np.cumsum(tied)]
        out += (total[ends] > total[ends - [len(u) for u, _ in codes]]).tolist()
    return out


def _tied_per_query(codes: np.ndarray, score: np.ndarray, queries: int) -> np.ndarray:
    """``float32_ties`` of each query code, of rows with these codes and scores."""
    score = np.asarray(score, dtype=np.float64)
    # one integer key per (query, float32 value): equal keys side by side after one sort
    bits = float32_rounded(score).astype(np.float32).view(np.uint32).astype(np.int64)
    key = (codes.astype(np.int64) << 32) | bits
    order = np.argsort(key)
    k, s = key[order], score[order]
    if not len(k):
        return np.zeros(queries, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    mixed = np.minimum.reduceat(s, starts) != np.maximum.reduceat(s, starts)
    sizes = np.diff(np.r_[starts, len(k)])
    return np.bincount((k[starts] >> 32)[mixed], sizes[mixed], minlength=queries).astype(np.int64)


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
    Evaluated again only where a run has float32 ties or a measure's rule differs."""
    from reljudge.metrics.evaluate import evaluate_many
    from reljudge.metrics.measures import parse_measure

    measures = next(iter(results.values())).measures
    ruled = [m for m in measures if parse_measure(m).name in RULE_MEASURES]
    tied = float32_tied_runs(runs)
    causes = (("scores rounded to float32 before ranking",) if any(tied) else ()) + (
        ("IPrec's cut-off int(r x R + 0.9)",) if ruled else ())
    if not causes:
        return None
    # a run without float32 ties keeps its ranking: only the measures whose rule differs can
    # change, so only those are evaluated again; a run with ties, every measure
    options = {**options, "compat": "trec_eval-9", "float32_scores": None}
    other: dict = {}
    for again, names in (([r for r, t in zip(runs, tied, strict=True) if t], measures),
                         ([r for r, t in zip(runs, tied, strict=True) if not t], ruled)):
        if again and names:
            other.update(evaluate_many(qrels, again, names, **options))
    changed = values = 0
    largest = 0.0
    for name, whole in results.items():
        values += whole.scores.size  # every value compared: the others cannot change
        if name not in other:
            continue
        ev = whole.select(other[name].measures)
        a, b = ev.scores, other[name].scores
        changed += int((a != b).sum())
        means_a, means_b = ev.mean(), other[name].mean()
        largest = max([largest, *(abs(means_a[m] - means_b[m]) for m in ev.measures)])
    return RuleDifference(changed, values, largest, causes) if changed else None
