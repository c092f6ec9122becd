"""Build the (queries x depth) matrices every kernel reads, from dicts or from columns.

Only judged documents need a place: each one's rank is the number of documents of its query
scoring higher, plus the documents of its tie (equal score) whose docid is greater in byte
order (trec_eval's order), counted by ``metrics.ties.tie_break`` for both inputs. Unjudged documents are counted, not placed. Two inputs, one
method, the same matrices (tested):

- ``{qid: {docid: score}}`` dicts: each query's judged documents are looked up in its run dict
  with C-level ``map``s (``_read_scores``);
- ``Run`` / ``Qrels`` columns (large files): (query, document) pairs are joined by 64-bit keys
  confirmed on the bytes (``reljudge.columns.KeyIndex``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from itertools import chain, repeat

import numpy as np

from reljudge import columns
from reljudge.choices import COMPAT, Compat
from reljudge.errors import InputError
from reljudge.metrics.kernels import PAD, UNJUDGED, Ranked
from reljudge.metrics.kernels import judged_only as condensed
from reljudge.metrics.ties import _tie_keys, tie_break, tie_spans  # noqa: F401 (_tie_keys: tests)
from reljudge.trec_data import Qrels, Run
from reljudge.values import int64_grades

QrelsLike = Qrels | Mapping[str, Mapping[str, int]]
RunLike = Run | Mapping[str, Mapping[str, float]]
#: documents of tied queries handled at a time: bounds the temporaries
TIE_CHUNK = 1 << 18
#: mean run length from which _read_scores reads a query at a time
PER_QUERY = 256
#: docid comparisons allowed per tie member before placing members by search
TIE_PAIRS = 2
#: threads breaking ties when the tied queries fill several chunks: the usable cores, at most
#: 4, each taking chunks of ``TIE_CHUNK // TIE_WORKERS`` documents (measured on 2 cores,
#: 10,000 x 1,000 heavy ties from dicts, one process: evaluate 2.93 -> 2.57 s, peak +22 MB)
TIE_WORKERS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                  else os.cpu_count() or 1)


def rank(qrels: QrelsLike, run: RunLike, *, all_queries: bool = False,
         float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """The Ranked matrices of the queries to evaluate, with their ids (sorted).

    The queries are the run's that have qrels, or with ``all_queries`` every qrels query (one
    the run lacks gets an empty ranking). ``float32_scores`` rounds scores to float32 first.
    Dicts with ids that are not str are converted (``reljudge.io.coerce``).
    """
    from reljudge.io.coerce import qrels_like, run_like

    return rank_clean(qrels_like(qrels), run_like(run), all_queries=all_queries,
                      float32_scores=float32_scores)


def rank_clean(qrels: QrelsLike, run: RunLike, *, all_queries: bool = False,
               float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """``rank`` for inputs already through ``reljudge.io.coerce`` (dicts with str ids)."""
    if isinstance(run, Run):
        as_qrels = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
        return rank_columns(as_qrels, run.compacted(), all_queries=all_queries,
                            float32_scores=float32_scores)
    qd = qrels.to_dict() if isinstance(qrels, Qrels) else qrels
    return rank_dicts(qd, run, all_queries=all_queries, float32_scores=float32_scores)


def float32_rounded(x: np.ndarray) -> np.ndarray:
    """Scores rounded to float32 (trec_eval's), as float64; beyond float32's range they become
    +-inf, as in trec_eval, without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(np.float64)


def refuse_non_finite(score: np.ndarray, query_of: Callable[[int], str]) -> None:
    """A nan score would sort anywhere and run files refuse inf: refuse both in memory too,
    naming the query of the first one."""
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"run score of query {query_of(i)!r} is {float(score[i])}; scores "
                         "must be finite numbers, as in run files")


def _unplaced(length: np.ndarray, width: int) -> np.ndarray:
    """The grades matrix before judged documents are placed: UNJUDGED within each ranking,
    PAD beyond its end."""
    if len(length) and (length == width).all():
        return np.full((len(length), width), UNJUDGED, dtype=np.int64)
    return np.where(np.arange(width)[None, :] < length[:, None], UNJUDGED, PAD)


