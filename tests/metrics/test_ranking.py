"""Ranking: tied scores broken by docid exactly as trec_eval does, on every path and chunking."""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge import columns
from reljudge.metrics import evaluate, ranking
from reljudge.metrics.kernels import PAD, UNJUDGED
from reljudge.trec_data import Qrels, Run

# docids that stress the docid order: empty, prefixes of each other, longer than one and two
# 8-byte words, non-ASCII (UTF-8 byte order is code point order), long shared prefixes (the
# leading bits of the search keys are then equal and the full docids decide)
PREFIXES = ["", "d", "a" * 7, "a" * 8, "msmarco_passage_00_", "\u00e9", "\u4e2d" * 3]
docid = st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES),
                  st.text(alphabet="0a\u00e9z\u4e2d", max_size=3))
qid = st.sampled_from(["q1", "q2", "q10", "q3"])
SCORES = {  # per workload: how a query's scores are drawn
    "heavy": st.integers(0, 3).map(lambda x: x / 4),
    "equal": st.just(0.5),
    "binary": st.sampled_from([0.0, 1.0]),
    "near": st.sampled_from([1.0, 1.0 + 1e-12, 1.0 - 1e-12]),  # distinct in float64 only
    # beyond float32's range: +-inf once rounded (run scores themselves must be finite)
    "extreme": st.sampled_from([-1e39, 1e39, -0.0, 0.0, 1e30]),
}


# built once: a strategy built inside a draw is built and validated again at every example
_SHAPE = st.sampled_from(sorted(SCORES))
_TIED_RUNS = {name: st.dictionaries(docid, shape, min_size=1, max_size=30)
              for name, shape in SCORES.items()}
_SOME_QUERIES = st.lists(qid, min_size=1, max_size=3, unique=True)
_JUDGED = st.dictionaries(docid, st.integers(-1, 3), min_size=1, max_size=10)


@st.composite
def tied(draw):
    """(qrels, run) dicts whose runs are full of ties."""
    shape = _TIED_RUNS[draw(_SHAPE)]
    qs = draw(_SOME_QUERIES)
    qrels = {q: draw(_JUDGED) for q in qs}
    run = {q: draw(shape) for q in draw(_SOME_QUERIES)}
    return qrels, run


def reference(qrels: dict, run: dict, all_queries: bool, float32: bool) -> tuple[list, list]:
    """Query ids and grade rows, from sorting each run in Python (trec_eval's order: score
    descending, then docid descending in byte order)."""
    qids = sorted(qrels) if all_queries else sorted(q for q in run if q in qrels and run[q])
    rows = []
    for q in qids:
        docs = run.get(q, {})
        with np.errstate(over="ignore"):  # the extreme scores: +-1e39 is +-inf as float32
            key = {d: (float(np.float32(s)) if float32 else s, d.encode())
                   for d, s in docs.items()}
        ranked = sorted(docs, key=key.__getitem__, reverse=True)
        rows.append([qrels[q].get(d, UNJUDGED) for d in ranked])
    return qids, rows


@contextmanager
def tie_chunk(documents: int, pairs: int | None = None, workers: int = 1):
    """Tie-breaking ``documents`` at a time (a chunk of 1: every query on its own) by
    ``workers`` threads; with ``pairs`` 0, members are placed by search as soon as two share a
    key."""
    saved = ranking.TIE_CHUNK, ranking.TIE_PAIRS, ranking.TIE_WORKERS
    ranking.TIE_CHUNK, ranking.TIE_WORKERS = documents, workers
    ranking.TIE_PAIRS = saved[1] if pairs is None else pairs
    try:
        yield
    finally:
        ranking.TIE_CHUNK, ranking.TIE_PAIRS, ranking.TIE_WORKERS = saved


def grade_rows(ranked) -> list:
    return [[g for g in row if g != PAD] for row in ranked.grades.tolist()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied(), all_queries=st.booleans(), float32=st.booleans(),
       chunk=st.sampled_from([1, 3, 16, ranking.TIE_CHUNK]),
       pairs=st.sampled_from([0, ranking.TIE_PAIRS]), workers=st.sampled_from([1, 2, 3]))
