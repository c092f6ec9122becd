"""Where trec_eval 10's rules (reljudge's default) and trec_eval 9's (those of pytrec_eval,
ir_measures and the published TREC tables) give different numbers for the input at hand.

trec_eval 9 rounds run scores to float32 before ranking, so two distinct doubles of a query
that are equal as float32 become a tie broken by docid; trec_eval 10 ranks them by score.
That is cheap to detect (one sort of the run's scores); only the queries with such a tie, and
the measures whose rule differs (``IPrec``), are computed again under trec_eval 9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from reljudge import columns
from reljudge.metrics.many_runs import batches
from reljudge.metrics.ranking import float32_rounded
from reljudge.trec_data import Qrels, Run

#: measures whose definition differs between trec_eval 9 and 10 (besides the score rounding)
RULE_MEASURES = ("IPrec", "IPrecAvg")


def float32_ties(run: Run) -> int:
    """Documents in a float32 tie of distinct doubles: scores of one query equal once rounded
    to float32 but not all equal as doubles, which trec_eval 9 orders by docid and trec_eval 10
    by score."""
    uniq, codes = run.query_codes()
    return int(_tied_per_query(codes, run.score, len(uniq)).sum())


def float32_tied_queries(runs: Sequence[Run]) -> list[np.ndarray]:
    """``float32_ties`` of each query of each run (by the run's query codes): a batch of
    small runs at a time, their queries told apart by run."""
    out = []
    for batch in batches(runs):
        codes = [r.query_codes() for r in batch]
        ends = np.cumsum([len(uniq) for uniq, _ in codes])
        tied = _tied_per_query(
            np.concatenate([c + e - len(u) for (u, c), e in zip(codes, ends, strict=True)]),
            np.concatenate([r.score for r in batch]), int(ends[-1]))
        out += np.split(tied, ends[:-1])
    return out


def _tied_part(run: Run, tied: np.ndarray) -> Run:
    """The rows of ``run``'s queries whose ``tied`` count is not 0, as a run of its own."""
    qcodes, rows = columns.kept_codes(run.query_codes(), tied != 0)
    return Run.from_codes(qcodes, run.docid_bytes()[rows], run.score[rows], name=run.name)


def _evaluated_only(run: Run, tied: np.ndarray, evaluated: Sequence[str]) -> np.ndarray:
    """``tied`` (a count per query of ``run``) with 0 for the queries not ``evaluated``."""
    uniq, _ = run.query_codes()
    keep = set(evaluated)
    return np.where([u.decode() in keep for u in uniq], tied, 0)


def _tied_per_query(codes: np.ndarray, score: np.ndarray, queries: int) -> np.ndarray:
    """``float32_ties`` of each query code, of rows with these codes and scores."""
    score = np.asarray(score, dtype=np.float64)
    # one integer key per (query, float32 value): equal keys side by side after one sort, or
    # already, in a run's usual order (queries grouped, scores descending)
    bits = float32_rounded(score).astype(np.float32).view(np.uint32).astype(np.int64)
    codes = codes.astype(np.int64)
    key = (codes << 32) | bits
    order = None if _descending(codes, bits) else np.argsort(key)
    k, s = (key, score) if order is None else (key[order], score[order])
    if not len(k):
        return np.zeros(queries, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    mixed = np.minimum.reduceat(s, starts) != np.maximum.reduceat(s, starts)
    sizes = np.diff(np.r_[starts, len(k)])
    return np.bincount((k[starts] >> 32)[mixed], sizes[mixed], minlength=queries).astype(np.int64)


def _descending(codes: np.ndarray, bits: np.ndarray) -> bool:
    """Whether rows come query by query (codes ascending) and, inside a query, by float32
    value descending (``bits``: their uint32 patterns), so that equal values are adjacent."""
    # the patterns made to order as the values do: negatives' bits flipped, positives' sign
    ordered = np.where(bits >= 1 << 31, ~bits & 0xFFFFFFFF, bits | 1 << 31)
    same = codes[1:] == codes[:-1]
    return bool((codes[1:] >= codes[:-1]).all() and (ordered[1:] <= ordered[:-1])[same].all())


@dataclass(frozen=True)
class RuleDifference:
    """How the values of an evaluation change under trec_eval 9's rules."""

    #: per-query values that differ
    changed: int
    #: per-query values compared
    values: int
    #: the largest change of a run's mean
    largest: float
    #: which of trec_eval 9's rules apply to the input
    causes: tuple[str, ...]

    def note(self) -> str:
        """The stderr line ``eval`` prints."""
        return (f"note: {self.changed} of {self.values} per-query values (means by up to "
                f"{self.largest:.4f}) differ under trec_eval 9's rules ({'; '.join(self.causes)}"
                "), those of pytrec_eval, ir_measures and published TREC tables; --compat "
                "trec_eval-9 reproduces them")


def trec_eval_9_difference(qrels: Qrels, runs: list[Run], results: Mapping, **options: Any
                           ) -> RuleDifference | None:
    """Compare ``results`` (``evaluate_many`` under trec_eval 10's rules, ``options`` as
    given to it) with the same evaluation under trec_eval 9's; None when no value changes.
    Evaluated again only where a run has float32 ties or a measure's rule differs."""
    from reljudge.metrics.evaluate import evaluate_many
    from reljudge.metrics.measures import parse_measure

    measures = next(iter(results.values())).measures
    ruled = [m for m in measures if parse_measure(m).name in RULE_MEASURES]
    # a tie in a query without judgments changes nothing: it is not evaluated
    tied = [_evaluated_only(r, t, results[r.name].query_ids)
            for r, t in zip(runs, float32_tied_queries(runs), strict=True)]
    causes = (("scores rounded to float32 before ranking",) if any(t.any() for t in tied)
              else ()) + (("IPrec's cut-off int(r x R + 0.9)",) if ruled else ())
    if not causes:
        return None
    # only a query with a float32 tie is ranked otherwise: its rows are evaluated again with
    # every measure; the measures whose rule differs, over every run
    options = {**options, "compat": "trec_eval-9", "float32_scores": None}
    nine = {name: whole.scores.copy() for name, whole in results.items()}
    parts = [_tied_part(r, t) for r, t in zip(runs, tied, strict=True) if t.any()]
    if ruled:
        _splice(nine, results, evaluate_many(qrels, runs, ruled, **options))
    # the run's own queries only: with -c, the others would score 0 here
    if parts:
        _splice(nine, results, evaluate_many(qrels, parts, measures,
                                             **{**options, "all_queries": False}))
    changed = values = 0
    largest = 0.0
    for name, whole in results.items():
        values += whole.scores.size
        changed += int((whole.scores != nine[name]).sum())
        means = replace(whole, scores=nine[name]).mean()
        largest = max([largest, *(abs(v - means[m]) for m, v in whole.mean().items())])
    return RuleDifference(changed, values, largest, causes) if changed else None


def _splice(nine: dict[str, np.ndarray], results: Mapping, again: Mapping) -> None:
    """Write the values evaluated ``again`` (some queries, some measures) into ``nine``, the
    copies of ``results``' value matrices."""
    for name, ev in again.items():
        row = {q: i for i, q in enumerate(results[name].query_ids)}
        rows = [row[q] for q in ev.query_ids]
        cols = [results[name].measures.index(m) for m in ev.measures]
        nine[name][np.ix_(rows, cols)] = ev.scores