def rank_dicts(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
               *, all_queries: bool = False, float32_scores: bool = False
               ) -> tuple[list[str], Ranked]:
    """``rank`` for the dict-of-dicts shape (pytrec_eval's and ranx's)."""
    ranked_queries = {str(q): docs for q, docs in run.items() if str(q) in qrels and len(docs)}
    qids = sorted(qrels) if all_queries else sorted(ranked_queries)
    n = len(qids)
    rows = np.array([i for i, q in enumerate(qids) if q in ranked_queries], dtype=np.int64)
    runs = [ranked_queries[qids[i]] for i in rows.tolist()]
    judged = [qrels[qids[i]] for i in rows.tolist()]

    counts = np.fromiter(map(len, runs), np.int64, len(runs))
    bounds = np.r_[0, np.cumsum(counts)]
    jcounts = np.fromiter(map(len, judged), np.int64, len(judged))
    total = int(jcounts.sum())
    score, jscore = _read_scores(runs, judged, counts, jcounts)
    refuse_non_finite(score, lambda i: qids[rows[np.searchsorted(bounds, i, "right") - 1]])
    if float32_scores:
        score = float32_rounded(score)
    length = np.zeros(n, dtype=np.int64)
    length[rows] = counts
    width = int(counts.max()) if len(counts) else 0
    neg = neg_scores(score, bounds, rows, n, width)

    jgrade = int64_grades(chain.from_iterable(j.values() for j in judged), total)
    jrow = np.repeat(np.arange(len(rows)), jcounts)
    hit = np.flatnonzero(~np.isnan(jscore))
    key = -(float32_rounded(jscore[hit]) if float32_scores else jscore[hit])
    r = rows[jrow[hit]]
    lo, hi = tie_spans(neg, r, key, length)
    tied = np.flatnonzero(hi - lo > 1)
    # docids are read only here, and only those of the queries with a tied judged document
    if len(tied):
        block_of_row = np.full(n, -1, dtype=np.int64)
        block_of_row[rows] = np.arange(len(rows))

        def docids(blocks: np.ndarray, flat: np.ndarray, take: np.ndarray) -> columns.Packed:
            data, starts, ends = columns.joined_utf8(
                chain.from_iterable(runs[b] for b in blocks.tolist()), len(flat))
            return columns.Packed(data, starts[take], ends[take])

        judged_docs = _judged_docids(judged, jcounts, jrow, hit[tied])
        lo[tied] += tie_break(score, bounds, block_of_row, r[tied], lo[tied], hi[tied],
                              docids, judged_docs, chunk=TIE_CHUNK, pairs=TIE_PAIRS,
                              workers=TIE_WORKERS, neg=neg)
    # freed before the grade matrix of the same size is made
    del neg
    grades = placed(r, lo, length, width, jgrade[hit])

    # every query evaluated is ranked: its judgments are read already
    if len(rows) == n:
        icounts, igrade = jcounts, jgrade
    else:
        icounts = np.fromiter((len(qrels[q]) for q in qids), np.int64, n)
        igrade = int64_grades(chain.from_iterable(qrels[q].values() for q in qids),
                              int(icounts.sum()))
    ideal = ideal_matrix(igrade, np.repeat(np.arange(n), icounts), n)
    return qids, Ranked(grades, length, ideal)


def _judged_docids(judged: list[Mapping[str, int]], jcounts: np.ndarray, jrow: np.ndarray,
                   at: np.ndarray) -> np.ndarray:
    """The docids at positions ``at`` of the judged dicts' keys, query after query (``jrow``:
    the query of each position), read from those queries' dicts only (a run with a few ties
    reads a few)."""
    block = jrow[at]
    affected, local = np.unique(block, return_inverse=True)
    sizes = jcounts[affected]
    docs = np.fromiter(chain.from_iterable(judged[b] for b in affected.tolist()), object,
                       int(sizes.sum()))
    first = np.cumsum(jcounts) - jcounts
    return docs[(np.cumsum(sizes) - sizes)[local.ravel()] + at - first[block]]