@pytest.mark.slow  # hypothesis, two paths
def test_both_paths_rank_ties_as_a_python_sort_by_score_then_docid_bytes_desc(
        data, all_queries, float32, chunk, pairs, workers):
    qrels, run = data
    want = reference(qrels, run, all_queries, float32)
    kw = {"all_queries": all_queries, "float32_scores": float32}
    with tie_chunk(chunk, pairs, workers):
        for qids, ranked in (ranking.rank_dicts(qrels, run, **kw),
                             ranking.rank_columns(Qrels.from_dict(qrels),
                                                  Run.from_dict(run).compacted(), **kw)):
            assert (qids, grade_rows(ranked)) == want


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied(), all_queries=st.booleans(), float32=st.booleans())
@pytest.mark.slow  # hypothesis, three paths
def test_dict_scores_read_a_query_at_a_time_or_chained_give_the_same_ranking(
        data, all_queries, float32):
    """The two ways ``_read_scores`` reads dicts (a query at a time for long runs, one chained
    pass for short ones): the same arrays, bit for bit, and the reference ranking."""
    qrels, run = data
    qids = sorted(q for q in run if q in qrels and run[q])
    runs, judged = [run[q] for q in qids], [qrels[q] for q in qids]
    counts = np.array([len(d) for d in runs], dtype=np.int64)
    jcounts = np.array([len(j) for j in judged], dtype=np.int64)
    want = reference(qrels, run, all_queries, float32)
    saved = ranking.PER_QUERY
    read = []
    try:
        for per_query in (0, 10**9):  # every query on its own; one chained pass
            ranking.PER_QUERY = per_query
            read.append(ranking._read_scores(runs, judged, counts, jcounts))
            qids_got, ranked = ranking.rank_dicts(qrels, run, all_queries=all_queries,
                                                  float32_scores=float32)
            assert (qids_got, grade_rows(ranked)) == want
    finally:
        ranking.PER_QUERY = saved
    (score_a, jscore_a), (score_b, jscore_b) = read
    assert score_a.tobytes() == score_b.tobytes()
    assert jscore_a.tobytes() == jscore_b.tobytes()  # nan where not retrieved, in both
    assert np.isnan(jscore_a).sum() == sum(d not in r for r, j in zip(runs, judged, strict=True)
                                           for d in j)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="\x01a\u00e9\u4e2d\U0001f600", max_size=20), min_size=1,
                max_size=30))
def test_order_words_compare_as_the_utf8_bytes(texts):
    half = len(texts) // 2
    a, b = (columns.utf8(np.array(t, dtype=object)) for t in (texts[:half], texts[half:]))
    wa, wb = columns.order_words(a, b)
    as_tuples = [tuple(int(c[i]) for c in w) for w, n in ((wa, half), (wb, len(b)))
                 for i in range(n)]
    encoded = [t.encode() for t in texts]
    for i in range(len(texts)):
        for j in range(len(texts)):
            assert (as_tuples[i] < as_tuples[j]) == (encoded[i] < encoded[j])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="\x00a\u00e9\u4e2d\U0001f600", max_size=20), max_size=30),
       st.lists(st.text(alphabet="a\u00e9", max_size=12), max_size=5), st.data())
def test_strings_packed_in_one_buffer_give_the_words_their_bytes_array_gives(texts, other, data):
    """The tie break's docids from dicts are slices of one joined buffer (``Packed``): their
    words are those of the same strings as an ``S`` array, beside another array of any width."""
    raw, starts, ends = columns.joined_utf8(iter(texts), len(texts))
    take = np.array(data.draw(st.lists(st.integers(0, max(len(texts) - 1, 0)),
                                       max_size=len(texts) and 12)), dtype=np.int64)
    packed = columns.Packed(raw, starts[take], ends[take])
    tight = columns.Packed(raw[:ends[take].max()] if len(take) else raw[:0], starts[take],
                           ends[take])  # no padding after the last string
    as_array = np.array([texts[i].encode() for i in take.tolist()] or [b""], dtype="S")
    as_array = as_array[:len(take)]
    second = columns.utf8(np.array(other, dtype=object)) if other else np.zeros(0, "S1")
    want = columns.order_words(as_array, second)
    for strings in (packed, tight):
        got = columns.order_words(strings, second)
        assert len(got[0]) == len(want[0]) and len(got[1]) == len(want[1])
        for g, w in zip(got[0] + got[1], want[0] + want[1], strict=True):
            assert g.dtype == np.uint64 and np.array_equal(g, w)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied(), chunk=st.sampled_from([1, 7, ranking.TIE_CHUNK]),
       pairs=st.sampled_from([0, ranking.TIE_PAIRS]))
