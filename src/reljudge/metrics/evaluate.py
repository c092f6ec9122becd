"""Score runs against qrels: build the (queries x depth) matrices once (``ranking``), run
every kernel on them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reljudge.choices import Compat
from reljudge.errors import InputError, MeasureError
from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.io import coerce
from reljudge.metrics.compute import compute_all
from reljudge.metrics.kernels import GM_EPSILON, Ranked, geometric_mean  # noqa: F401 (GM_EPSILON)
from reljudge.metrics.many_runs import rankings_many
from reljudge.metrics.measures import Measure, from_specs
from reljudge.metrics.ranking import (  # noqa: F401 (COMPAT, rank: re-exported)
    COMPAT,
    QrelsLike,
    RunLike,
    rank,
    rankings,
)
from reljudge.metrics.trec_names import plain_measures, read_measure
from reljudge.trec_data import Run


@dataclass(frozen=True, repr=False)
class Evaluation(Tabular):
    """Per-query values of several measures for one run; the aggregate is the mean. Prints
    as the ``eval`` table (its mean row); ``to_dataframe`` gives the values."""

    run: str
    measures: list[str]
    query_ids: list[str]
    #: float64 (len(query_ids), len(measures))
    scores: np.ndarray
    #: whose rules where trec_eval's versions differ
    compat: Compat = "trec_eval-10"
    #: the rankings the values come from (a row per query), for what reads them again
    #: (trec_eval's relstring) without ranking the run a second time
    ranking: Ranked | None = field(default=None, compare=False)

    def column(self, measure: str | Measure) -> np.ndarray:
        """Per-query values of one measure, aligned with query_ids."""
        return self.scores[:, self._index(measure)]

    def _index(self, measure: str | Measure) -> int:
        if isinstance(measure, str) and measure in self.measures:
            return self.measures.index(measure)
        name = str(read_measure(measure))
        try:
            return self.measures.index(name)
        except ValueError:
            raise KeyError(f"{name} was not evaluated; have {', '.join(self.measures)}") from None

    def select(self, measures: Sequence[str | Measure]) -> Evaluation:
        """The same evaluation restricted to some of its measures, in the given order."""
        idx = [self._index(m) for m in measures]
        return Evaluation(self.run, [self.measures[i] for i in idx], self.query_ids,
                          self.scores[:, idx], self.compat, self.ranking)

    def only(self, query_ids: Sequence[str]) -> Evaluation:
        """The same evaluation over some of its queries, in the given order."""
        row = {q: i for i, q in enumerate(self.query_ids)}
        idx = [row[q] for q in query_ids]
        r = self.ranking
        kept = None if r is None else Ranked(r.grades[idx], r.length[idx], r.ideal[idx])
        return Evaluation(self.run, self.measures, list(query_ids), self.scores[idx],
                          self.compat, kept)

    def mean(self) -> dict[str, float]:
        """Mean of each measure over the evaluated queries (0.0 when there are none).

        Each column is summed on its own (contiguous), so a measure's mean is bit for bit the
        same whichever other measures were evaluated beside it."""
        if not self.query_ids:
            return {m: 0.0 for m in self.measures}
        return {m: float(np.ascontiguousarray(self.scores[:, j]).mean())
                for j, m in enumerate(self.measures)}

    def gmean(self) -> dict[str, float]:
        """Geometric mean of each measure over the evaluated queries, trec_eval's gm_map rule:
        exp(mean(log(max(value, GM_EPSILON)))), so that a query scoring 0 weighs in as 0.00001
        instead of zeroing the mean (0.0 when there are no queries)."""
        if not self.query_ids:
            return {m: 0.0 for m in self.measures}
        return dict(zip(self.measures, np.asarray(geometric_mean(self.scores)).tolist(),
                        strict=True))

    def per_query(self) -> dict[str, dict[str, float]]:
        """{qid: {measure: value}}."""
        return {q: dict(zip(self.measures, row, strict=False)) for q, row in
                zip(self.query_ids, self.scores.tolist(), strict=False)}

    def table(self) -> tuple[list[str], list[list]]:
        """The ``eval`` table: run, number of queries, mean of each measure."""
        return (["run", "queries", *self.measures],
                [[self.run, len(self.query_ids), *self.mean().values()]])

    def to_dataframe(self, mean: bool = False) -> DataFrame:
        """A pandas DataFrame: one row per query (columns run, query, measures), or with
        ``mean`` the one row of means (columns run, queries, measures)."""
        if mean:
            return dataframe(*self.table())
        return dataframe(["run", "query", *self.measures],
                         [[self.run, q, *row] for q, row in
                          zip(self.query_ids, self.scores.tolist(), strict=True)])


def parse_measures(measures: Any) -> list[Measure]:
    """One measure or several (text, Measure or ir_measures objects; text in trec_eval's words
    too: ``P.5,10``, ``official``), parsed; none twice."""
    parsed = [m for item in coerce.measure_list(measures) for m in _measures_of(item)]
    check_distinct([str(m) for m in parsed])
    return parsed


#: the measures each text stands for, as read so far: reading a text costs more than scoring
#: a small run; emptied when ``SPECS`` changes (a measure added or replaced)
_read_texts: Callable[[], dict[str, tuple[Measure, ...]]] = from_specs(dict)
_READ_TEXTS_KEPT = 4096


def _measures_of(item: Any) -> tuple[Measure, ...]:
    """The measures one item of a measure list stands for (``P.5,10`` is two)."""
    if not isinstance(item, str):
        return tuple(read_measure(m) for m in plain_measures([item]))
    read = _read_texts()
    if item not in read:
        if len(read) >= _READ_TEXTS_KEPT:
            read.clear()
        read[item] = tuple(read_measure(m) for m in plain_measures([item]))
    return read[item]


#: measures that read the qrels alone: a query the run lacks keeps their value (trec_eval -c)
QRELS_ONLY = ("NumRel",)


def evaluate(qrels: QrelsLike, run: RunLike, measures: Sequence[str | Measure] | str, *,
             all_queries: bool = False, float32_scores: bool | None = None,
             compat: Compat = "trec_eval-10", max_docs: int | None = None,
             judged_only: bool = False) -> Evaluation:
    """Per-query and mean values of ``measures`` for one run (trec_eval semantics).

    The queries are the run's that have qrels; with ``all_queries`` every qrels query, one
    the run lacks scoring 0 but on measures of the qrels alone (``NumRel``) (``trec_eval -c``). ``compat``: the rules
    of trec_eval 10 (default) or of trec_eval 9.0.8 (``"trec_eval-9"``, as pytrec_eval and
    ir_measures: scores rounded to float32; docs/measures.md, conventions); ``float32_scores``
    overrides the score rounding. ``max_docs``: only the first documents of each ranking count
    (``trec_eval -M``). ``judged_only``: every measure over the condensed lists, unjudged
    documents removed (``trec_eval -J``). qrels and run: any form ``reljudge.io.coerce``
    accepts; measures: one or several, text or ir_measures objects. Empty inputs, or no
    query in common, are an InputError.
    """
    parsed = parse_measures(measures)
    name, qids, ranked = rankings(qrels, run, all_queries=all_queries,
                                  float32_scores=float32_scores, compat=compat,
                                  max_docs=max_docs, judged_only=judged_only)
    return Evaluation(name, [str(m) for m in parsed], qids,
                      scored(parsed, ranked, compat, all_queries), compat, _kept(ranked))


def _kept(r: Ranked) -> Ranked:
    """The rankings an Evaluation keeps: their matrices, not the kernels' intermediates."""
    return Ranked(r.grades, r.length, r.ideal)


