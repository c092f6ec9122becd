"""Build the (queries x depth) matrices every kernel reads, from dicts or from columns.

Only judged documents need a place: each one's rank is the number of documents of its query
scoring higher (a binary search in the query's sorted scores), plus the documents of its tie
(equal score) whose docid is greater in byte order (trec_eval's order). Ties are broken by one
routine for both inputs, ``tie_break``, never a Python loop over tied documents: docids become
integer words (``reljudge.columns.order_words``); every tie member gets one uint64 key (its tie
in the high bits, then the leading docid bits that vary within the tie); one ``np.sort`` of
the member keys and a ``searchsorted`` of each judged document's key count the members after
it, and the full words are compared only where a key is shared. No string is sorted, and the
queries holding ties are handled a chunk at a time (``TIE_CHUNK``) so that memory stays
bounded. Unjudged documents are counted, not placed. Two inputs, one method, the same
matrices (tested):

- ``{qid: {docid: score}}`` dicts: each query's judged documents are looked up in its run dict
  with C-level ``map``s, a query at a time right after its scores for long runs (the dict is
  still in cache), chained over all queries for short ones (one numpy conversion per column,
  not one per query);
- ``Run`` / ``Qrels`` columns (large files): (query, document) pairs are joined by 64-bit keys
  confirmed on the bytes (``reljudge.columns.KeyIndex``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain, repeat

import numpy as np

from reljudge import columns
from reljudge.errors import InputError
from reljudge.metrics.kernels import PAD, UNJUDGED, Ranked
from reljudge.types import Qrels, Run

QrelsLike = Qrels | Mapping[str, Mapping[str, int]]
RunLike = Run | Mapping[str, Mapping[str, float]]
TIE_CHUNK = 1 << 19  # documents of tied queries handled at a time: bounds the temporaries
PER_QUERY = 256  # mean run length from which _read_scores reads a query at a time
TIE_PAIRS = 2  # docid comparisons allowed per tie member before placing members by search


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


def _f32(x: np.ndarray) -> np.ndarray:
    """Scores rounded to float32 (trec_eval's), as float64; beyond float32's range they become
    +-inf, as in trec_eval, without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(np.float64)


def _no_nan(score: np.ndarray, query_of: Callable[[int], str]) -> None:
    """A nan score would sort anywhere: refuse it, naming the query of the first one."""
    if np.isnan(score).any():
        q = query_of(int(np.flatnonzero(np.isnan(score))[0]))
        raise InputError(f"run score of query {q!r} is nan; scores must be numbers")


def _unplaced(length: np.ndarray, width: int) -> np.ndarray:
    """The grades matrix before judged documents are placed: UNJUDGED within each ranking,
    PAD beyond its end."""
    if len(length) and (length == width).all():  # a fixed depth: no padding
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
    _no_nan(score, lambda i: qids[rows[np.searchsorted(bounds, i, "right") - 1]])
    if float32_scores:
        score = _f32(score)
    length = np.zeros(n, dtype=np.int64)
    length[rows] = counts
    width = int(counts.max()) if len(counts) else 0
    neg = neg_scores(score, bounds, rows, n, width)

    jgrade = np.fromiter(chain.from_iterable(j.values() for j in judged), np.int64, total)
    jrow = np.repeat(np.arange(len(rows)), jcounts)
    hit = np.flatnonzero(~np.isnan(jscore))
    key = -(_f32(jscore[hit]) if float32_scores else jscore[hit])
    r = rows[jrow[hit]]
    lo, hi = tie_spans(neg, r, key, length)
    del neg
    tied = np.flatnonzero(hi - lo > 1)
    if len(tied):  # docids only now, and only those of the queries with a tied judged document
        block_of_row = np.full(n, -1, dtype=np.int64)
        block_of_row[rows] = np.arange(len(rows))

        def docids(blocks: np.ndarray, flat: np.ndarray, take: np.ndarray) -> np.ndarray:
            data, starts, ends = columns.joined_utf8(
                chain.from_iterable(runs[b] for b in blocks.tolist()), len(flat))
            return columns.take_strings(data, starts[take], ends[take])

        judged_docs = np.fromiter(chain.from_iterable(judged), object, total)[hit[tied]]
        lo[tied] += tie_break(score, bounds, block_of_row, r[tied], lo[tied], hi[tied],
                              docids, judged_docs)
    grades = _unplaced(length, width)
    grades[r, lo] = jgrade[hit]

    if len(rows) == n:  # every query evaluated is ranked: its judgments are read already
        icounts, igrade = jcounts, jgrade
    else:
        icounts = np.fromiter((len(qrels[q]) for q in qids), np.int64, n)
        igrade = np.fromiter(chain.from_iterable(qrels[q].values() for q in qids), np.int64,
                             int(icounts.sum()))
    ideal = ideal_matrix(igrade, np.repeat(np.arange(n), icounts), n)
    return qids, Ranked(grades, length, ideal)


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

    score = _f32(run.score) if float32_scores else run.score
    _no_nan(score, lambda i: run_names[r_codes[i]])
    length = np.zeros(n, dtype=np.int64)
    evaluated = run_row >= 0
    length[run_row[evaluated]] = counts[evaluated]
    width = int(length.max()) if n else 0

    if evaluated.all():
        neg = neg_scores(score, bounds, run_row, n, width)
    else:  # only the evaluated queries' scores
        present = np.flatnonzero(evaluated)
        neg = neg_scores(score[np.repeat(evaluated, counts)],
                         np.r_[0, np.cumsum(counts[present])], run_row[present], n, width)
    a, b = _judged_pairs(qrels, run, q_codes, qrels_run_code)
    rows = run_row[r_codes[a]]
    lo, hi = tie_spans(neg, rows, -score[a], length)
    del neg  # before the grade matrix of the same size is made
    tied = np.flatnonzero(hi - lo > 1)
    if len(tied):
        block_of_row = np.full(n, -1, dtype=np.int64)
        block_of_row[run_row[evaluated]] = np.flatnonzero(evaluated)
        docs = run.docid_bytes()
        lo[tied] += tie_break(score, bounds, block_of_row, rows[tied], lo[tied], hi[tied],
                              lambda _blocks, flat, take: docs[flat[take]], docs[a[tied]])
    grades = _unplaced(length, width)
    grades[rows, lo] = qrels.grade[b]

    ideal = ideal_matrix(qrels.grade, qrels_row[q_codes], n)
    return qids, Ranked(grades, length, ideal)


def neg_scores(score: np.ndarray, bounds: np.ndarray, rows: np.ndarray, n: int,
               width: int) -> np.ndarray:
    """(n, width) negated scores, each row sorted ascending (scores descending), inf-padded.

    ``score[bounds[i]:bounds[i+1]]`` are the scores of the query on row ``rows[i]``.
    """
    counts = np.diff(bounds)
    if len(counts) == n and np.all(counts == width) and np.all(rows == np.arange(n)):
        neg = np.negative(score.reshape(n, width))  # every row in order, a fixed depth
        neg.sort(axis=1)
        return neg
    neg = np.full((n, width), np.inf)
    if len(counts) and np.all(counts == width):  # a fixed depth: whole rows at once
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


def tie_spans(neg: np.ndarray, rows: np.ndarray, keys: np.ndarray,
              length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each judged document (negated score ``keys[i]``, on row ``rows[i]``): the first and
    one-past-last 0-based rank of the documents of its query with its score (``hi - lo`` is the
    size of its tie; ``lo`` alone its rank when it is not tied)."""
    lo = np.empty(len(rows), dtype=np.int64)
    hi = np.empty(len(rows), dtype=np.int64)
    if not len(rows):
        return lo, hi
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    ends = np.r_[starts[1:], len(order)]
    for s, e, r in zip(starts.tolist(), ends.tolist(), sorted_rows[starts].tolist(), strict=True):
        at = order[s:e]  # one binary search per query, not per document
        lo[at] = neg[r].searchsorted(keys[at], "left")
    # a document is alone with its score unless the next one has it too (neg[r, lo] is its own)
    nxt = np.minimum(lo + 1, neg.shape[1] - 1)
    shared = (lo + 1 < length[rows]) & (neg[rows, nxt] == keys)
    hi[:] = lo + 1
    if shared.any():
        sel = order[shared[order]]  # the tied ones, still grouped by row
        sel_rows = rows[sel]
        cut = np.flatnonzero(np.r_[True, sel_rows[1:] != sel_rows[:-1], True])
        for s, e in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True):
            at = sel[s:e]
            hi[at] = neg[int(sel_rows[s])].searchsorted(keys[at], "right")
    np.minimum(hi, length[rows], out=hi)  # padding is +inf: a score of -inf must not reach it
    return lo, hi


def tie_break(score: np.ndarray, bounds: np.ndarray, block_of_row: np.ndarray,
              rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              docids: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
              judged_docs: np.ndarray) -> np.ndarray:
    """For each tied judged document, how many documents of its tie have a greater docid.

    The tie of judged document i is the ranks ``lo[i]:hi[i]`` (by score descending) of the
    query on row ``rows[i]``, whose scores are ``score[bounds[b]:bounds[b+1]]`` for
    ``b = block_of_row[row]``; ``judged_docs[i]`` is its own docid, and
    ``docids(blocks, flat, take)`` gives the docids at the indices ``flat[take]`` into
    ``score``, where ``flat`` covers exactly ``blocks`` in order. Docids compare in byte order
    (``bytes``, or ``str`` by their UTF-8). Only the queries holding a tie are visited, a
    chunk of them at a time (``TIE_CHUNK`` documents) so that temporaries stay small.
    """
    out = np.empty(len(rows), dtype=np.int64)
    affected, local_row = np.unique(rows, return_inverse=True)
    local_row = local_row.ravel()
    blocks = block_of_row[affected]
    sizes = bounds[blocks + 1] - bounds[blocks]
    chunk = (np.cumsum(sizes) - sizes) // TIE_CHUNK  # a query wider than a chunk is one
    edges = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1], True])
    by_row = np.argsort(local_row, kind="stable")
    row_edges = np.searchsorted(local_row[by_row], edges)
    for a, b, ja, jb in zip(edges[:-1].tolist(), edges[1:].tolist(), row_edges[:-1].tolist(),
                            row_edges[1:].tolist(), strict=True):
        at = by_row[ja:jb]
        out[at] = _greater_in_tie(score, bounds, blocks[a:b], local_row[at] - a, lo[at],
                                  hi[at], docids, judged_docs[at])
    return out


def _greater_in_tie(score: np.ndarray, bounds: np.ndarray, blocks: np.ndarray,
                    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    docids: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                    judged_docs: np.ndarray) -> np.ndarray:
    """``tie_break`` for the queries ``blocks`` (``rows`` index them): the members of each
    tie found in the chunk's rows sorted by score, their docids as words, then counted with
    ``_greater_by_sort`` (or ``_greater_by_search`` when keys collide a lot)."""
    counts = bounds[blocks + 1] - bounds[blocks]
    starts = np.cumsum(counts) - counts
    width = int(counts.max())
    if (np.diff(blocks) == 1).all():  # consecutive queries: one slice of the scores
        flat = np.arange(bounds[blocks[0]], bounds[blocks[-1] + 1])
    else:
        flat = np.arange(int(counts.sum())) + np.repeat(bounds[blocks] - starts, counts)
    if (counts == width).all():  # a fixed depth: whole rows at once
        neg = -score[flat].reshape(len(blocks), width)
    else:
        neg = np.full((len(blocks), width), np.nan)  # nan sorts after every score, inf too
        at = np.arange(len(flat)) + np.repeat(np.arange(len(blocks)) * width - starts, counts)
        neg.ravel()[at] = -score[flat]
        del at
    order = np.argsort(neg, axis=1)  # ties in any order: only their extent matters
    del neg

    cell, tie = np.unique(rows * width + lo, return_inverse=True)
    tie = tie.ravel()
    n_ties = len(cell)
    t_len = np.zeros(n_ties, dtype=np.int64)
    t_len[tie] = hi - lo
    m_tie = np.repeat(np.arange(n_ties), t_len)
    # member k of tie t is at rank cell[t] + k of the chunk's (row-major) rank matrix
    members = order.ravel()[np.arange(len(m_tie)) + np.repeat(cell - (np.cumsum(t_len) - t_len),
                                                               t_len)]
    members += np.repeat(starts[cell // width], t_len)  # column in its row -> index in flat
    del order
    m_words, j_words = columns.order_words(columns.utf8(docids(blocks, flat, members)),
                                           columns.utf8(judged_docs))
    del members, flat

    # the judged documents sorted by (tie, docid)
    by = np.lexsort((*reversed(j_words), tie))
    j_words = [w[by] for w in j_words]
    j_tie = tie[by]
    m_key, j_key = _tie_keys(m_words, j_words, m_tie, j_tie, n_ties)
    greater = _greater_by_sort(m_key, j_key, m_words, j_words, j_tie, t_len)
    if greater is None:  # keys collide a lot: place every member by a search instead
        greater = _greater_by_search(m_key, j_key, m_words, j_words, m_tie, j_tie, n_ties)
    out = np.empty(len(tie), dtype=np.int64)
    out[by] = greater
    return out


def _greater_by_sort(m_key: np.ndarray, j_key: np.ndarray, m_words: list[np.ndarray],
                     j_words: list[np.ndarray], j_tie: np.ndarray,
                     t_len: np.ndarray) -> np.ndarray | None:
    """For each judged document (keys sorted, ``_tie_keys``), the members of its tie with a
    greater docid: those with a greater key, counted in the sorted member keys (one
    ``np.sort``, no member identity kept), plus those with an equal key and a greater docid
    (compared in full). None when equal keys would make more than ``TIE_PAIRS`` x members
    pairs to compare."""
    m_end = np.cumsum(t_len)  # tie t's keys end there once sorted (the tie is the high bits)
    m_sorted = np.sort(m_key)
    left = np.searchsorted(m_sorted, j_key, "left")
    right = np.searchsorted(m_sorted, j_key, "right")
    greater = m_end[j_tie] - right
    shared = np.flatnonzero(right - left > 1)  # another member has the judged one's key
    if not len(shared):
        return greater
    if int((right - left)[shared].sum()) > TIE_PAIRS * len(m_key):
        return None
    ties = np.unique(j_tie[shared])
    size = t_len[ties]
    cand = np.arange(int(size.sum())) + np.repeat(m_end[ties] - size - (np.cumsum(size) - size),
                                                  size)  # the members of those ties
    keys = np.unique(j_key[shared])
    at = np.minimum(np.searchsorted(keys, m_key[cand]), len(keys) - 1)
    cand = cand[keys[at] == m_key[cand]]
    cand = cand[np.argsort(m_key[cand], kind="stable")]
    a = np.searchsorted(m_key[cand], j_key[shared], "left")
    n = np.searchsorted(m_key[cand], j_key[shared], "right") - a
    j_at = np.repeat(shared, n)
    m_at = cand[np.arange(int(n.sum())) + np.repeat(a - (np.cumsum(n) - n), n)]
    more = _less(j_words, j_at, m_words, m_at)
    greater += np.bincount(j_at[more], minlength=len(greater))
    return greater


def _greater_by_search(m_key: np.ndarray, j_key: np.ndarray, m_words: list[np.ndarray],
                       j_words: list[np.ndarray], m_tie: np.ndarray, j_tie: np.ndarray,
                       n_ties: int) -> np.ndarray:
    """``_greater_by_sort`` by placing each member among its tie's judged documents (how
    many are smaller): a search of the keys, then a binary search on the full docids where
    keys are equal, and a count of members per place."""
    place = np.searchsorted(j_key, m_key, "left")
    inside = np.flatnonzero(place < len(j_key))
    live = inside[j_key[place[inside]] == m_key[inside]]
    end = np.searchsorted(j_key, m_key[live], "right")
    while len(live):
        a, b = place[live], end
        mid = (a + b) >> 1
        smaller = _less(j_words, mid, m_words, live)
        a = np.where(smaller, mid + 1, a)
        b = np.where(smaller, b, mid)
        place[live] = a
        live, end = live[a < b], b[a < b]
    # place p of tie t is slot p + t (a tie with k judged documents has k + 1 places)
    per_slot = np.cumsum(np.bincount(place + m_tie, minlength=len(j_key) + n_ties))
    t_end = np.cumsum(np.bincount(j_tie, minlength=n_ties))
    return per_slot[t_end[j_tie] + j_tie] - per_slot[np.arange(len(j_key)) + j_tie]


def _tie_keys(m_words: list[np.ndarray], j_words: list[np.ndarray], m_tie: np.ndarray,
              j_tie: np.ndarray, n_ties: int) -> tuple[np.ndarray, np.ndarray]:
    """One uint64 per member and per judged document: its tie in the high bits, then the
    leading docid bits that differ within the tie (the bits all its members share, e.g. a
    query's common docid prefix, are skipped; low bits cut). Keys compare as (tie, docid) do,
    except that equal keys may hold different docids.

    ``m_tie`` is sorted and every tie has members, the judged documents among them."""
    tie_bits = max(1, (n_ties - 1).bit_length())
    if m_words:
        first = np.flatnonzero(np.r_[True, m_tie[1:] != m_tie[:-1]])
        w0 = m_words[0]
        differ = np.minimum.reduceat(w0, first) ^ np.maximum.reduceat(w0, first)
        # leading bits shared in the tie; float rounding can only make it one too small
        shared = 64 - np.frexp(differ.astype(np.float64))[1].astype(np.int64)
    keys = []
    for words, tie in ((m_words, m_tie), (j_words, j_tie)):
        key = tie.astype(np.uint64) << np.uint64(64 - tie_bits)
        if words:
            skip = shared[tie]
            nxt = words[1] if len(words) > 1 else np.zeros_like(words[0])
            shift = np.minimum(skip, 63).astype(np.uint64)
            lead = (words[0] << shift) | ((nxt >> (np.uint64(63) - shift)) >> np.uint64(1))
            lead = np.where(skip == 64, nxt, lead)  # one first word for the whole tie
            key |= lead >> np.uint64(tie_bits)
        keys.append(key)
    return keys[0], keys[1]


def _less(a_words: list[np.ndarray], a_at: np.ndarray, b_words: list[np.ndarray],
          b_at: np.ndarray) -> np.ndarray:
    """Whether string ``a_at[i]`` of ``a_words`` sorts before string ``b_at[i]`` of
    ``b_words`` (word columns from ``columns.order_words``)."""
    less = np.zeros(len(a_at), dtype=bool)
    undecided = np.arange(len(a_at))
    for a, b in zip(a_words, b_words, strict=True):
        x, y = a[a_at[undecided]], b[b_at[undecided]]
        less[undecided] = x < y
        undecided = undecided[x == y]
        if not len(undecided):
            break
    return less


def ideal_matrix(grade: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    """Each evaluated query's judged grades, descending, PAD-padded (``row`` -1: not evaluated)."""
    keep = np.flatnonzero(row >= 0)
    r, g = row[keep], grade[keep]
    counts = np.bincount(r, minlength=n) if len(r) else np.zeros(n, dtype=np.int64)
    depth = int(counts.max()) if n else 0
    ideal = np.full((n, depth), PAD, dtype=np.int64)
    if len(r):
        if (r[1:] < r[:-1]).any():  # rows out of order (a file's): group them
            order = np.argsort(r, kind="stable")
            r, g = r[order], g[order]
        first = np.r_[0, np.cumsum(counts)[:-1]]
        ideal[r, np.arange(len(r)) - first[r]] = g
        ideal = np.sort(ideal, axis=1)[:, ::-1].copy()  # PAD (the minimum) ends up last
    return ideal
