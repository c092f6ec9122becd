"""Ties counted from one sort of per-document keys (``ties._greater_by_keys``) against the
argsort path and a Python sort, on dicts and columns."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.metrics import ranking, ties
from reljudge.trec_data import Qrels, Run
from tests.metrics.test_ranking import grade_rows, reference, tie_chunk, tied


@contextmanager
def key_path(doc_bits: int):
    """``_greater_by_keys`` taken while ``doc_bits`` docid bits fit its keys (1: nearly
    always, every shared key compared in full; 65: never, the argsort path); each call's
    outcome (True: counted by keys) is noted in the yielded list."""
    saved, inner = ties.KEY_DOC_BITS, ties._greater_by_keys
    taken: list[bool] = []

    def noted(*args, **kwargs):
        counted = inner(*args, **kwargs)
        taken.append(counted is not None)
        return counted

    ties.KEY_DOC_BITS = doc_bits
    ties._greater_by_keys = noted
    try:
        yield taken
    finally:
        ties.KEY_DOC_BITS, ties._greater_by_keys = saved, inner


def both_paths(qrels: dict, run: dict, **kw) -> list:
    """(query ids, grade rows) from the dicts and from the columns."""
    return [(qids, grade_rows(ranked)) for qids, ranked in (
        ranking.rank_dicts(qrels, run, **kw),
        ranking.rank_columns(Qrels.from_dict(qrels), Run.from_dict(run).compacted(), **kw))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied(), all_queries=st.booleans(), float32=st.booleans(),
       chunk=st.sampled_from([1, 3, 16, ranking.TIE_CHUNK]), doc_bits=st.sampled_from([1, 24]))
@pytest.mark.slow  # hypothesis, three ways, two paths each
def test_ties_counted_by_keys_rank_as_the_argsort_path_and_a_python_sort(
        data, all_queries, float32, chunk, doc_bits):
    """Tie-heavy runs (-0.0 beside 0.0, scores +-inf once rounded to float32, scores distinct
    in float64 only, long shared prefixes and non-ASCII docids): the keys path, with
    the fewest docid bits (every shared key compared in full) or the usual, ranks as the
    argsort path and a Python sort by score then docid bytes, descending."""
    qrels, run = data
    want = reference(qrels, run, all_queries, float32)
    kw = {"all_queries": all_queries, "float32_scores": float32}
    with tie_chunk(chunk, pairs=1 << 20), key_path(doc_bits):
        by_keys = both_paths(qrels, run, **kw)
    with tie_chunk(chunk), key_path(65) as taken:
        by_argsort = both_paths(qrels, run, **kw)
    assert not any(taken)
    assert by_keys == by_argsort == [want, want]


def test_zero_and_negative_zero_scores_are_one_tie_on_the_keys_path():
    """-0.0 == 0.0: one tie, broken by docid (their bits differ: the keys must not)."""
    run = {"q": {"a": 0.0, "b": -0.0, "c": 0.0, "d": -0.0, "e": 1.0}}
    qrels = {"q": {"a": 1, "b": 2, "c": 3, "d": 0}}
    with key_path(ties.KEY_DOC_BITS) as taken:
        got = both_paths(qrels, run)
    assert taken == [True, True]
    assert got == [(["q"], [[ranking.UNJUDGED, 0, 3, 2, 1]])] * 2


def test_a_coarse_run_is_counted_by_keys_and_equal_keys_are_compared_in_full(monkeypatch):
    """The shape of bench/metrics.py's coarse workload (21 score values, docids sharing
    their query's prefix; in a few queries so long a prefix that the keys hold none of what
    follows) takes the keys path on dicts and columns, and ranks as the argsort path does."""
    inner, compared = ties._equal_keys_compared, []

    def noted(*args):
        compared.append(1)
        return inner(*args)

    monkeypatch.setattr(ties, "_equal_keys_compared", noted)
    rng = np.random.default_rng(5)
    run, qrels = {}, {}
    for q in range(60):
        prefix = f"clueweb12-{q:04d}wb-" + "x" * (16 if q % 20 == 0 else int(rng.integers(0, 4)))
        docs = [f"{prefix}{i:05d}" for i in rng.permutation(400).tolist()]
        run[f"q{q}"] = dict(zip(docs, (rng.integers(0, 21, 400) / 20).tolist(), strict=True))
        qrels[f"q{q}"] = {d: int(rng.integers(0, 4)) for d in rng.choice(docs, 60).tolist()}
    with key_path(ties.KEY_DOC_BITS) as taken:
        by_keys = both_paths(qrels, run)
    assert taken and all(taken)
    assert compared
    with key_path(65):
        assert by_keys == both_paths(qrels, run)
