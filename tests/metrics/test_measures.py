"""Metrics: trec_eval semantics pinned against pytrec_eval, the seed examples, and conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.errors import InputError, MeasureError
from reljudge.io.trec import read_qrels
from reljudge.metrics import evaluate, parse_measure
from reljudge.metrics.evaluate import parse_measures
from reljudge.trec_data import Qrels, Run

# reljudge measure -> pytrec_eval measure key (as it appears in results)
SHARED = {
    "nDCG@5": "ndcg_cut_5", "nDCG@10": "ndcg_cut_10", "nDCG": "ndcg",
    "P@1": "P_1", "P@5": "P_5", "R@5": "recall_5", "R@100": "recall_100",
    "RR": "recip_rank", "AP": "map", "AP@5": "map_cut_5", "Success@1": "success_1",
    "Success@5": "success_5", "NumRel": "num_rel", "NumRet": "num_ret",
    "NumRelRet": "num_rel_ret", "Rprec": "Rprec", "Bpref": "bpref", "infAP": "infAP",
    "IPrec@0.0": "iprec_at_recall_0.00", "IPrec@0.1": "iprec_at_recall_0.10",
    "IPrec@0.3": "iprec_at_recall_0.30", "IPrec@0.7": "iprec_at_recall_0.70",
    "IPrec@1.0": "iprec_at_recall_1.00", "SetP": "set_P", "SetR": "set_recall",
    "SetF": "set_F", "IPrecAvg": "11pt_avg", "RprecMult@0.2": "Rprec_mult_0.20",
    "RprecMult@1.4": "Rprec_mult_1.40", "RelP@5": "relative_P_5", "SetRelP": "set_relative_P",
    "SetAP": "set_map", "NumNonRelJudgedRet": "num_nonrel_judged_ret", "Utility": "utility",
    "BinG": "binG", "G": "G", "nDCGRel": "ndcg_rel", "RnDCG": "Rndcg",
}
PTE_REQUEST = {"ndcg_cut.5,10", "ndcg", "P.1,5", "recall.5,100", "recip_rank", "map",
               "map_cut.5", "success.1,5", "num_rel", "num_ret", "num_rel_ret", "Rprec",
               "bpref", "infAP", "iprec_at_recall", "set_P", "set_recall", "set_F", "11pt_avg",
               "Rprec_mult.0.2,1.4", "relative_P.5", "set_relative_P", "set_map",
               "num_nonrel_judged_ret", "utility", "binG", "G", "ndcg_rel",
               "Rndcg"}
# condensed lists (judged_only=True) against trec_eval -J
JUDGED_ONLY = {"nDCG(judged_only=True)@5": "ndcg_cut_5", "nDCG(judged_only=True)": "ndcg",
               "P(judged_only=True)@5": "P_5", "R(judged_only=True)@5": "recall_5",
               "RR(judged_only=True)": "recip_rank", "AP(judged_only=True)": "map"}
PTE_JUDGED_ONLY = {"ndcg_cut.5", "ndcg", "P.5", "recall.5", "recip_rank", "map"}


def pytrec(qrels: dict, run: dict, rel: int = 1, judged_only: bool = False) -> dict:
    ev = pytrec_eval.RelevanceEvaluator(qrels, PTE_JUDGED_ONLY if judged_only else PTE_REQUEST,
                                        relevance_level=rel, judged_docs_only_flag=judged_only)
    return ev.evaluate(run)


def assert_matches_pytrec(qrels: dict, run: dict, rel: int = 1, judged_only: bool = False,
                          extra_runs: tuple = ()) -> None:
    """Every shared measure, per query and mean, from dicts and from Run/Qrels columns (and
    from any ``extra_runs``, e.g. the same run read from a file by both readers)."""
    table = JUDGED_ONLY if judged_only else SHARED
    measures = list(table) if rel == 1 else [m for m in table if not m.startswith(("nDCG", "G"))]
    asked = [m if rel == 1 or m in ("NumRet",) else _with_rel(m, rel) for m in measures]
    theirs = pytrec(qrels, run, rel, judged_only)
    if not theirs:  # no query in common: an error, never a mean of 0.0 over 0 queries
        with pytest.raises(InputError, match="empty|no query in common"):
            evaluate(qrels, run, asked)
        return
    ours = evaluate(qrels, run, asked, compat="trec_eval-9")  # pytrec_eval is trec_eval 9
    assert sorted(theirs) == ours.query_ids
    # the column path (a Run object, as from a file) builds the same rankings
    for q, r in ((Qrels.from_dict(qrels), Run.from_dict(run)), *extra_runs):
        columns = evaluate(q, r, asked, compat="trec_eval-9")
        assert columns.query_ids == ours.query_ids
        assert np.array_equal(columns.scores, ours.scores)
    keys = [table[m] for m in measures]
    mine = np.column_stack([ours.column(m) for m in asked])
    assert_close(ours.query_ids, asked, mine, [[theirs[q][k] for k in keys] for q in ours.query_ids])
    means = ours.mean()  # every measure's mean at once, under its canonical name
    mean_theirs = [np.mean([theirs[q][k] for q in theirs]) for k in keys]
    assert_close(["mean"], asked, [[means[str(m)] for m in parse_measures(asked)]], [mean_theirs])


def assert_close(rows: list, measures: list, values, expected) -> None:
    """Every value within 1e-9 of the reference's, as ``pytest.approx(x, abs=1e-9)`` (a
    (rows x measures) table at once: pytest.approx one value at a time cost more than the
    evaluation); the first one off is named."""
    shape = (len(rows), len(measures))
    values, expected = np.asarray(values, dtype=float), np.reshape(expected, shape)
    assert values.shape == shape
    close = (np.abs(values - expected) <= 1e-9) | (values == expected)  # equal infinities
    if not close.all():
        i, j = (int(x[0]) for x in np.nonzero(~close))
        raise AssertionError((rows[i], measures[j], values[i, j], expected[i, j]))


def _with_rel(m: str, rel: int) -> str:
    name, _, cut = m.partition("@")
    if name.endswith(")"):
        name = name[:-1] + f",rel={rel})"
    else:
        name += f"(rel={rel})"
    return name + (f"@{cut}" if cut else "")


docids = st.sampled_from([f"d{i}" for i in range(12)])
qids = st.sampled_from(["q1", "q2", "q3", "q4"])
# scores on a coarse grid so that ties are frequent and every value is exact in float32
scores = st.integers(0, 6).map(lambda x: x / 4)
grades = st.integers(0, 3)  # negative grades: see the hand-made tests below


SHARED_SWEEP = given(
    qrels=st.dictionaries(qids, st.dictionaries(docids, grades, max_size=8), max_size=4),
    run=st.dictionaries(qids, st.dictionaries(docids, scores, min_size=1, max_size=10),
                        max_size=4),
    rel=st.sampled_from([1, 1, 2]))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@SHARED_SWEEP
@pytest.mark.slow  # a 250-example pytrec_eval sweep: the fast set runs the same on 30 below
def test_every_shared_measure_equals_pytrec_eval(qrels, run, rel):
    qrels = {q: d for q, d in qrels.items() if d}  # trec_eval has no notion of an empty qrels
    assert_matches_pytrec(qrels, run, rel)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@SHARED_SWEEP
def test_every_shared_measure_equals_pytrec_eval_on_a_few_examples(qrels, run, rel):
    qrels = {q: d for q, d in qrels.items() if d}
    assert_matches_pytrec(qrels, run, rel)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.dictionaries(qids, st.dictionaries(docids, st.integers(-1, 3), min_size=1,
                                                   max_size=8), min_size=1, max_size=4),
       run=st.dictionaries(qids, st.dictionaries(docids, scores, min_size=1, max_size=10),
                           min_size=1, max_size=4))
@pytest.mark.slow  # every measure twice, in blocks and whole
def test_rankings_computed_in_blocks_of_queries_give_the_same_values(qrels, run):
    """Two paths, one answer: evaluate computes a block of queries at a time (BLOCK_CELLS);
    blocks of one query give every all_trec measure as one block of all, to the last bit but
    for the kernels that weight a rank matrix by a BLAS product (RBP, DCG): BLAS sums a row
    in an order that depends on the matrix's shape (seen: 0.9271 vs 0.9270999999999999)."""
    import reljudge.metrics.compute as compute

    if not set(qrels) & set(run):
        return
    whole = evaluate(qrels, run, "all_trec", all_queries=True)
    saved = compute.BLOCK_CELLS
    try:
        compute.BLOCK_CELLS = 1  # one query per block
        blocks = evaluate(qrels, run, "all_trec", all_queries=True)
    finally:
        compute.BLOCK_CELLS = saved
    assert blocks.query_ids == whole.query_ids
    np.testing.assert_allclose(blocks.scores, whole.scores, rtol=1e-15, atol=1e-15)