def scored(measures: Sequence[Measure], ranked: Ranked, compat: Compat,
           all_queries: bool) -> np.ndarray:
    """(queries, measures) values of one run's rankings. Each run is computed on its own:
    rows of several runs stacked would change the order of a few floating-point sums (numpy
    sums a matrix's rows in blocks that depend on its shape), so the last bit of a value."""
    scores = compute_all(measures, ranked, compat)
    # trec_eval -c: a query the run lacks scores 0 but on the qrels alone
    if all_queries:
        missing = ranked.length == 0
        for j, m in enumerate(measures):
            if m.name not in QRELS_ONLY:
                scores[missing, j] = 0.0
    return scores


def check_distinct(names: Sequence[str]) -> None:
    """A MeasureError when no measure is given, or one is given twice."""
    if not names:
        raise MeasureError("no measures given; name at least one, e.g. ['nDCG@10']")
    twice = [n for n, k in Counter(names).items() if k > 1]
    if twice:
        raise MeasureError(f"measure {twice[0]} given twice; give each measure once")


def evaluate_many(qrels: QrelsLike, runs: Sequence[Run] | Mapping[str, RunLike],
                  measures: Sequence[str | Measure] | str, **kwargs: Any
                  ) -> dict[str, Evaluation]:
    """``evaluate`` for several runs, keyed by run name (shared names numbered)."""
    runs = coerce.as_runs(runs)
    if not runs:
        raise InputError("no runs to evaluate; give at least one")
    measures = parse_measures(measures)
    # once, not once per run
    qrels = coerce.as_qrels(qrels)
    twice = [name for name, k in Counter(run.name for run in runs).items() if k > 1]
    if twice:
        raise InputError(f"two runs are named {twice[0]!r}; rename one (Run.with_name)")
    ranked = rankings_many(qrels, runs, **kwargs)
    compat, all_queries = kwargs.get("compat", "trec_eval-10"), kwargs.get("all_queries", False)
    names = [str(m) for m in measures]
    return {run.name: Evaluation(run.name, names, qids, scored(measures, r, compat, all_queries),
                                 compat, _kept(r))
            for run, (qids, r) in zip(runs, ranked, strict=True)}
