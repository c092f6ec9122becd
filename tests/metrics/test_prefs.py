"""trec_eval's preference measures (metrics.prefs) and judgment-group averages
(metrics.judgment_groups), and their reader (io.prefs): worked by hand on small cases, held
equal to the graded measures where the definitions meet, and refusing bad judgments by line.
trec_eval's own test files are reproduced byte for byte in test_trec_eval_suite."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.errors import InputError, MeasureError
from reljudge.io.prefs import Prefs, read_prefs
from reljudge.metrics import evaluate
from reljudge.metrics.judgment_groups import evaluate_groups, group_measures
from reljudge.metrics.prefs import PREFS_MEASURES, evaluate_prefs, prefs_measures
from reljudge.trec_data import Run

RUN = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, name="r")


def one(prefs: Prefs, run: Run = RUN, **kw) -> dict[str, float]:
    ev = evaluate_prefs(prefs, run, **kw)
    return dict(zip(ev.measures, ev.scores[0].tolist(), strict=True))


def test_graded_lines_give_every_pair_of_levels_as_a_preference():
    """Levels c=2, b=1, a=0 on a run ranking a, b, c: the three preferences among them (c>b,
    c>a, b>a) are unfulfilled. d=1 is not retrieved: c over d is fulfilled (implied: the
    preferred one retrieved), d over a is not (implied the other way)."""
    prefs = Prefs.from_rows([("q", "g", "0", "a", 0), ("q", "g", "0", "b", 1),
                             ("q", "g", "0", "c", 2), ("q", "g", "0", "d", 1)])
    v = one(prefs)
    assert v["prefs_num_prefs_poss"] == 5  # c>b c>a b>a c>d d>a
    assert v["prefs_num_prefs_ful"] == 1  # c>d only
    assert v["prefs_num_prefs_ful_ret"] == 0
    assert v["prefs_simp"] == pytest.approx(1 / 5)
    assert v["prefs_simp_ret"] == 0.0  # 0 of the 3 between retrieved documents
    assert v["prefs_simp_imp"] == pytest.approx(1 / 5)  # none with neither retrieved


def test_ties_in_score_rank_by_document_id_ascending_for_preferences():
    """trec_eval breaks score ties by id ascending here (descending for its other measures):
    with a and b tied, a ranks first, so a preference a > b is fulfilled."""
    tied = Run.from_dict({"q": {"a": 1.0, "b": 1.0}})
    prefs = Prefs.from_rows([("q", "g", "0", "a", 1), ("q", "g", "0", "b", 0)])
    assert one(prefs, tied)["prefs_simp"] == 1.0
    flipped = Prefs.from_rows([("q", "g", "0", "a", 0), ("q", "g", "0", "b", 1)])
    assert one(flipped, tied)["prefs_simp"] == 0.0


def test_sub_groups_combine_by_transitivity():
    """a > b in one sub-group and b > c in another give a > c too: 3 preferences."""
    prefs = Prefs.from_rows([("q", "g", "1", "a", 1), ("q", "g", "1", "b", 0.5),
                             ("q", "g", "2", "b", 1), ("q", "g", "2", "c", 0.5)])
    v = one(prefs)
    assert v["prefs_num_prefs_poss"] == 3
    assert v["prefs_num_prefs_ful"] == 3  # ranked a, b, c


def test_pairs_preferred_both_ways_by_two_groups_score_their_share():
    """Two groups disagree on (a, b), agree on (a, c): pair scores 1/2 and 1 -> 0.75, while
    simp counts 3 of 4 preferences fulfilled and avgjg averages 1 and 1/2."""
    prefs = Prefs.from_rows([("q", "u1", "0", "a", 1), ("q", "u1", "0", "b", 0),
                             ("q", "u2", "0", "b", 2), ("q", "u2", "0", "a", 1),
                             ("q", "u2", "0", "c", 0)])
    v = one(prefs)
    assert v["prefs_pair"] == pytest.approx((1 / 2 + 1 + 1) / 3)  # (a,b) 1/2, (a,c), (b,c)
    assert v["prefs_simp"] == pytest.approx(3 / 4)
    assert v["prefs_avgjg"] == pytest.approx((1 + 2 / 3) / 2)


def test_max_docs_and_all_queries_as_trec_eval():
    prefs = Prefs.from_rows([("q", "g", "0", "a", 1), ("q", "g", "0", "c", 0),
                             ("other", "g", "0", "x", 1), ("other", "g", "0", "y", 0)])
    assert one(prefs)["prefs_simp_ret"] == 1.0
    assert one(prefs, max_docs=1)["prefs_simp_ret"] == 0.0  # c cut off: implied only
    assert one(prefs, max_docs=1)["prefs_simp"] == 1.0
    ev = evaluate_prefs(prefs, RUN, all_queries=True)
    assert ev.query_ids == ["other", "q"]  # byte order; 'other' with an empty ranking
    assert ev.column("prefs_num_prefs_poss").tolist() == [1.0, 1.0]
    assert ev.column("prefs_num_prefs_ful").tolist() == [0.0, 1.0]


GRADES = st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 3), min_size=1)
SCORES = st.dictionaries(st.sampled_from("abcdefghij"), st.integers(0, 5).map(float),
                         min_size=1)


@settings(max_examples=60, deadline=None)
@given(GRADES, SCORES)
def test_qrels_read_as_preferences_equal_a_prefs_file_with_one_sub_group(grades, scores):
    """Two readers, one answer: the same judgments as qrels_prefs and as prefs lines."""
    run = Run.from_dict({"q": scores})
    as_qrels = Prefs.from_rows([("q", "0", "0", d, g) for d, g in grades.items()],
                               kind="qrels_prefs")
    as_prefs = Prefs.from_rows([("q", "0", "jsg", d, g) for d, g in grades.items()])
    a, b = evaluate_prefs(as_qrels, run), evaluate_prefs(as_prefs, run)
    np.testing.assert_array_equal(a.scores, b.scores)


@settings(max_examples=60, deadline=None)
@given(GRADES, SCORES, st.integers(1, 2))
def test_one_judgment_group_gives_the_graded_measures(grades, scores, rel):
    """map_avgjg, P_avgjg and Rprec_mult_avgjg with one group are map, P and Rprec_mult."""
    run = Run.from_dict({"q": scores})
    groups = Prefs.from_rows([("q", "0", "0", d, g) for d, g in grades.items()],
                             kind="qrels_jg")
    ours = evaluate_groups(groups, run, ["map_avgjg", "P_avgjg.5", "Rprec_mult_avgjg.1.0"],
                           rel=rel)
    plain = evaluate({"q": grades}, run, [f"AP(rel={rel})", f"P(rel={rel})@5",
                                          f"RprecMult(rel={rel})@1.0"])
    np.testing.assert_allclose(ours.scores, plain.scores, rtol=0, atol=1e-15)


def test_judgment_groups_average_the_groups_measures():
    groups = Prefs.from_rows([("q", "u1", "0", "a", 1), ("q", "u2", "0", "c", 1)],
                             kind="qrels_jg")
    ev = evaluate_groups(groups, RUN, "map_avgjg")
    assert ev.scores[0, 0] == pytest.approx((1.0 + 1 / 3) / 2)


def test_measure_names_and_sets():
    assert prefs_measures(["all_prefs"]) == list(PREFS_MEASURES)
    assert prefs_measures(["prefs_pair", "prefs_simp"]) == ["prefs_simp", "prefs_pair"]
    assert [n for n, _ in group_measures(["P_avgjg.10,5", "map_avgjg"])] == [
        "map_avgjg", "P_avgjg_5", "P_avgjg_10"]
    with pytest.raises(MeasureError, match="not a preference measure"):
        prefs_measures(["map"])
    with pytest.raises(MeasureError, match="not a judgment-group measure"):
        group_measures(["prefs_simp"])


# -- bad judgments ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, kind, message", [
    ("q g s d1 1\nq g s d2 high\n", "prefs", r":2: expected a numeric level, found 'high'"),
    ("q g s d1 1\nq g d2 1\n", "prefs", r":2: expected 'QID JG JSG DOCID LEVEL'"),
    ("q 0 d1 1\nq 0 d1 2\n", "qrels_jg", r":2: duplicate judgment for query 'q', group '0', "
                                         r"document 'd1' \(first on line 1\)"),
    ("q 0 d1 1.5\n", "qrels_jg", r":1: expected an integer grade, found '1.5'"),
    ("# only a comment\n", "prefs", r"no data lines, only comments"),
])
def test_a_bad_judgments_file_is_named_by_line(tmp_path, text, kind, message):
    path = tmp_path / "judgments"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_prefs(path, kind)


def test_comment_lines_are_skipped_or_refused_when_strict(tmp_path):
    path = tmp_path / "prefs.gz"
    path.write_bytes(gzip.compress(b"# a note\nq g s d#1 1\nq g s d2 0\n"))
    prefs = read_prefs(path)
    assert prefs.docid.tolist() == ["d#1", "d2"]  # '#' inside a field is data
    with pytest.raises(InputError, match=r":1: a comment line"):
        read_prefs(path, strict=True)


def test_contradicting_judgments_are_errors_not_numbers():
    cycle = Prefs.from_rows([("q", "g", "1", "a", 1), ("q", "g", "1", "b", 0.5),
                             ("q", "g", "2", "b", 1), ("q", "g", "2", "a", 0.5)])
    with pytest.raises(InputError, match="query 'q', judgment group 'g': the preferences"):
        evaluate_prefs(cycle, RUN)
    twice = Prefs.from_rows([("q", "g", "0", "a", 1), ("q", "g", "0", "a", 2)])
    with pytest.raises(InputError, match="document 'a' has two levels"):
        evaluate_prefs(twice, RUN)
    zero = Prefs.from_rows([("q", "g", "1", "a", 1), ("q", "g", "1", "b", 0),
                            ("q", "g", "2", "a", 0), ("q", "g", "2", "b", 1)])
    with pytest.raises(InputError, match="document 'a' has level 0 and a level above 0"):
        evaluate_prefs(zero, RUN)


def test_cli_refuses_what_does_not_go_with_preferences(tmp_path, capsys):
    prefs, run = tmp_path / "prefs", tmp_path / "run"
    prefs.write_text("q g s a 1\nq g s b 0\n")
    run.write_text("q Q0 a 1 2.0 r\nq Q0 b 2 1.0 r\n")
    assert main(["eval", "-R", "prefs", str(prefs), str(run), "-J"]) == 2
    assert "-J and --judged go with qrels" in capsys.readouterr().err
    assert main(["eval", "-R", "prefs", str(prefs), str(run), "-m", "map"]) == 2
    assert "'map' is not a preference measure" in capsys.readouterr().err
    assert main(["eval", "-R", "prefs", str(prefs), str(run), "-m", "prefs_simp",
                 "--format", "trec"]) == 0
    assert capsys.readouterr().out == "prefs_simp            \tall\t1.0000\n"


@pytest.mark.parametrize("jsg", [("1", "1", "2", "2"), ("0", "0", "0", "0")],
                         ids=["sub-groups", "one sub-group"])
def test_rnonrel_keeps_as_many_nonrelevant_documents_as_relevant_ones(jsg):
    """One relevant document x ranked second, three non-relevant a (first), b, c: plain
    preferences give 2 of 3 fulfilled; avgjg_Rnonrel keeps only the first-ranked
    non-relevant document (R = 1), a, which x does not beat: 0."""
    run = Run.from_dict({"q": {"a": 4.0, "x": 3.0, "b": 2.0, "c": 1.0}})
    lines = [("x", 1), ("a", 0), ("x", 1), ("b", 0)] if jsg[0] == "1" else \
        [("x", 1), ("a", 0), ("b", 0), ("c", 0)]
    rows = [("q", "g", s, d, lv) for s, (d, lv) in zip(jsg, lines, strict=True)]
    if jsg[0] == "1":
        rows.append(("q", "g", "2", "c", 0))
    v = one(Prefs.from_rows(rows), run)
    assert v["prefs_avgjg"] == pytest.approx(2 / 3)
    assert v["prefs_avgjg_Rnonrel"] == 0.0
    assert v["prefs_avgjg_Rnonrel_ret"] == 0.0


def test_a_nan_score_is_refused_as_by_the_graded_measures():
    """Two paths, one rule: a nan would sort anywhere; evaluate refuses it, so do these."""
    prefs = Prefs.from_rows([("q", "g", "0", "a", 1), ("q", "g", "0", "b", 0)])
    with pytest.raises(InputError, match="run score of query 'q' is nan"):
        evaluate_prefs(prefs, {"q": {"a": float("nan"), "b": 1.0}})