JUDGED_ONLY_SWEEP = given(
    qrels=st.dictionaries(qids, st.dictionaries(docids, st.integers(-1, 3), min_size=1,
                                                max_size=8), max_size=4),
    run=st.dictionaries(qids, st.dictionaries(docids, scores, min_size=1, max_size=10),
                        max_size=4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@JUDGED_ONLY_SWEEP
@pytest.mark.slow  # a 150-example pytrec_eval sweep: the fast set runs the same on 25 below
def test_judged_only_everywhere_equals_trec_eval_minus_j(qrels, run):
    judged_only_equals_trec_eval_minus_j(qrels, run)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@JUDGED_ONLY_SWEEP
def test_judged_only_everywhere_equals_trec_eval_minus_j_on_a_few_examples(qrels, run):
    judged_only_equals_trec_eval_minus_j(qrels, run)


def judged_only_equals_trec_eval_minus_j(qrels: dict, run: dict) -> None:
    """evaluate(judged_only=True), eval -J: every measure over the condensed lists, as
    pytrec_eval's judged_docs_only_flag (trec_eval -J)."""
    qrels = {q: d for q, d in qrels.items() if any(g >= 0 for g in d.values())}  # pytrec_eval
    theirs = pytrec_eval.RelevanceEvaluator(  # hangs on a query whose grades are all negative
        qrels, PTE_REQUEST, judged_docs_only_flag=True).evaluate(run)
    if not theirs:
        return
    ours = evaluate(qrels, run, list(SHARED), compat="trec_eval-9", judged_only=True)
    # a ranking left with no judged document: trec_eval divides 0 by 0 (nan), we give 0
    empty = {q for q in qrels if not any(qrels[q].get(d, -1) >= 0 for d in run.get(q, {}))}
    compared = [q for q in ours.query_ids if q in theirs and q not in empty]
    at = [ours.query_ids.index(q) for q in compared]
    values = np.column_stack([ours.column(m) for m in SHARED])
    assert_close(compared, list(SHARED), values[at],
                 [[theirs[q][key] for key in SHARED.values()] for q in compared])
    for mine, column in zip(SHARED, values.T.tolist(), strict=True):
        for qid, value in zip(ours.query_ids, column, strict=True):
            if qid in empty and mine != "NumRel":
                assert value == 0.0, (qid, mine)


SCORE_SHAPES = {  # how a query's scores are drawn: ties as real runs have them
    "heavy": st.integers(0, 3).map(lambda x: x / 4),  # a few distinct values
    "equal": st.just(0.5),  # every document of the query tied
    "binary": st.sampled_from([0.0, 1.0]),
}
many_docs = st.sampled_from([f"d{i}" for i in range(30)] + ["D1", "d1x", "é", "a" * 17])


# built once: a strategy built inside a draw is built and validated again at every example
_SHAPE = st.sampled_from(sorted(SCORE_SHAPES))
_TIED_RUNS = {name: st.dictionaries(many_docs, shape, min_size=1, max_size=25)
              for name, shape in SCORE_SHAPES.items()}
_SOME_QUERIES = st.lists(qids, min_size=1, max_size=3, unique=True)
_POOLED = st.dictionaries(many_docs, st.integers(-1, 3), max_size=12)


@st.composite
def tied_workload(draw):
    """(qrels, run, rel) with large ties; the qrels grades include negatives (trec_eval's
    "pooled, not judged") but every query keeps a non-negative grade (trec_eval needs one)."""
    shape = _TIED_RUNS[draw(_SHAPE)]
    qs = draw(_SOME_QUERIES)
    qrels = {q: {**draw(_POOLED), "zz": draw(st.integers(0, 3))} for q in qs}
    run = {q: draw(shape) for q in draw(_SOME_QUERIES)}
    return qrels, run, draw(st.sampled_from([1, 2]))


def _files(folder, qrels: dict, run: dict) -> list:
    """The (qrels, run) read back from TREC files by the Arrow reader, the small files' numpy
    reader and the text one."""
    import reljudge.io.trec as trec

    (folder / "x.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                            for d, g in docs.items()), encoding="utf-8")
    (folder / "x.run").write_text("".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items()
                                          for d, s in docs.items()), encoding="utf-8")
    out = []
    fields_path = trec._read_run_bytes
    for threshold, fields in ((0, True), (1 << 62, True), (1 << 62, False)):
        trec.FAST_MIN_BYTES = threshold
        trec._read_run_bytes = fields_path if fields else (lambda *_: None)
        try:
            out.append((trec.read_qrels(folder / "x.qrels"), trec.read_run(folder / "x.run")))
        finally:
            trec.FAST_MIN_BYTES = 1 << 20
            trec._read_run_bytes = fields_path
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tied_workload(), judged_only=st.booleans())
@pytest.mark.slow  # a second pytrec_eval sweep
def test_heavy_ties_equal_and_binary_scores_match_pytrec_eval_on_every_path(
        tmp_path_factory, data, judged_only):
    qrels, run, rel = data
    files = _files(tmp_path_factory.mktemp("w"), qrels, run)
    ascii_run = all(d.isascii() for docs in run.values() for d in docs)
    assert [f[1].compact for f in files] == [ascii_run, ascii_run, False]  # all readers ran
    assert_matches_pytrec(qrels, run, rel, judged_only, extra_runs=tuple(files))


def test_a_tie_as_long_as_the_run_is_broken_by_docid_on_both_paths():
    docs = [f"doc{i:04d}" for i in range(500)]
    qrels = {"q": {"doc0499": 1, "doc0000": 2, "doc0250": 1, "absent": 1}}
    run = {"q": dict.fromkeys(reversed(docs), 1.0)}
    expected = {"RR": 1.0, "AP": (1 / 1 + 2 / 250 + 3 / 500) / 4, "NumRelRet": 3.0}
    for q, r in ((qrels, run), (Qrels.from_dict(qrels), Run.from_dict(run))):
        assert evaluate(q, r, list(expected)).mean() == pytest.approx(expected)


def test_gmean_is_trec_evals_gm_map_with_its_epsilon():
    qrels = {"a": {"x": 1, "y": 0}, "b": {"x": 1}, "c": {"x": 1}}
    run = {"a": {"x": 1.0, "y": 2.0}, "b": {"z": 1.0}, "c": {"x": 1.0}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"gm_map", "gm_bpref"}).evaluate(run)
    ev = evaluate(qrels, run, ["AP", "Bpref"])
    for mine, key in (("AP", "gm_map"), ("Bpref", "gm_bpref")):
        expected = math.exp(np.mean([theirs[q][key] for q in theirs]))  # per query: the log
        assert ev.gmean()[mine] == pytest.approx(expected, abs=1e-12)
    assert ev.gmean()["AP"] == pytest.approx((0.5 * 0.00001 * 1.0) ** (1 / 3))


