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
        return dict(zip(self.measures, self.scores.mean(axis=0).tolist(), strict=False))

    def per_query(self) -> dict[str, dict[str, float]]:
        """{qid: {measure: value}}."""
        return {q: dict(zip(self.measures, row, strict=False)) for q, row in
                zip(self.query_ids, self.scores.tolist(), strict=False)}


def _qrels_dict(qrels: QrelsLike) -> Mapping[str, Mapping[str, int]]:
    return qrels.to_dict() if isinstance(qrels, Qrels) else qrels


def _run_groups(run: RunLike) -> Iterator[tuple[str, Sequence[str], np.ndarray, Mapping | None]]:
    """(qid, docids, scores, {docid: score} or None) per query, in any order."""
    if isinstance(run, Run):
        qids, bounds, docids, scores = run.groups()
        doc_list = docids.tolist()
        for q, a, b in zip(qids, bounds[:-1].tolist(), bounds[1:].tolist(), strict=False):
            yield q, doc_list[a:b], scores[a:b], None
    else:
        for q, docs in run.items():
            yield str(q), docs, np.fromiter(docs.values(), np.float64, len(docs)), docs


def _judged_retrieved(judged: Mapping[str, int], docs: Sequence[str], scores: np.ndarray,
                      by_doc: Mapping | None) -> tuple[list[str], np.ndarray, list[int]]:
    """The run's judged documents of one query: (docids, scores, grades).

    With a {docid: score} dict the (few) judged documents are looked up in the run; otherwise
    the run's documents are looked up in the judgments. Either way one C-level map.
    """
    if by_doc is not None:
        found = [(d, s, g) for d, s, g in zip(judged, map(by_doc.get, judged), judged.values(), strict=False)
                 if s is not None]
        if not found:
            return [], np.zeros(0), []
        d, s, g = zip(*found, strict=False)
        return list(d), np.asarray(s, dtype=np.float64), list(g)
    grades = np.fromiter(map(judged.get, docs, repeat(UNJUDGED)), np.int64, len(docs))
    cols = np.flatnonzero(grades != UNJUDGED)
    return [docs[c] for c in cols.tolist()], scores[cols], grades[cols].tolist()


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).astype(np.float64)


def rank(qrels: QrelsLike, run: RunLike, *, all_queries: bool = False,
         float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """Build the Ranked matrices of the queries to evaluate (sorted query ids).

    Only judged documents need a place: each one's rank is the number of documents scoring
    higher, plus the tied documents whose docid is greater (trec_eval's order), found by a
    binary search in the query's sorted scores. Unjudged documents are counted, not placed.
    """
    qd = _qrels_dict(qrels)
    groups = {q: (d, s, m) for q, d, s, m in _run_groups(run) if q in qd and len(d)}
    qids = sorted(qd) if all_queries else sorted(groups)
    n = len(qids)
    width = max((len(groups[q][0]) for q in qids if q in groups), default=0)
    neg_scores = np.full((n, width), np.inf)
    length = np.zeros(n, dtype=np.int64)
    ideal_rows, found = [], []
    for i, q in enumerate(qids):
        judged = qd[q]
        ideal_rows.append(np.fromiter(judged.values(), np.int64, len(judged)))
        if q not in groups:
            continue
        docs, s, by_doc = groups[q]
        length[i] = len(docs)
        neg_scores[i, : len(docs)] = -(_f32(s) if float32_scores else s)
        found.append((i, *_judged_retrieved(judged, docs, s, by_doc)))
    neg_scores.sort(axis=1)  # each row ascending = scores descending, padding last
    grades = np.full((n, width), PAD, dtype=np.int64)
    grades[np.arange(width)[None, :] < length[:, None]] = UNJUDGED
    for i, jdocs, jscores, jgrades in found:
        if not jdocs:
            continue
        key = -(_f32(jscores) if float32_scores else jscores)
        row = neg_scores[i]
        pos = np.searchsorted(row, key, "left")
        tied = np.searchsorted(row, key, "right") - pos > 1
        for t in np.flatnonzero(tied).tolist():  # equal scores: docid descending decides
            pos[t] += _greater_tied(groups[qids[i]], jdocs[t], -key[t], float32_scores)
        grades[i, pos] = jgrades
    depth = max((len(r) for r in ideal_rows), default=0)
    ideal = np.full((n, depth), PAD, dtype=np.int64)
    for i, r in enumerate(ideal_rows):
        ideal[i, : len(r)] = -np.sort(-r)
    return qids, Ranked(grades, length, ideal)


def _greater_tied(group, docid: str, score: float, float32_scores: bool) -> int:
    """How many of the query's documents with this score have a greater docid (byte order)."""
    docs, scores, _ = group
    s = _f32(scores) if float32_scores else scores
    names = docs if isinstance(docs, list) else list(docs)
    me = docid.encode()
    return sum(1 for c in np.flatnonzero(s == score).tolist() if names[c].encode() > me)


def evaluate(qrels: QrelsLike, run: RunLike, measures: Sequence[str | Measure], *,
             all_queries: bool = False, float32_scores: bool = False) -> Evaluation:
    """Per-query and mean values of ``measures`` for one run (trec_eval semantics).

    By default the queries are those of the run that have qrels (trec_eval); with
    ``all_queries`` every qrels query counts and one the run lacks scores 0 (``trec_eval -c``).
    ``float32_scores`` rounds scores to float32 before ranking, as trec_eval 9 and pytrec_eval.
    """
    parsed = [parse_measure(m) for m in measures]
    if isinstance(run, Run) and run.compact:  # read from a large file: join, no dicts
        from reljudge.metrics.compact import rank_compact

        as_qrels = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
        qids, ranked = rank_compact(as_qrels, run, all_queries=all_queries,
                                    float32_scores=float32_scores)
    else:
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