def test_long_prefixed_and_non_ascii_docids_in_ties_match_pytrec_eval(data, chunk, pairs):
    qrels, run = data
    qrels = {q: {d: g for d, g in docs.items() if d} for q, docs in qrels.items()}
    qrels = {q: {**docs, "zz": 1} for q, docs in qrels.items()}  # trec_eval needs a judgment
    run = {q: {d: s for d, s in docs.items() if d and abs(s) < np.inf} for q, docs in run.items()}
    run = {q: docs for q, docs in run.items() if docs}
    if not set(run).intersection(qrels):
        return
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recip_rank"}).evaluate(run)
    for q, r in ((qrels, run), (Qrels.from_dict(qrels), Run.from_dict(run))):
        with tie_chunk(chunk, pairs):
            ours = evaluate(q, r, ["AP", "nDCG", "RR"], float32_scores=True)
        for qid, row in zip(ours.query_ids, ours.scores.tolist(), strict=True):
            want = [theirs[qid][k] for k in ("map", "ndcg", "recip_rank")]
            assert row == pytest.approx(want, abs=1e-9), qid


def test_chunks_broken_by_several_threads_give_the_ranking_one_thread_gives(monkeypatch):
    """Heavy ties over many chunks: with 3 workers the chunks really run on other threads, and
    every grade matrix (dicts and columns) is the one a single thread makes."""
    rng = np.random.default_rng(7)
    run = {f"q{i}": {f"d{j}": float(rng.integers(0, 4)) for j in rng.permutation(300)[:200]}
           for i in range(40)}
    qrels = {q: {f"d{j}": int(rng.integers(-1, 4)) for j in rng.permutation(300)[:60]}
             for q in run}
    threads = set()
    inner = ranking.tie_break.__globals__["_greater_in_tie"]

    def noted(*args, **kwargs):
        threads.add(threading.get_ident())
        return inner(*args, **kwargs)

    monkeypatch.setitem(ranking.tie_break.__globals__, "_greater_in_tie", noted)
    got = {}
    for workers in (1, 3):
        with tie_chunk(500, workers=workers):
            got[workers] = [ranking.rank_dicts(qrels, run)[1],
                            ranking.rank_columns(Qrels.from_dict(qrels),
                                                 Run.from_dict(run).compacted())[1]]
        if workers == 1:
            assert threads == {threading.get_ident()}
    assert len(threads - {threading.get_ident()}) > 1  # the pool's threads took chunks
    for one, several in zip(got[1], got[3], strict=True):
        assert np.array_equal(one.grades, several.grades)
    assert grade_rows(got[1][0]) == reference(qrels, run, False, False)[1]


def test_a_chunks_error_reaches_the_caller_and_the_chunks_not_started_are_dropped(monkeypatch):
    run = {f"q{i:02d}": {f"d{j}": 1.0 for j in range(20)} for i in range(40)}  # 40 chunks
    qrels = {q: {"d0": 1} for q in run}
    inner = ranking.tie_break.__globals__["_greater_in_tie"]
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("the first chunk")
        time.sleep(0.01)
        return inner(*args, **kwargs)

    monkeypatch.setitem(ranking.tie_break.__globals__, "_greater_in_tie", failing)
    with tie_chunk(20, workers=2), pytest.raises(MemoryError, match="the first chunk"):
        ranking.rank_dicts(qrels, run)
    assert len(calls) < 10  # not the 40: the queued ones were cancelled


def test_a_tie_split_over_chunks_keeps_every_query_whole():
    run = {f"q{i}": {f"doc{j:03d}": 1.0 for j in range(25)} for i in range(5)}
    qrels = {f"q{i}": {"doc000": 1, f"doc{24 - i:03d}": 2} for i in range(5)}
    for q, r in ((qrels, run), (Qrels.from_dict(qrels), Run.from_dict(run))):
        with tie_chunk(10):
            per_query = evaluate(q, r, ["RR"]).per_query()
        assert {k: v["RR"] for k, v in per_query.items()} == {f"q{i}": 1 / (1 + i)
                                                             for i in range(5)}


@settings(max_examples=300, deadline=None)
@given(prefix=st.sampled_from(PREFIXES),
       suffixes=st.lists(st.text(alphabet="0a\u00e9z\u4e2d", max_size=12), min_size=1,
                         max_size=40, unique=True),
       ties=st.lists(st.integers(0, 2), min_size=40, max_size=40), n_ties=st.integers(3, 1 << 20),
       judged=st.lists(st.integers(0, 39), max_size=10))