def test_rbp_and_its_residual_by_hand():
    # ranks: 1 rel, 2 unjudged, 3 non-rel, 4 rel (grade 2), 5 pooled-unjudged (grade -1)
    qrels = {"q": {"a": 1, "c": 0, "d": 2, "e": -1, "f": 1}}
    run = {"q": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}}
    p = 0.8
    ev = evaluate(qrels, run, ["RBP", "RBP(residual=True)", "RBP(p=0.5)", "RBP(rel=2)",
                               "RBP@3", "RBP(residual=True)@3"])
    got = ev.mean()
    assert got["RBP"] == pytest.approx((1 - p) * (1 + p ** 3))
    assert got["RBP(residual=True)"] == pytest.approx((1 - p) * (p + p ** 4))
    assert got["RBP(p=0.5)"] == pytest.approx(0.5 * (1 + 0.5 ** 3))
    assert got["RBP(rel=2)"] == pytest.approx((1 - p) * p ** 3)
    assert got["RBP@3"] == pytest.approx(1 - p)
    assert got["RBP(residual=True)@3"] == pytest.approx((1 - p) * p)
    # the bounds: judging b and e relevant reaches score + residual, exactly
    full = {"q": {**qrels["q"], "b": 1, "e": 1}}
    assert one(full, run, "RBP") == pytest.approx(got["RBP"] + got["RBP(residual=True)"])
    full = {"q": {**qrels["q"], "b": 0, "e": 0}}  # judged non-relevant: nothing left open
    assert one(full, run, "RBP(residual=True)") == 0.0


