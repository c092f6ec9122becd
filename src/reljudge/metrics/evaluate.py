"""Score runs against qrels: build the (queries x depth) matrices once (``ranking``), run
every kernel on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reljudge.metrics.kernels import compute
from reljudge.metrics.measures import Measure, parse_measure
from reljudge.metrics.ranking import QrelsLike, RunLike, rank
from reljudge.types import Qrels, Run

GM_EPSILON = 0.00001  # trec_eval's MIN_GEO_MEAN


@dataclass(frozen=True)
class Evaluation:
    """Per-query values of several measures for one run; the aggregate is the mean."""

    run: str
    measures: list[str]
    query_ids: list[str]
    scores: np.ndarray  # float64 (len(query_ids), len(measures))

    def column(self, measure: str | Measure) -> np.ndarray:
        """Per-query values of one measure, aligned with query_ids."""
        return self.scores[:, self._index(measure)]

    def _index(self, measure: str | Measure) -> int:
        name = str(parse_measure(measure))
        try:
            return self.measures.index(name)
        except ValueError:
            raise KeyError(f"{name} was not evaluated; have {', '.join(self.measures)}") from None

    def select(self, measures: Sequence[str | Measure]) -> Evaluation:
        """The same evaluation restricted to some of its measures, in the given order."""
        idx = [self._index(m) for m in measures]
        return Evaluation(self.run, [self.measures[i] for i in idx], self.query_ids,
                          self.scores[:, idx])

    def mean(self) -> dict[str, float]:
        """Mean of each measure over the evaluated queries (0.0 when there are none)."""
        if not self.query_ids:
            return {m: 0.0 for m in self.measures}
        return dict(zip(self.measures, self.scores.mean(axis=0).tolist(), strict=False))

    def gmean(self) -> dict[str, float]:
        """Geometric mean of each measure over the evaluated queries, trec_eval's gm_map rule:
        exp(mean(log(max(value, GM_EPSILON)))), so that a query scoring 0 weighs in as 0.00001
        instead of zeroing the mean (0.0 when there are no queries)."""
        if not self.query_ids:
            return {m: 0.0 for m in self.measures}
        logs = np.log(np.maximum(self.scores, GM_EPSILON)).mean(axis=0)
        return dict(zip(self.measures, np.exp(logs).tolist(), strict=True))

    def per_query(self) -> dict[str, dict[str, float]]:
        """{qid: {measure: value}}."""
        return {q: dict(zip(self.measures, row, strict=False)) for q, row in
                zip(self.query_ids, self.scores.tolist(), strict=False)}


def evaluate(qrels: QrelsLike, run: RunLike, measures: Sequence[str | Measure], *,
             all_queries: bool = False, float32_scores: bool = False) -> Evaluation:
    """Per-query and mean values of ``measures`` for one run (trec_eval semantics).

    By default the queries are those of the run that have qrels (trec_eval); with
    ``all_queries`` every qrels query counts and one the run lacks scores 0 (``trec_eval -c``).
    ``float32_scores`` rounds scores to float32 before ranking, as trec_eval 9 and pytrec_eval.
    """
    parsed = [parse_measure(m) for m in measures]
    qids, ranked = rank(qrels, run, all_queries=all_queries, float32_scores=float32_scores)
    cache: dict = {}
    cols = [compute(m, ranked, cache) for m in parsed]
    scores = np.column_stack(cols) if cols else np.zeros((len(qids), 0))
    if all_queries:  # trec_eval -c: a query the run lacks scores 0 on every measure
        scores[ranked.length == 0] = 0.0
    name = run.name if isinstance(run, Run) else "run"
    return Evaluation(name, [str(m) for m in parsed], qids, scores)


def evaluate_many(qrels: QrelsLike, runs: Sequence[Run], measures: Sequence[str | Measure],
                  **kwargs) -> dict[str, Evaluation]:
    """``evaluate`` for several runs, keyed by run name (names must be distinct)."""
    out: dict[str, Evaluation] = {}
    if not isinstance(qrels, Qrels) and any(isinstance(r, Run) for r in runs):
        qrels = Qrels.from_dict(qrels)  # once, not once per run
    for run in runs:
        if run.name in out:
            raise ValueError(f"two runs are named {run.name!r}; rename one (Run.with_name)")
        out[run.name] = evaluate(qrels, run, measures, **kwargs)
    return out