@pytest.mark.slow  # hypothesis
def test_tie_keys_never_contradict_the_tie_then_docid_order(prefix, suffixes, ties, n_ties,
                                                             judged):
    # members sorted by tie, judged documents among them; one prefix: its bits are skipped
    ties = ties[:len(suffixes)]
    dense = {t: i for i, t in enumerate(sorted(set(ties)))}  # ties numbered 0, 1, ...
    members = sorted(zip((dense[t] for t in ties), (prefix + s for s in suffixes), strict=True))
    judged = [members[i] for i in sorted(set(judged)) if i < len(members)]
    tie = np.array([t for t, _ in members], dtype=np.int64)
    words = columns.order_words(*(columns.utf8(np.array([d for _, d in x] or [""], dtype=object))
                                  for x in (members, judged)))
    j_words = [w[:len(judged)] for w in words[1]]
    m_key, j_key = ranking._tie_keys(words[0], j_words, tie,
                                     np.array([t for t, _ in judged], dtype=np.int64),
                                     max(n_ties, len(dense)))
    keys = np.r_[m_key, j_key].tolist()
    exact = [(t, d.encode()) for t, d in members + judged]
    # no pair a, b with keys[a] < keys[b] but not exact[a] < exact[b]: in exact order, keys
    # never fall and are equal where exact is (each pair of neighbours: every pair by chaining)
    order = sorted(range(len(exact)), key=exact.__getitem__)
    for a, b in itertools.pairwise(order):
        assert keys[a] == keys[b] if exact[a] == exact[b] else keys[a] <= keys[b], (a, b)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="\x00a\u00e9\u4e2d\U0001f600", max_size=6), max_size=20),
       st.data())
@pytest.mark.slow  # 200 hypothesis examples
def test_joined_utf8_then_take_strings_gives_each_strings_bytes(texts, data):
    raw, starts, ends = columns.joined_utf8(iter(texts), len(texts))
    take = np.array(data.draw(st.lists(st.integers(0, max(len(texts) - 1, 0)),
                                       max_size=len(texts) and 10)), dtype=np.int64)
    got = columns.take_strings(raw, starts[take], ends[take])
    assert [bytes(raw[starts[i]:ends[i]]) for i in range(len(texts))] == \
        [t.encode() for t in texts]  # a NUL inside a string included
    assert got.tolist() == [texts[i].encode().rstrip(b"\0") for i in take.tolist()]


def test_float32_rounding_of_scores_beyond_its_range_ties_them_quietly():
    """1e300 and 1e301 both round to float32 +inf: one tie, broken by docid (descending), and
    no numpy overflow warning on the way."""
    import warnings

    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1e300, "b": 1e301}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tied = evaluate(qrels, run, ["RR"], float32_scores=True)
        plain = evaluate(qrels, run, ["RR"])
    assert tied.mean()["RR"] == 0.5  # "b" > "a": b first among the tied
    assert plain.mean()["RR"] == 0.5  # untied: b's score is higher anyway
    run = {"q": {"a": 1e301, "b": 1e300}}
    assert evaluate(qrels, run, ["RR"], float32_scores=True).mean()["RR"] == 0.5
    assert evaluate(qrels, run, ["RR"]).mean()["RR"] == 1.0


@settings(max_examples=200, deadline=None)
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 12)), data=st.data(),
       side=st.sampled_from(["left", "right"]))
@pytest.mark.slow  # hypothesis
def test_row_search_row_by_row_or_in_blocks_gives_numpys_search_of_each_row(shape, data, side):
    """``_row_search``'s two ways (a call per row; complex-numbered blocks): each key's place in
    its row, as ``np.searchsorted`` of that row alone, padding (+inf) and -inf included."""
    from reljudge.metrics import ties

    values = st.sampled_from([-np.inf, -1.0, -0.5, 0.0, 0.5, 1e300, np.inf])
    n, width = shape
    neg = np.sort(np.array(data.draw(st.lists(values, min_size=n * width, max_size=n * width)))
                  .reshape(n, width), axis=1)
    keys = np.array(data.draw(st.lists(values, min_size=1, max_size=30)))
    rows = np.sort(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=len(keys),
                                               max_size=len(keys)))))
    want = [int(np.searchsorted(neg[r], k, side)) for r, k in zip(rows, keys, strict=True)]
    saved = ties.ROW_KEYS, ties.SEARCH_CELLS
    try:
        for row_keys, cells in ((0, saved[1]), (10**9, saved[1]), (10**9, 1)):
            ties.ROW_KEYS, ties.SEARCH_CELLS = row_keys, cells
            assert ties._row_search(neg, rows, keys, side).tolist() == want
    finally:
        ties.ROW_KEYS, ties.SEARCH_CELLS = saved