def test_condensed_lists_by_hand():
    # x, y unjudged; n pooled-unjudged (-1): all three leave the condensed list
    qrels = {"q": {"a": 0, "b": 1, "c": 2, "n": -1, "m": 1}}
    run = {"q": {"x": 9.0, "a": 8.0, "y": 7.0, "n": 6.0, "b": 5.0, "c": 4.0}}
    # full list: x a y n b c -> relevant at ranks 5, 6; condensed: a b c -> ranks 2, 3
    ev = evaluate(qrels, run, ["AP", "AP(judged_only=True)", "P@2", "P(judged_only=True)@2",
                               "RR", "RR(judged_only=True)", "R@3", "R(judged_only=True)@3",
                               "nDCG(judged_only=True)@3"]).mean()
    assert ev["AP"] == pytest.approx((1 / 5 + 2 / 6) / 3)
    assert ev["AP(judged_only=True)"] == pytest.approx((1 / 2 + 2 / 3) / 3)
    assert ev["P@2"] == 0.0 and ev["P(judged_only=True)@2"] == 0.5
    assert ev["RR"] == pytest.approx(1 / 5) and ev["RR(judged_only=True)"] == 0.5
    assert ev["R@3"] == 0.0 and ev["R(judged_only=True)@3"] == pytest.approx(2 / 3)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    assert ev["nDCG(judged_only=True)@3"] == pytest.approx(dcg / (2 + 1 / math.log2(3)
                                                                  + 1 / math.log2(4)))