def _read_scores(runs: list[Mapping[str, float]], judged: list[Mapping[str, int]],
                 counts: np.ndarray, jcounts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every run score, query after query, and each judged document's score in its query's
    run (nan: not retrieved). Long runs (``PER_QUERY`` documents a query on average) are read
    a query at a time, its lookups right after its scores while its dict is still in cache
    (measured: a quarter less time on 10,000 x 1,000); many short ones in one chained pass,
    which spares the per-query calls. Both give the same arrays (tested)."""
    n, total = int(counts.sum()), int(jcounts.sum())
    if n < PER_QUERY * len(runs) or not len(runs):
        score = np.fromiter(chain.from_iterable(d.values() for d in runs), np.float64, n)
        jscore = np.fromiter(chain.from_iterable(map(d.get, j, repeat(np.nan))
                                                 for d, j in zip(runs, judged, strict=True)),
                             np.float64, total)
        return score, jscore
    score, jscore = np.empty(n), np.empty(total)
    at = j_at = 0
    for d, j, c, jc in zip(runs, judged, counts.tolist(), jcounts.tolist(), strict=True):
        score[at:at + c] = np.fromiter(d.values(), np.float64, c)
        jscore[j_at:j_at + jc] = np.fromiter(map(d.get, j, repeat(np.nan)), np.float64, jc)
        at, j_at = at + c, j_at + jc
    return score, jscore


def rank_columns(qrels: Qrels, run: Run, *, all_queries: bool = False,
                 float32_scores: bool = False) -> tuple[list[str], Ranked]:
    """``rank`` for a compact run (read from a large file, or ``Run.compacted``)."""
    r_uniq, r_codes = run.query_codes()
    bounds = run.query_bounds()
    assert bounds is not None
    q_uniq, q_codes = qrels.query_codes()
    run_names = [u.decode() for u in r_uniq]
    qrels_names = [u.decode() for u in q_uniq]
    counts = np.diff(bounds)
    in_run = {q for q, c in zip(run_names, counts.tolist(), strict=True) if c}
    qids = sorted(qrels_names) if all_queries else sorted(in_run.intersection(qrels_names))
    row_of = {q: i for i, q in enumerate(qids)}
    run_row = np.array([row_of.get(q, -1) for q in run_names], dtype=np.int64)
    qrels_row = np.array([row_of.get(q, -1) for q in qrels_names], dtype=np.int64)
    to_run_code = {q: i for i, q in enumerate(run_names)}
    qrels_run_code = np.array([to_run_code.get(q, -1) for q in qrels_names], dtype=np.int64)
    n = len(qids)

    refuse_non_finite(run.score, lambda i: run_names[r_codes[i]])
    score = float32_rounded(run.score) if float32_scores else run.score
    evaluated, length, width, neg = evaluated_rows(score, bounds, run_row, n)
    a, b = _judged_pairs(qrels, run, q_codes, qrels_run_code)
    rows = run_row[r_codes[a]]
    lo, hi = tie_spans(neg, rows, -score[a], length)
    break_ties(score, bounds, run_row, evaluated, run.docid_bytes(), a, rows, lo, hi, length,
               neg)
    # freed before the grade matrix of the same size is made
    del neg
    grades = placed(rows, lo, length, width, qrels.grade[b])

    ideal = ideal_matrix(qrels.grade, qrels_row[q_codes], n)
    return qids, Ranked(grades, length, ideal)


def break_ties(score: np.ndarray, bounds: np.ndarray, row_of_block: np.ndarray,
               evaluated: np.ndarray, docs: np.ndarray, a: np.ndarray, rows: np.ndarray,
               lo: np.ndarray, hi: np.ndarray, length: np.ndarray, neg: np.ndarray) -> None:
    """Move each tied judged run row ``a`` (of ranking ``rows``, its tie ``lo``..``hi`` from
    ``tie_spans``) past the tied documents whose docid (``docs``: every run row's, as bytes)
    is greater: ``lo`` becomes its rank. ``score``, ``bounds``, ``row_of_block`` and
    ``evaluated`` as given to and returned by ``evaluated_rows``, as are ``length`` and the
    sorted ``neg``."""
    tied = np.flatnonzero(hi - lo > 1)
    if len(tied):
        block_of_row = np.full(len(length), -1, dtype=np.int64)
        block_of_row[row_of_block[evaluated]] = np.flatnonzero(evaluated)
        lo[tied] += tie_break(score, bounds, block_of_row, rows[tied], lo[tied], hi[tied],
                              lambda _blocks, flat, take: docs[flat[take]], docs[a[tied]],
                              chunk=TIE_CHUNK, pairs=TIE_PAIRS, workers=TIE_WORKERS, neg=neg)


def placed(rows: np.ndarray, lo: np.ndarray, length: np.ndarray, width: int,
           grade: np.ndarray) -> np.ndarray:
    """The grades matrix: each judged document's ``grade`` at rank ``lo`` of ranking
    ``rows`` (``break_ties``), UNJUDGED elsewhere within ``length``, PAD beyond."""
    grades = _unplaced(length, width)
    grades[rows, lo] = grade
    return grades


def evaluated_rows(score: np.ndarray, bounds: np.ndarray, row_of_block: np.ndarray, n: int
                   ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Which blocks of scores (``score[bounds[i]:bounds[i+1]]``) are evaluated (their row
    ``row_of_block[i]`` >= 0), each row's length, the longest, and the rows' negated scores
    sorted (``neg_scores``) from the evaluated blocks only."""
    counts = np.diff(bounds)
    evaluated = row_of_block >= 0
    length = np.zeros(n, dtype=np.int64)
    length[row_of_block[evaluated]] = counts[evaluated]
    width = int(length.max()) if n else 0
    if evaluated.all():
        return evaluated, length, width, neg_scores(score, bounds, row_of_block, n, width)
    present = np.flatnonzero(evaluated)
    neg = neg_scores(score[np.repeat(evaluated, counts)], np.r_[0, np.cumsum(counts[present])],
                     row_of_block[present], n, width)
    return evaluated, length, width, neg


def neg_scores(score: np.ndarray, bounds: np.ndarray, rows: np.ndarray, n: int,
               width: int) -> np.ndarray:
    """(n, width) negated scores, each row sorted ascending (scores descending), inf-padded.

    ``score[bounds[i]:bounds[i+1]]`` are the scores of the query on row ``rows[i]``.
    """
    counts = np.diff(bounds)
    if len(counts) == n and np.all(counts == width) and np.all(rows == np.arange(n)):
        neg = np.negative(score.reshape(n, width))
        neg.sort(axis=1)
        return neg
    neg = np.full((n, width), np.inf)
    if len(counts) and np.all(counts == width):
        neg[rows] = -score.reshape(len(counts), width)
    elif len(counts):
        row = np.repeat(rows, counts)
        col = np.arange(len(score), dtype=np.int64) - np.repeat(bounds[:-1], counts)
        neg[row, col] = -score
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


def ideal_matrix(grade: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    """Each evaluated query's judged grades, descending, PAD-padded (``row`` -1: not evaluated)."""
    keep = np.flatnonzero(row >= 0)
    r, g = row[keep], grade[keep]
    counts = np.bincount(r, minlength=n) if len(r) else np.zeros(n, dtype=np.int64)
    depth = int(counts.max()) if n else 0
    ideal = np.full((n, depth), PAD, dtype=np.int64)
    if len(r):
        # rows out of order (a file's): group them
        if (r[1:] < r[:-1]).any():
            order = np.argsort(r, kind="stable")
            r, g = r[order], g[order]
        first = np.r_[0, np.cumsum(counts)[:-1]]
        ideal[r, np.arange(len(r)) - first[r]] = g
        # PAD (the minimum) ends up last
        ideal = np.sort(ideal, axis=1)[:, ::-1].copy()
    return ideal


def check_inputs(qrels: QrelsLike, run: RunLike, name: str,
                 qrels_q: list[str] | None = None) -> None:
    """Empty qrels, an empty run or no query in common are mistakes, not a mean of 0.0
    (``qrels_q``: the qrels' query ids, when known already)."""
    if qrels_q is None:
        qrels_q = qrels_queries(qrels)
    run_q = run.query_ids() if isinstance(run, Run) else [q for q, d in run.items() if d]
    if not qrels_q:
        raise InputError("the qrels are empty: there is nothing to evaluate against")
    if not run_q:
        raise InputError(f"run {name!r} is empty: it has no scored document")
    if set(run_q).isdisjoint(qrels_q):
        raise InputError(f"run {name!r} and the qrels have no query in common (run queries "
                         f"e.g. {run_q[:3]}, qrels queries e.g. {qrels_q[:3]})")


def qrels_queries(qrels: QrelsLike) -> list[str]:
    """The ids of the queries with judgments."""
    return qrels.query_ids() if isinstance(qrels, Qrels) else [q for q, d in qrels.items() if d]


def rankings(qrels: QrelsLike, run: RunLike, *, all_queries: bool = False,
             float32_scores: bool | None = None, compat: Compat = "trec_eval-10",
             max_docs: int | None = None, judged_only: bool = False
             ) -> tuple[str, list[str], Ranked]:
    """What ``evaluate`` scores, under the same options: the run's name, the queries and
    their ``Ranked`` matrices (first ``max_docs`` documents, condensed with
    ``judged_only``)."""
    float32_scores = checked_options(compat, max_docs, float32_scores)
    from reljudge.io import coerce

    qrels, run = coerce.qrels_like(qrels), coerce.run_like(run)
    name = run.name if isinstance(run, Run) else "run"
    check_inputs(qrels, run, name)
    qids, ranked = rank_clean(qrels, run, all_queries=all_queries,
                              float32_scores=float32_scores)
    return name, qids, trimmed(ranked, max_docs, judged_only)


def checked_options(compat: Compat, max_docs: int | None, float32_scores: bool | None) -> bool:
    """``rankings``' options checked (an InputError names a bad one); whether scores are
    rounded to float32 (``float32_scores``, by default as ``compat`` says)."""
    if compat not in COMPAT:
        raise InputError(f"unknown compat {compat!r}; expected one of {', '.join(COMPAT)}")
    if max_docs is not None and (type(max_docs) is not int or max_docs < 1):
        raise InputError(f"max_docs must be a whole number >= 1, found {max_docs!r}")
    return compat == "trec_eval-9" if float32_scores is None else float32_scores


def trimmed(ranked: Ranked, max_docs: int | None, judged_only: bool) -> Ranked:
    """The rankings cut to their first ``max_docs`` documents (trec_eval -M) and, with
    ``judged_only``, without their unjudged documents (trec_eval -J)."""
    if max_docs is not None and ranked.grades.shape[1] > max_docs:
        ranked = Ranked(ranked.grades[:, :max_docs], np.minimum(ranked.length, max_docs),
                        ranked.ideal)
    if judged_only:
        ranked = condensed(ranked)
    return ranked
