"""Several runs against one qrels in one pass: what a track's worth of runs needs.

Each run's (query) rankings become rows of one set of matrices, the run being one more key:
one join of every run's rows with the qrels, one tie search, one tie break, one grade
matrix. Then the rows are cut back into each run's own ``Ranked``, equal to what
``ranking.rank_columns`` gives for the run alone (tested): its rows, its width (its longest
ranking) and its ideal depth (its queries' most judgments); only padding columns are cut.
Runs are taken a batch at a time (``BATCH_ROWS``) so that memory stays bounded; a run larger
than a batch is ranked alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from reljudge import columns
from reljudge.choices import Compat
from reljudge.metrics.kernels import Ranked
from reljudge.metrics.ranking import (
    QrelsLike,
    break_ties,
    check_inputs,
    checked_options,
    evaluated_rows,
    float32_rounded,
    ideal_matrix,
    placed,
    qrels_queries,
    rank_columns,
    refuse_non_finite,
    trimmed,
)
from reljudge.metrics.ties import tie_spans
from reljudge.trec_data import Qrels, Run

#: run rows ranked in one pass at most (more: no faster, peak grows)
BATCH_ROWS = 1 << 16


def rankings_many(qrels: QrelsLike, runs: Sequence[Run], *, all_queries: bool = False,
                  float32_scores: bool | None = None, compat: Compat = "trec_eval-10",
                  max_docs: int | None = None, judged_only: bool = False
                  ) -> list[tuple[list[str], Ranked]]:
    """``ranking.rankings`` of each run (its queries and their ``Ranked``), under the same
    options and with the same errors, the first bad run's first."""
    float32_scores = checked_options(compat, max_docs, float32_scores)
    from reljudge.io import coerce

    qrels = coerce.qrels_like(qrels)
    compact = []
    qrels_q = qrels_queries(qrels)
    for run in runs:
        check_inputs(qrels, run, run.name, qrels_q)
        run = run.compacted()
        refuse_non_finite(run.score, _query_of(run))
        compact.append(run)
    as_qrels = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
    return [(qids, trimmed(ranked, max_docs, judged_only)) for qids, ranked in
            rank_runs(as_qrels, compact, all_queries=all_queries, float32_scores=float32_scores)]


def _query_of(run: Run) -> Callable[[int], str]:
    """The query id of a compact run's row."""
    names, codes = run.query_codes()
    return lambda i: names[codes[i]].decode()


def _counts(run: Run) -> np.ndarray:
    """Rows of each query of a compact run (in ``query_codes`` order)."""
    bounds = run.query_bounds()
    assert bounds is not None
    return np.diff(bounds)


def batches(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs in order, cut into batches of at most ``BATCH_ROWS`` rows (a larger run is a
    batch of its own)."""
    out: list[list[Run]] = []
    rows = 0
    for run in runs:
        if not out or rows + len(run.score) > BATCH_ROWS:
            out.append([])
            rows = 0
        out[-1].append(run)
        rows += len(run.score)
    return out


def rank_runs(qrels: Qrels, runs: Sequence[Run], *, all_queries: bool = False,
              float32_scores: bool = False) -> list[tuple[list[str], Ranked]]:
    """``rank_columns`` of each run (compact, with finite scores), a batch in one pass."""
    out: list[tuple[list[str], Ranked]] = []
    for batch in batches(runs):
        if len(batch) == 1:
            out.append(rank_columns(qrels, batch[0], all_queries=all_queries,
                                    float32_scores=float32_scores))
        else:
            out += _rank_batch(qrels, batch, all_queries, float32_scores)
    return out


def _rank_batch(qrels: Qrels, runs: Sequence[Run], all_queries: bool,
                float32_scores: bool) -> list[tuple[list[str], Ranked]]:
    """``rank_runs`` of one batch: every run's queries are rows of one set of matrices."""
    q_uniq, q_codes = qrels.query_codes()
    qrels_names = [u.decode() for u in q_uniq]
    qrels_code = {q: i for i, q in enumerate(qrels_names)}
    qids_of: list[list[str]] = []
    # per query segment of every run: its row, its qrels code
    seg_row, seg_code = [], []
    for run in runs:
        names = [u.decode() for u in run.query_codes()[0]]
        counts = _counts(run).tolist()
        in_run = {q for q, c in zip(names, counts, strict=True) if c}
        qids = (sorted(qrels_names) if all_queries
                else sorted(in_run.intersection(qrels_names)))
        row_of = {q: i for i, q in enumerate(qids, sum(map(len, qids_of)))}
        seg_row += [row_of.get(q, -1) for q in names]
        seg_code += [qrels_code.get(q, -1) for q in names]
        qids_of.append(qids)
    n = sum(map(len, qids_of))
    rows_of_seg = np.array(seg_row, dtype=np.int64)
    bounds = np.r_[0, np.cumsum(np.concatenate([_counts(r) for r in runs]))]
    counts = np.diff(bounds)
    score = np.concatenate([r.score for r in runs])
    if float32_scores:
        score = float32_rounded(score)
    docs = np.concatenate([r.docid_bytes() for r in runs])
    evaluated, length, width, neg = evaluated_rows(score, bounds, rows_of_seg, n)

    # every run row of an evaluated, judged query, looked up in the qrels' (query, doc) keys
    row_code = np.repeat(np.where(evaluated, np.array(seg_code, dtype=np.int64), -1), counts)
    sel = np.flatnonzero(row_code >= 0)
    q_docs = qrels.docid_bytes()
    b, found = qrels.key_index().lookup(
        row_code[sel], docs[sel], columns.hash_bytes(docs[sel], columns.words(q_docs)))
    a = sel[found]
    rows = np.repeat(rows_of_seg, counts)[a]
    lo, hi = tie_spans(neg, rows, -score[a], length)
    break_ties(score, bounds, rows_of_seg, evaluated, docs, a, rows, lo, hi, length, neg)
    # freed before the grade matrix of the same size is made
    del neg
    grades = placed(rows, lo, length, width, qrels.grade[b])

    # each query's ideal ranking once, then given to every row of it
    ideal = ideal_matrix(qrels.grade, q_codes, len(qrels_names))
    judged = np.bincount(q_codes, minlength=len(qrels_names))
    out = []
    start = 0
    for qids in qids_of:
        end = start + len(qids)
        codes = np.array([qrels_code[q] for q in qids], dtype=np.int64)
        depth = int(judged[codes].max()) if len(codes) else 0
        w = int(length[start:end].max()) if end > start else 0
        out.append((qids, Ranked(np.ascontiguousarray(grades[start:end, :w]),
                                 length[start:end].copy(),
                                 np.ascontiguousarray(ideal[codes, :depth]))))
        start = end
    return out