def test_bpref_and_infap_by_hand():
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1, "n1": 0, "n2": 0, "p": -1}}
    run = {"q": {"n1": 6.0, "r1": 5.0, "x": 4.0, "p": 3.0, "r2": 2.0, "n2": 1.0}}
    got = evaluate(qrels, run, ["Bpref", "infAP"]).mean()
    # R = 3, N = 2: r1 and r2 each have one judged non-relevant above: 1 - 1/2
    assert got["Bpref"] == pytest.approx((0.5 + 0.5) / 3)
    eps = 0.00001
    r1 = 1 / 2 + (1 / 2) * (1 / 1) * ((0 + eps) / (0 + 1 + 2 * eps))
    r2 = 1 / 5 + (4 / 5) * ((1 + 1 + 1) / 4) * ((1 + eps) / (1 + 1 + 2 * eps))
    assert got["infAP"] == pytest.approx((r1 + r2) / 3)


def test_float64_scores_keep_differences_that_float32_loses():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1.0, "b": 1.0 + 1e-12}}  # equal in float32: tie broken by docid desc
    assert evaluate(qrels, run, ["RR"]).mean()["RR"] == 0.5  # b ranks first in float64
    assert evaluate(qrels, run, ["RR"], float32_scores=True).mean()["RR"] == 0.5
    run = {"q": {"b": 1.0, "a": 1.0 + 1e-12}}
    assert evaluate(qrels, run, ["RR"]).mean()["RR"] == 1.0
    assert evaluate(qrels, run, ["RR"], float32_scores=True).mean()["RR"] == 0.5  # tie: b > a


def test_ties_are_broken_by_docid_descending_in_byte_order():
    qrels = {"q": {"B": 1}}
    run = {"q": {"a": 1.0, "B": 1.0}}  # 'a' (0x61) > 'B' (0x42): a ranks first
    assert evaluate(qrels, run, ["RR"]).mean()["RR"] == 0.5


def test_rank_column_is_ignored(tmp_path):
    from reljudge.io.trec import read_run

    p = tmp_path / "r.run"
    p.write_text("q Q0 a 1 0.1 t\nq Q0 b 2 0.9 t\n")
    assert evaluate({"q": {"b": 1}}, read_run(p), ["RR"]).mean()["RR"] == 1.0


def test_unjudged_and_negative_grades_are_gain_zero_and_not_in_the_ideal():
    qrels = {"q": {"a": 2, "n": -1}}
    run = {"q": {"x": 3.0, "n": 2.0, "a": 1.0}}
    # DCG = 2 / log2(4); ideal [2] -> IDCG = 2
    assert evaluate(qrels, run, ["nDCG"]).mean()["nDCG"] == pytest.approx(0.5)


def test_ndcg_ignores_rel_while_binary_measures_use_it():
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    ev = evaluate(qrels, run, ["nDCG@2", "P(rel=2)@2", "RR(rel=2)", "R(rel=2)@1", "AP(rel=2)"])
    assert ev.mean() == pytest.approx({"nDCG@2": (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)),
                                       "P(rel=2)@2": 0.5, "RR(rel=2)": 0.5,
                                       "R(rel=2)@1": 0.0, "AP(rel=2)": 0.5})


def test_recall_divides_by_all_relevant_in_the_qrels_and_rr_looks_at_whole_ranking():
    qrels = {"q": {f"r{i}": 1 for i in range(4)}}
    run = {"q": {**{f"x{i}": 10.0 - i for i in range(20)}, "r0": -100.0}}
    ev = evaluate(qrels, run, ["R@100", "RR", "RR@10"])
    assert ev.mean() == pytest.approx({"R@100": 0.25, "RR": 1 / 21, "RR@10": 0.0})


