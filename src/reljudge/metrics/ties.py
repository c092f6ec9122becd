"""Breaking ties as trec_eval does: documents of equal score rank by docid, greater first (byte
order), counted for every judged document without a Python loop over tied documents.

Docids become integer words (``reljudge.columns.order_words``). Where the keys hold enough
docid bits, every document of a chunk of queries gets one uint64 key (its query, the leading
bits of its score, then the docid bits after its query's common prefix: ``_greater_by_keys``,
no argsort of the scores); otherwise the chunk's scores are argsorted and every tie member
gets one (its tie in the high bits, then the leading docid bits that vary within the tie).
Either way one ``np.sort`` of the keys and a ``searchsorted`` of each judged document's key
count the documents after it, and the full words are compared only where a key is shared.
No string is sorted. ``metrics.ranking`` calls ``tie_spans`` and ``tie_break`` for both of its inputs
(dicts and columns), with its chunk and comparison limits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

import numpy as np

from reljudge import columns

#: ``docids(blocks, flat, take)``: the docids at the indices ``flat[take]`` into the scores, as an
#: array (``S``, or str) or as ``columns.Packed`` slices of one buffer
Docids = Callable[[np.ndarray, np.ndarray, np.ndarray], "np.ndarray | columns.Packed"]


def tie_spans(neg: np.ndarray, rows: np.ndarray, keys: np.ndarray,
              length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each judged document (negated score ``keys[i]``, on row ``rows[i]``): the first and
    one-past-last 0-based rank of the documents of its query with its score (``hi - lo`` is the
    size of its tie; ``lo`` alone its rank when it is not tied)."""
    lo = np.empty(len(rows), dtype=np.int64)
    if not len(rows):
        return lo, lo.copy()
    order = np.argsort(rows, kind="stable")
    lo[order] = _row_search(neg, rows[order], keys[order], "left")
    # a document is alone with its score unless the next one has it too (neg[r, lo] is its own)
    nxt = np.minimum(lo + 1, neg.shape[1] - 1)
    shared = (lo + 1 < length[rows]) & (neg[rows, nxt] == keys)
    hi = lo + 1
    if shared.any():
        sel = order[shared[order]]
        hi[sel] = _row_search(neg, rows[sel], keys[sel], "right")
    # padding is +inf: a score of -inf must not reach it
    np.minimum(hi, length[rows], out=hi)
    return lo, hi


#: cells of ``neg`` searched at a time by ``_row_search``
SEARCH_CELLS = 1 << 18
#: keys a row on average from which ``_row_search`` searches each row on its own
ROW_KEYS = 16


