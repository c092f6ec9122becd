"""``rank`` for compact runs (read from large files): a vectorised join instead of dicts.

The run's (query, document) pairs are matched with the qrels' by 64-bit keys confirmed on the
bytes (``reljudge.columns.join``); each judged document's rank is then found, as in
``evaluate.rank``, by a binary search in its query's sorted scores, ties broken by docid
descending in byte order. Both paths build the same ``Ranked`` matrices (tested).
"""

from __future__ import annotations

import numpy as np

from reljudge import columns
from reljudge.metrics.kernels import PAD, UNJUDGED, Ranked
from reljudge.types import Qrels, Run


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).astype(np.float64)


def rank_compact(qrels: Qrels, run: Run, *, all_queries: bool = False,
                 float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """The Ranked matrices of the queries to evaluate (sorted query ids) for a compact run."""
    r_uniq, r_codes = run.query_codes()
    bounds = run.query_bounds()
    q_uniq, q_codes = qrels.query_codes()
    run_names = [u.decode() for u in r_uniq]
    qrels_names = [u.decode() for u in q_uniq]
    in_run = set(run_names)
    qids = sorted(qrels_names) if all_queries else sorted(in_run.intersection(qrels_names))
    row_of = {q: i for i, q in enumerate(qids)}
    run_row = np.array([row_of.get(q, -1) for q in run_names], dtype=np.int64)
    qrels_row = np.array([row_of.get(q, -1) for q in qrels_names], dtype=np.int64)
    to_run_code = {q: i for i, q in enumerate(run_names)}
    qrels_run_code = np.array([to_run_code.get(q, -1) for q in qrels_names], dtype=np.int64)
    n = len(qids)

    score = _f32(run.score) if float32_scores else run.score
    counts = np.diff(bounds)
    length = np.zeros(n, dtype=np.int64)
    evaluated = run_row >= 0
    length[run_row[evaluated]] = counts[evaluated]
    width = int(length.max()) if n else 0

    neg = _neg_scores(score, r_codes, bounds, run_row, n, width)
    grades = np.where(np.arange(width)[None, :] < length[:, None], UNJUDGED, PAD)
    a, b = _judged_pairs(qrels, run, q_codes, qrels_run_code)
    if len(a):
        rows = run_row[r_codes[a]]
        pos = _positions(neg, rows, -score[a], a, run, score, r_codes, bounds)
        grades[rows, pos] = qrels.grade[b]

    ideal = _ideal(qrels.grade, qrels_row[q_codes], n)
    return qids, Ranked(grades, length, ideal)


def _neg_scores(score: np.ndarray, r_codes: np.ndarray, bounds: np.ndarray,
                run_row: np.ndarray, n: int, width: int) -> np.ndarray:
    """(n, width) negated scores, each row sorted ascending (scores descending), inf-padded."""
    counts = np.diff(bounds)
    present = np.flatnonzero(run_row >= 0)  # run codes that are evaluated
    if len(counts) and np.all(counts == width):  # a fixed depth: whole rows at once
        neg = np.full((n, width), np.inf)
        neg[run_row[present]] = -score.reshape(len(counts), width)[present]
    else:
        neg = np.full((n, width), np.inf)
        row = run_row[r_codes]
        col = np.arange(len(score), dtype=np.int64) - bounds[:-1][r_codes]
        keep = row >= 0
        neg[row[keep], col[keep]] = -score[keep]
    neg.sort(axis=1)
    return neg


def _judged_pairs(qrels: Qrels, run: Run, q_codes: np.ndarray,
                  qrels_run_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(run row, qrels row) of every retrieved and judged document."""
    mapped = qrels_run_code[q_codes]
    sel = np.flatnonzero(mapped >= 0)
    nwords = columns.words(run.docid_bytes())
    a, b = run.key_index().lookup(mapped[sel], qrels.docid_bytes()[sel],
                                  qrels.doc_hash(nwords)[sel])
    return a, sel[b]


def _positions(neg: np.ndarray, rows: np.ndarray, keys: np.ndarray, run_rows: np.ndarray,
               run: Run, score: np.ndarray, r_codes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """0-based rank of each judged document in its query's ranking."""
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    ends = np.r_[starts[1:], len(order)]
    pos = np.empty(len(rows), dtype=np.int64)
    for s, e, r in zip(starts.tolist(), ends.tolist(), sorted_rows[starts].tolist(), strict=True):
        at = order[s:e]
        pos[at] = neg[r].searchsorted(keys[at])
    width = neg.shape[1]
    after = np.minimum(pos + 1, width - 1)
    tied = (pos + 1 < width) & (neg[rows, after] == keys)  # another document, same score
    if tied.any():  # equal scores: the documents with a greater docid (bytes) come first
        docs = run.docid_bytes()
        for i in np.flatnonzero(tied).tolist():
            k = int(run_rows[i])
            c = int(r_codes[k])
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            same = score[lo:hi] == score[k]
            pos[i] += int(np.count_nonzero(docs[lo:hi][same] > docs[k]))
    return pos


def _ideal(grade: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    """Each evaluated query's judged grades, descending, PAD-padded."""
    keep = np.flatnonzero(row >= 0)
    r, g = row[keep], grade[keep]
    order = np.lexsort((-g, r))
    r, g = r[order], g[order]
    counts = np.bincount(r, minlength=n) if len(r) else np.zeros(n, dtype=np.int64)
    depth = int(counts.max()) if n else 0
    ideal = np.full((n, depth), PAD, dtype=np.int64)
    first = np.r_[0, np.cumsum(counts)[:-1]] if n else np.zeros(0, dtype=np.int64)
    ideal[r, np.arange(len(r)) - first[r]] = g
    return ideal