def test_query_without_relevant_documents_scores_zero_and_is_averaged_in():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    ev = evaluate(qrels, run, ["nDCG@10", "AP"])
    assert ev.per_query()["q2"] == {"nDCG@10": 0.0, "AP": 0.0}
    assert ev.mean() == {"nDCG@10": 0.5, "AP": 0.5}


def test_all_queries_averages_over_qrels_queries_with_missing_ones_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "q9": {"z": 1.0}}  # q9 has no qrels: never evaluated
    assert evaluate(qrels, run, ["AP"]).query_ids == ["q1"]
    ev = evaluate(qrels, run, ["AP"], all_queries=True)
    assert ev.query_ids == ["q1", "q2"] and ev.mean()["AP"] == 0.5


def test_judged_only_drops_unjudged_documents_before_the_cutoff():
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"x": 3.0, "a": 2.0, "b": 1.0}}
    ev = evaluate(qrels, run, ["nDCG@2", "nDCG(judged_only=True)@2", "Judged@2", "Judged@10"])
    assert ev.mean()["nDCG(judged_only=True)@2"] == pytest.approx(1.0)
    assert ev.mean()["nDCG@2"] < 1.0
    assert ev.mean()["Judged@2"] == 0.5 and ev.mean()["Judged@10"] == pytest.approx(2 / 3)