def _row_search(neg: np.ndarray, rows: np.ndarray, keys: np.ndarray,
                side: Literal["left", "right"]) -> np.ndarray:
    """``neg[rows[i]].searchsorted(keys[i], side)`` for each i (``rows`` ascending).

    Rows holding many keys (``ROW_KEYS`` on average) are searched one at a time (a call per
    row; measured: half the time of the blocks on 10,000 rows of 1,000 with 50 keys each);
    otherwise in blocks of rows: each block's cells and the keys as complex numbers
    (row + 1j x value), whose order is lexicographic, so one search of the flattened block
    serves all its rows (no call per row: many short rows with a key or two). Both give the
    same answer (tested)."""
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    if len(rows) >= ROW_KEYS * len(starts):
        out = np.empty(len(rows), dtype=np.int64)
        for r, a, b in zip(rows[starts].tolist(), starts.tolist(),
                           np.r_[starts[1:], len(rows)].tolist(), strict=True):
            out[a:b] = neg[r].searchsorted(keys[a:b], side)
        return out
    width = neg.shape[1]
    step = max(1, SEARCH_CELLS // max(width, 1))
    out = np.empty(len(rows), dtype=np.int64)
    cuts = np.searchsorted(rows, np.arange(0, int(rows[-1]) + step + 1, step))
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
        if a == b:
            continue
        first = int(rows[a]) // step * step
        block = neg[first:first + step]
        cells = np.empty(block.shape, dtype=np.complex128)
        cells.real = np.arange(len(block))[:, None]
        cells.imag = block
        local = rows[a:b] - first
        needles = np.empty(b - a, dtype=np.complex128)
        needles.real, needles.imag = local, keys[a:b]
        out[a:b] = cells.ravel().searchsorted(needles, side) - local * width
    return out


def tie_break(score: np.ndarray, bounds: np.ndarray, block_of_row: np.ndarray,
              rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              docids: Docids,
              judged_docs: np.ndarray, *, chunk: int, pairs: int,
              workers: int = 1, neg: np.ndarray | None = None) -> np.ndarray:
    """For each tied judged document, how many documents of its tie have a greater docid
    (in byte order: ``bytes``, or ``str`` by their UTF-8).

    The tie of judged document i (docid ``judged_docs[i]``) is the ranks ``lo[i]:hi[i]`` of
    the query on row ``rows[i]``, whose scores are ``score[bounds[b]:bounds[b+1]]`` for
    ``b = block_of_row[row]``; ``docids(blocks, flat, take)`` gives the docids at the indices
    ``flat[take]`` into ``score``, ``flat`` covering exactly ``blocks`` in order. The queries
    holding a tie are visited ``chunk`` documents at a time; ``pairs`` bounds the docid
    comparisons per tie member before members are placed by search. ``workers`` threads take
    chunks of ``chunk // workers`` documents (each writes only its own documents' counts).
    ``neg``, the rows' negated scores sorted (``tie_spans``' matrix), lets a chunk be counted
    by ``_greater_by_keys`` (no argsort); without it, or where its keys are too short, every
    chunk takes the argsort path.
    """
    out = np.empty(len(rows), dtype=np.int64)
    affected, local_row = np.unique(rows, return_inverse=True)
    local_row = local_row.ravel()
    blocks = block_of_row[affected]
    sizes = bounds[blocks + 1] - bounds[blocks]
    # about as many held at once as alone
    if workers > 1 and int(sizes.sum()) > chunk:
        chunk = max(1, chunk // workers)
    # a query wider than a chunk is one
    part = (np.cumsum(sizes) - sizes) // chunk
    edges = np.flatnonzero(np.r_[True, part[1:] != part[:-1], True])
    by_row = np.argsort(local_row, kind="stable")
    row_edges = np.searchsorted(local_row[by_row], edges)

    def one_chunk(span: tuple[int, int, int, int]) -> None:
        a, b, ja, jb = span
        at = by_row[ja:jb]
        out[at] = _greater_in_tie(score, bounds, blocks[a:b], local_row[at] - a, lo[at],
                                  hi[at], docids, judged_docs[at], pairs,
                                  None if neg is None else neg[affected[a:b]])

    spans = list(zip(edges[:-1].tolist(), edges[1:].tolist(), row_edges[:-1].tolist(),
                     row_edges[1:].tolist(), strict=True))
    if workers > 1 and len(spans) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(spans))) as pool:
            # a chunk's error (or Ctrl-C) cancels the rest
            for _ in pool.map(one_chunk, spans):
                pass
    else:
        for span in spans:
            one_chunk(span)
    return out


