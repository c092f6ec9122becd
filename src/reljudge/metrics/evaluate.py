"""Score runs against qrels: build the (queries x depth) matrices once, run every kernel on them.

The only Python loop is over queries (never over query x document): each query's documents
are looked up in that query's own small judgment dict with one C-level ``map``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from reljudge.metrics.kernels import PAD, UNJUDGED, Ranked, compute
from reljudge.metrics.measures import Measure, parse_measure
from reljudge.types import Qrels, Run

QrelsLike = Qrels | Mapping[str, Mapping[str, int]]
RunLike = Run | Mapping[str, Mapping[str, float]]


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

    def mean(self) -> dict[str, float]:
        """Mean of each measure over the evaluated queries (0.0 when there are none)."""
        if not self.query_ids:
            return {m: 0.0 for m in self.measures}
        return dict(zip(self.measures, self.scores.mean(axis=0).tolist()))

    def per_query(self) -> dict[str, dict[str, float]]:
        """{qid: {measure: value}}."""
        return {q: dict(zip(self.measures, row)) for q, row in
                zip(self.query_ids, self.scores.tolist())}


def _qrels_dict(qrels: QrelsLike) -> Mapping[str, Mapping[str, int]]:
    return qrels.to_dict() if isinstance(qrels, Qrels) else qrels


def _run_groups(run: RunLike) -> Iterator[tuple[str, list[str], np.ndarray]]:
    """(qid, docids, scores) per query, in any order."""
    if isinstance(run, Run):
        qid = run.qid
        n = len(qid)
        if n == 0:
            return
        # group rows by query; a stable sort keeps file order inside a query
        codes: dict[str, int] = {}
        qcode = np.fromiter(map(codes.setdefault, qid.tolist(), range(n)), np.int64, n)
        if n > 1 and np.any(qcode[1:] < qcode[:-1]):
            order = np.argsort(qcode, kind="stable")
            qcode, docids, scores = qcode[order], run.docid[order], run.score[order]
        else:
            docids, scores = run.docid, run.score
        bounds = np.flatnonzero(np.r_[True, qcode[1:] != qcode[:-1], True])
        doc_list = docids.tolist()
        names = list(codes)
        code_to_name = {v: k for k, v in codes.items()}
        del names
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            yield code_to_name[int(qcode[a])], doc_list[a:b], scores[a:b]
    else:
        for q, docs in run.items():
            yield str(q), list(docs), np.fromiter(docs.values(), np.float64, len(docs))


def _tie_order(docs: list[str], scores: np.ndarray) -> np.ndarray:
    """trec_eval order of one query: score descending, then docid descending (byte order)."""
    keys = sorted(range(len(docs)), key=lambda i: (scores[i], docs[i].encode()), reverse=True)
    return np.asarray(keys, dtype=np.int64)


def rank(qrels: QrelsLike, run: RunLike, *, all_queries: bool = False,
         float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """Build the Ranked matrices of the queries to evaluate (sorted query ids)."""
    qd = _qrels_dict(qrels)
    groups = {q: (d, s) for q, d, s in _run_groups(run) if q in qd and len(d)}
    qids = sorted(qd) if all_queries else sorted(groups)
    n = len(qids)
    width = max((len(groups[q][0]) for q in qids if q in groups), default=0)
    scores = np.full((n, width), -np.inf)
    grades = np.full((n, width), PAD, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    ideal_rows = []
    for i, q in enumerate(qids):
        judged = qd[q]
        ideal_rows.append(np.fromiter(judged.values(), np.int64, len(judged)))
        if q not in groups:
            continue
        docs, s = groups[q]
        m = len(docs)
        length[i] = m
        scores[i, :m] = s
        grades[i, :m] = np.fromiter(map(judged.get, docs, repeat(UNJUDGED)), np.int64, m)
    if float32_scores:
        finite = np.isfinite(scores)
        scores[finite] = scores[finite].astype(np.float32).astype(np.float64)
    order = np.argsort(-scores, axis=1, kind="stable")
    rows = np.arange(n)[:, None]
    sorted_scores = scores[rows, order]
    grades = grades[rows, order]
    if width > 1:
        tied = (sorted_scores[:, 1:] == sorted_scores[:, :-1]) & np.isfinite(sorted_scores[:, 1:])
        for i in np.flatnonzero(tied.any(axis=1)).tolist():
            docs, _ = groups[qids[i]]
            m = length[i]
            o = _tie_order(docs, scores[i, :m])
            unsorted = np.fromiter(map(qd[qids[i]].get, docs, repeat(UNJUDGED)), np.int64, m)
            grades[i, :m] = unsorted[o]
    depth = max((len(r) for r in ideal_rows), default=0)
    ideal = np.full((n, depth), PAD, dtype=np.int64)
    for i, r in enumerate(ideal_rows):
        ideal[i, : len(r)] = -np.sort(-r)
    return qids, Ranked(grades, length, ideal)


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
    for run in runs:
        if run.name in out:
            raise ValueError(f"two runs are named {run.name!r}; rename one (Run.with_name)")
        out[run.name] = evaluate(qrels, run, measures, **kwargs)
    return out