def test_err_follows_gdeval_with_max_grade_4_by_default():
    qrels = {"q": {"a": 3, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    r1, r2 = 7 / 16, 1 / 16
    assert evaluate(qrels, run, ["ERR@10"]).mean()["ERR@10"] == pytest.approx(
        r1 + (1 - r1) * r2 / 2)
    r1, r2 = 7 / 8, 1 / 8
    assert evaluate(qrels, run, ["ERR(max_grade=3)@10"]).mean()[
        "ERR(max_grade=3)@10"] == pytest.approx(r1 + (1 - r1) * r2 / 2)


def test_err_refuses_a_max_grade_below_a_judged_grade():
    """(2^g-1)/2^max_grade above 1 would put ERR outside [0, 1]: -1.0 and 4.0 were printed for
    ERR(max_grade=0)@10."""
    qrels = {"q": {"a": 3, "b": 1}, "r": {"c": 0}}
    run = {"q": {"a": 2.0, "b": 1.0}, "r": {"c": 1.0}}
    for bad in (0, 1, 2):
        with pytest.raises(MeasureError, match=r"grade 3.*outside \[0, 1\].*max_grade=3"):
            evaluate(qrels, run, [f"ERR(max_grade={bad})@10"])
    assert evaluate(qrels, run, ["ERR(max_grade=3)@10"]).mean()["ERR(max_grade=3)@10"] <= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grades=st.lists(st.integers(0, 6), min_size=1, max_size=12),
       extra=st.integers(0, 3), k=st.sampled_from(["", "@1", "@3", "@10"]))
def test_err_stays_in_0_1_for_every_max_grade_it_accepts(grades, extra, k):
    qrels = {"q": {f"d{i}": g for i, g in enumerate(grades)}}
    run = {"q": {f"d{i}": float(len(grades) - i) for i in range(len(grades))}}
    name = f"ERR(max_grade={max(grades) + extra}){k}"
    [value] = evaluate(qrels, run, [name]).mean().values()  # (named as parsed)
    assert 0.0 <= value <= 1.0


# --- the worked examples of ../shared/seed-examples.md ---------------------------------------

def ranked(grades: list[int], pool: list[int] | None = None, qid: str = "q"):
    """A run returning docs with the given grades in order, and its qrels.

    Without a pool, the qrels are the run's own labels. With a pool (the query's judged
    grades), each returned document is a pool document of that grade while one is left, and
    an unjudged document (grade 0) otherwise.
    """
    if pool is None:
        pool = list(grades)
    free = {}
    for i, g in enumerate(pool):
        free.setdefault(g, []).append(f"p{i}")
    qrels = {qid: {f"p{i}": g for i, g in enumerate(pool)}}
    docs = []
    for i, g in enumerate(grades):
        docs.append(free[g].pop(0) if free.get(g) else f"unjudged{i}")
        assert g == 0 or not docs[-1].startswith("unjudged"), "pool lacks a positive grade"
    run = {qid: {d: float(len(docs) - i) for i, d in enumerate(docs)}}
    return qrels, run


def one(qrels, run, measure):
    return evaluate(qrels, run, [measure]).mean()[str(parse_measure(measure))]


def test_seed_1_one_ranking_linear_gain():
    qrels, run = ranked([3, 2, 3, 0, 1])
    assert round(one(qrels, run, "DCG@5"), 4) == 6.1487
    assert round(one(qrels, run, "nDCG@5"), 4) == 0.9724
    assert round(6.1487 / one(qrels, run, "nDCG@5"), 3) == 6.323


def test_seed_2_two_lists_over_one_pool():
    pool = [3, 2, 1, 0, 0]
    qa, ra = ranked([3, 2, 0, 0, 0], pool)
    qb, rb = ranked([2, 1, 3, 0, 0], pool)
    assert round(one(qa, ra, "DCG@5"), 4) == 4.2619
    assert round(one(qb, rb, "DCG@5"), 4) == 4.1309
    assert round(one(qa, ra, "nDCG@5"), 4) == 0.8950
    assert round(one(qb, rb, "nDCG@5"), 4) == 0.8675


def test_seed_3_rag_chunks_qrels_ideal():
    qrels = {"maternity": {"chunk_17": 3, "chunk_42": 1, "chunk_08": 1, "chunk_91": 0,
                           "chunk_33": 0}}
    a = {"maternity": dict(zip(["chunk_17", "chunk_91", "chunk_42", "chunk_08", "chunk_33"],
                               [5.0, 4, 3, 2, 1], strict=False))}
    b = {"maternity": dict(zip(["chunk_42", "chunk_17", "chunk_08", "chunk_91", "chunk_33"],
                               [5.0, 4, 3, 2, 1], strict=False))}
    assert round(one(qrels, a, "DCG@5"), 4) == 3.9307
    assert round(one(qrels, a, "nDCG@5"), 4) == 0.9515
    assert round(one(qrels, a, "nDCG@3"), 4) == 0.8473
    assert round(one(qrels, b, "DCG@5"), 4) == 3.3928
    assert round(one(qrels, b, "nDCG@5"), 4) == 0.8213
    assert round(one(qrels, b, "nDCG@3"), 4) == 0.8213


def test_seed_3_mean_over_queries_is_the_plain_average():
    from reljudge.metrics import Evaluation

    a = Evaluation("A", ["nDCG@3"], list("abcde"),
                   np.array([[0.847], [0.912], [0.634], [0.889], [0.723]]))
    b = Evaluation("B", ["nDCG@3"], list("abcde"),
                   np.array([[0.823], [0.956], [0.891], [0.845], [0.912]]))
    assert round(a.mean()["nDCG@3"], 3) == 0.801
    assert round(b.mean()["nDCG@3"], 3) == 0.885


def test_seed_4_exponential_gain():
    qrels, run = ranked([3, 2, 0, 0])
    assert round(one(qrels, run, "DCG(dcg='exp-log2')@4"), 4) == 8.8928
    qrels, run = ranked([0, 0, 2, 3])
    assert round(one(qrels, run, "DCG(dcg='exp-log2')@4"), 4) == 4.5147
    for grades, expected in [([3, 3, 2, 1, 0, 0], 1.0), ([3, 2, 3, 1, 0, 0], 0.9608),
                             ([0, 0, 1, 2, 3, 3], 0.5240)]:
        qrels, run = ranked(grades)
        assert round(one(qrels, run, "nDCG(dcg='exp-log2')"), 4) == expected


def test_seed_5_the_two_ideal_conventions_disagree():
    pool = [5, 5, 4, 3, 3, 2, 2, 1, 1, 0]
    qrels, run = ranked([1, 4, 0, 2, 3], pool)
    assert round(one(qrels, run, "nDCG(dcg='exp-log2')@5"), 4) == 0.2268
    assert round(one(qrels, run, "nDCG(dcg='exp-log2',ideal='run')@5"), 4) == 0.6776


# --- real data -----------------------------------------------------------------------------

def test_real_llmjudge_qrels_match_pytrec_eval(llmjudge):
    qrels = read_qrels(llmjudge / "human" / "test.qrels").to_dict()
    assert len(qrels) == 25  # TREC DL 2023's judged queries: the comparison runs on each
    rng = np.random.default_rng(7)
    run = {}
    for q, docs in qrels.items():
        ids = list(docs) + [f"unjudged_{q}_{i}" for i in range(30)]
        # float32-exact scores (multiples of 1/64) with deliberate ties
        run[q] = {d: float(rng.integers(0, 400)) / 64 for d in ids}
    assert_matches_pytrec(qrels, run)
    assert_matches_pytrec(qrels, run, rel=2)


# --- measure syntax ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "canonical"), [
    ("nDCG@10", "nDCG@10"), ("ndcg_cut@10", "nDCG@10"), ("P(rel=2)@5", "P(rel=2)@5"),
    ("P(rel=1)@5", "P@5"), ("nDCG(dcg='exp-log2')@10", "nDCG(dcg='exp-log2')@10"),
    ("nDCG(ideal=\"run\", dcg='exp-log2')@10", "nDCG(dcg='exp-log2',ideal='run')@10"),
    ("RR", "RR"), ("AP@100", "AP@100"), ("Judged@10", "Judged@10"), ("NumRel", "NumRel"),
    ("bpref", "Bpref"), ("infAP", "infAP"), ("Rprec", "Rprec"), ("num_rel_ret", "NumRelRet"),
    ("IPrec@0.1", "IPrec@0.1"), ("iprec@1", "IPrec@1.0"), ("set_F(beta=0.5)", "SetF(beta=0.5)"),
    ("SetF(beta=1)", "SetF"), ("RBP(p=0.8)", "RBP"), ("RBP(p=0.95)@100", "RBP(p=0.95)@100"),
    ("RBP(residual=True)", "RBP(residual=True)"),
    ("AP(judged_only=True)", "AP(judged_only=True)"),
])
def test_measure_strings_parse_to_canonical_names(text, canonical):
    assert str(parse_measure(text)) == canonical
    assert str(parse_measure(canonical)) == canonical