def _greater_in_tie(score: np.ndarray, bounds: np.ndarray, blocks: np.ndarray,
                    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    docids: Docids,
                    judged_docs: np.ndarray, pairs: int,
                    neg: np.ndarray | None = None) -> np.ndarray:
    """``tie_break`` for the queries ``blocks`` (``rows`` index them; ``neg``: their sorted
    negated scores, if known): by ``_greater_by_keys`` where it can; else the members of each
    tie found in the chunk's rows sorted by score, their docids as words, then counted with
    ``_greater_by_sort`` (or ``_greater_by_search`` when keys collide a lot)."""
    counts = bounds[blocks + 1] - bounds[blocks]
    starts = np.cumsum(counts) - counts
    width = int(counts.max())
    if (np.diff(blocks) == 1).all():
        flat = np.arange(bounds[blocks[0]], bounds[blocks[-1] + 1])
    else:
        flat = np.arange(int(counts.sum())) + np.repeat(bounds[blocks] - starts, counts)
    if neg is not None:
        counted = _greater_by_keys(score[flat], counts, starts, neg, rows, lo, hi,
                                   partial(docids, blocks, flat, np.arange(len(flat))),
                                   judged_docs, pairs)
        if counted is not None:
            return counted
    if (counts == width).all():
        neg = -score[flat].reshape(len(blocks), width)
    else:
        # nan sorts after every score, inf too
        neg = np.full((len(blocks), width), np.nan)
        at = np.arange(len(flat)) + np.repeat(np.arange(len(blocks)) * width - starts, counts)
        neg.ravel()[at] = -score[flat]
        del at
    # ties in any order: only their extent matters
    order = np.argsort(neg, axis=1)
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
    # column in its row -> index in flat
    members += np.repeat(starts[cell // width], t_len)
    del order
    m_words, j_words = columns.order_words(_as_words(docids(blocks, flat, members)),
                                           columns.utf8(judged_docs))
    del members, flat

    # the judged documents sorted by (tie, docid)
    by = np.lexsort((*reversed(j_words), tie))
    j_words = [w[by] for w in j_words]
    j_tie = tie[by]
    m_key, j_key = _tie_keys(m_words, j_words, m_tie, j_tie, n_ties)
    greater = _greater_by_sort(m_key, j_key, m_words, j_words, j_tie, t_len, pairs)
    # keys collide a lot: place every member by a search instead
    if greater is None:
        greater = _greater_by_search(m_key, j_key, m_words, j_words, m_tie, j_tie, n_ties)
    out = np.empty(len(tie), dtype=np.int64)
    out[by] = greater
    return out


#: the fewest docid bits a key of ``_greater_by_keys`` must hold (fewer: the argsort path)
KEY_DOC_BITS = 24
_SIGN = np.uint64(1 << 63)


def _greater_by_keys(score: np.ndarray, counts: np.ndarray, starts: np.ndarray,
                     neg: np.ndarray, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     docids: Callable[[], np.ndarray | columns.Packed],
                     judged_docs: np.ndarray, pairs: int) -> np.ndarray | None:
    """``tie_break`` for a chunk of queries without sorting their documents by score: every
    document gets one uint64 key, (its query, the leading bits of its score, the docid bits
    that follow its query's common prefix), and one ``np.sort`` of the keys puts them in
    (query, score descending, docid) order, so the documents of a tie after a judged one are
    those between its key and the tie's end (known from ``hi``).

    ``score``: the chunk's scores, query after query (``counts`` of them, from ``starts``);
    ``neg``: each query's negated scores sorted (tells how many leading bits keep its
    distinct scores apart, and gives each judged document's score at ``lo``). None when
    fewer than ``KEY_DOC_BITS`` bits are left for the docids, or equal keys would make more
    than ``pairs`` x documents pairs to compare."""
    ordered = _ordered_bits(neg)
    # leading bits that tell apart any two different scores of one query
    gap = ordered[:, 1:] ^ ordered[:, :-1]
    np.putmask(gap, gap == 0, np.uint64(0xFFFF_FFFF_FFFF_FFFF))
    score_bits = 65 - int(gap.min()).bit_length() if gap.size else 0
    del gap
    row_bits = (len(counts) - 1).bit_length()
    doc_bits = 64 - row_bits - score_bits
    if doc_bits < KEY_DOC_BITS:
        return None
    m_words, j_words = columns.order_words(_as_words(docids()), columns.utf8(judged_docs))
    keys = []
    if m_words:
        shared = _shared_bits(m_words[0], starts)
    for words, where, bits in ((m_words, np.repeat(np.arange(len(counts)), counts),
                                _ordered_bits(-score)),
                               (j_words, rows, ordered[rows, lo])):
        key = (bits >> np.uint64(64 - score_bits) << np.uint64(doc_bits) if score_bits
               else np.zeros(len(bits), dtype=np.uint64))
        if row_bits:
            key |= where.astype(np.uint64) << np.uint64(64 - row_bits)
        if words:
            key |= _lead(words, shared[where]) >> np.uint64(64 - doc_bits)
        keys.append(key)
    m_key, j_key = keys
    del keys, ordered
    left, right = _both_sides(np.sort(m_key), j_key)
    # a query's documents are its keys' place, sorted; its tie ends at hi
    greater = starts[rows] + hi - right
    # another document has the judged one's key (same query and score)
    shared_key = np.flatnonzero(right - left > 1)
    if not len(shared_key):
        return greater
    if int((right - left)[shared_key].sum()) > pairs * len(m_key):
        return None
    queries = np.unique(rows[shared_key])
    return _equal_keys_compared(greater, shared_key, _spans(starts[queries], counts[queries]),
                                m_key, j_key, m_words, j_words)


def _as_words(docs: np.ndarray | columns.Packed) -> np.ndarray | columns.Packed:
    """Docids as ``columns.order_words`` takes them (``Packed``, or ``S`` bytes)."""
    return docs if isinstance(docs, columns.Packed) else columns.utf8(docs)


def _ordered_bits(x: np.ndarray) -> np.ndarray:
    """Floats (no nan) as uint64 in the same order, equal floats equal (-0.0 is 0.0)."""
    bits = (x + 0.0).view(np.uint64)
    # negative: every bit flipped; else the sign bit set
    flip = bits >> np.uint64(63)
    np.negative(flip, out=flip)
    flip |= _SIGN
    bits ^= flip
    return bits


def _greater_by_sort(m_key: np.ndarray, j_key: np.ndarray, m_words: list[np.ndarray],
                     j_words: list[np.ndarray], j_tie: np.ndarray,
                     t_len: np.ndarray, pairs: int) -> np.ndarray | None:
    """For each judged document (keys sorted, ``_tie_keys``), the members of its tie with a
    greater docid: those with a greater key, counted in the sorted member keys (one
    ``np.sort``, no member identity kept), plus those with an equal key and a greater docid
    (compared in full). None when equal keys would make more than ``pairs`` x members
    pairs to compare."""
    # tie t's keys end there once sorted (the tie is the high bits)
    m_end = np.cumsum(t_len)
    left, right = _both_sides(np.sort(m_key), j_key)
    greater = m_end[j_tie] - right
    # another member has the judged one's key
    shared = np.flatnonzero(right - left > 1)
    if not len(shared):
        return greater
    if int((right - left)[shared].sum()) > pairs * len(m_key):
        return None
    ties = np.unique(j_tie[shared])
    # the members of those ties
    cand = _spans(m_end[ties] - t_len[ties], t_len[ties])
    return _equal_keys_compared(greater, shared, cand, m_key, j_key, m_words, j_words)


def _both_sides(haystack: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``haystack.searchsorted(keys)`` on the left and on the right, the keys searched in
    ascending order (numpy then narrows each search from the last: measured a third of the
    time for 13,000 keys in 263,000)."""
    by = np.argsort(keys)
    ascending = keys[by]
    left, right = np.empty_like(by), np.empty_like(by)
    left[by] = haystack.searchsorted(ascending, "left")
    right[by] = haystack.searchsorted(ascending, "right")
    return left, right


def _spans(first: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The indices ``first[i]:first[i] + size[i]`` of every i, one after another."""
    return np.arange(int(size.sum())) + np.repeat(first - (np.cumsum(size) - size), size)


def _equal_keys_compared(greater: np.ndarray, shared: np.ndarray, cand: np.ndarray,
                         m_key: np.ndarray, j_key: np.ndarray, m_words: list[np.ndarray],
                         j_words: list[np.ndarray]) -> np.ndarray:
    """``greater`` (members of a greater key, counted) plus, for the judged documents
    ``shared``, the members among ``cand`` with their key and a greater docid (compared in
    full)."""
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
        # leading bits shared in the tie
        shared = _shared_bits(m_words[0], np.flatnonzero(np.r_[True, m_tie[1:] != m_tie[:-1]]))
    keys = []
    for words, tie in ((m_words, m_tie), (j_words, j_tie)):
        key = tie.astype(np.uint64) << np.uint64(64 - tie_bits)
        if words:
            key |= _lead(words, shared[tie]) >> np.uint64(tie_bits)
        keys.append(key)
    return keys[0], keys[1]


def _shared_bits(w0: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For each group of strings (``first``: where each starts in their first words ``w0``),
    how many leading bits all its strings share (64: the whole first word); float rounding
    can only make it one too small."""
    differ = np.minimum.reduceat(w0, first) ^ np.maximum.reduceat(w0, first)
    return 64 - np.frexp(differ.astype(np.float64))[1].astype(np.int64)


def _lead(words: list[np.ndarray], skip: np.ndarray) -> np.ndarray:
    """The 64 bits of each string (word columns) that follow its first ``skip[i]`` bits."""
    nxt = words[1] if len(words) > 1 else np.zeros_like(words[0])
    shift = np.minimum(skip, 63).astype(np.uint64)
    lead = (words[0] << shift) | ((nxt >> (np.uint64(63) - shift)) >> np.uint64(1))
    # one first word for the whole group
    return np.where(skip == 64, nxt, lead)


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