@pytest.mark.parametrize(("text", "needle"), [
    ("nDCG@ten", "positive integer"), ("Foo@10", "unknown measure"),
    ("nDCG(x=1)@10", "no parameter 'x'"), ("P@0", "positive integer"),
    ("P", "needs a cutoff"), ("NumRel@5", "takes no cutoff"),
    ("nDCG(dcg='exp')@10", "must be one of"), ("P(rel='2')@5", "must be an integer"),
    ("nDCG(judged_only=1)@5", "True or False"), ("P(rel=)@5", "cannot parse"),
    ("IPrec", "IPrec@0.1"), ("IPrec@1.5", "between 0 and 1"), ("IPrec@x", "between 0 and 1"),
    ("RBP(p=1)", "between 0 and 1"), ("RBP(p='a')", "must be a number"),
    ("Bpref@10", "takes no cutoff"), ("SetF(beta=-1)", ">= 0"),
    ("P(**x)@5", "name=value pairs"),
])
def test_bad_measure_strings_say_what_is_wrong(text, needle):
    with pytest.raises(MeasureError, match=needle):
        parse_measure(text)


def test_evaluate_accepts_typed_qrels_and_runs_and_names_the_run():
    q = Qrels.from_dict({"q": {"a": 1}})
    r = Run.from_dict({"q": {"a": 1.0, "b": 2.0}}, name="bm25")
    ev = evaluate(q, r, ["RR"])
    assert ev.run == "bm25" and ev.mean() == {"RR": 0.5}


def test_negative_grades_mixed_with_positive_ones_match_pytrec_eval():
    # (pytrec_eval hangs on a query whose judgments are all negative, so that case is pinned
    # by hand in test_unjudged_and_negative_grades_are_gain_zero_and_not_in_the_ideal)
    qrels = {"q": {"a": -1, "b": 1, "c": 2, "d": -2}, "r": {"e": 1, "f": -1}}
    run = {"q": {"a": 3.0, "b": 2.0, "x": 1.0, "d": 0.5}, "r": {"f": 2.0, "e": 1.0}}
    assert_matches_pytrec(qrels, run)
    assert_matches_pytrec(qrels, run, rel=2)


def test_a_nan_score_is_an_error_on_both_paths():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 0.5}, "q2": {"b": float("nan"), "c": 1.0}}
    for r in (run, Run.from_dict(run)):
        with pytest.raises(InputError, match="query 'q2' is nan"):
            evaluate(qrels, r, ["AP"])


def test_a_measure_gives_its_cutoff_in_the_type_its_kernel_takes():
    from reljudge.metrics.measures import Measure

    assert parse_measure("nDCG@10").rank_cutoff() == 10 and parse_measure("AP").rank_cutoff() is None
    assert parse_measure("RelP@5").required_rank_cutoff() == 5
    assert parse_measure("IPrec@0.3").level() == 0.3 and parse_measure("RprecMult@2").level() == 2.0
    with pytest.raises(MeasureError, match="needs a cutoff"):
        Measure("RelP").required_rank_cutoff()
    with pytest.raises(MeasureError, match="needs a cutoff"):
        Measure("IPrec").level()
