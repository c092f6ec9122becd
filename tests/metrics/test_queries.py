"""One rule for which queries are averaged (metrics.queries), the same in eval, compare, report
and the pipeline; and one rule for naming runs that share a tag (types.distinct_names)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.errors import InputError
from reljudge.metrics import evaluate, evaluate_many
from reljudge.metrics.queries import ALL_QUERIES, RUN_QUERIES, coverage
from reljudge.metrics.queries import coverage_warnings as warnings
from reljudge.stats import compare
from reljudge.trec_data import Qrels, Run, distinct_names
from tests.helpers import Lazy

sps = Lazy("scipy.stats")

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}, "q3": {"d": 1}, "q4": {"e": 1}}
BASE = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"c": 1.0}, "q3": {"x": 1.0, "d": 0.5},
        "q4": {"e": 2.0}}
MISSING = {"q1": {"b": 1.0, "a": 0.5}, "q2": {"c": 1.0}}  # lacks q3 and q4


def test_coverage_counts_and_warns_only_for_runs_lacking_qrels_queries():
    qrels = Qrels.from_dict(QRELS)
    runs = [Run.from_dict(BASE, name="base"), Run.from_dict(MISSING, name="half")]
    cov = coverage(qrels, runs)
    assert [(c.scored, c.missing) for c in cov] == [(4, 0), (2, 2)]
    lines = warnings(qrels, runs)
    assert lines == ["warning: run half has no results for 2 of the 4 qrels queries; its means "
                     "are over its 2 (--all-queries counts the missing as 0)"]
    assert "they score 0" in warnings(qrels, runs, all_queries=True)[0]


def test_a_run_sharing_no_query_with_the_qrels_is_an_error_not_a_zero_mean():
    qrels = Qrels.from_dict(QRELS)
    with pytest.raises(InputError, match="run other has no query that the qrels have"):
        coverage(qrels, [Run.from_dict({"zz": {"a": 1.0}}, name="other")])
    assert coverage(qrels, [Run.from_dict({"zz": {"a": 1.0}}, name="other")],
                    all_queries=True)[0].missing == 4


@pytest.mark.parametrize("all_queries", [False, True])
def test_compare_means_equal_evaluate_means_under_either_rule(all_queries):
    runs = [Run.from_dict(BASE, name="base"), Run.from_dict(MISSING, name="half")]
    c = compare(QRELS, runs, ["AP", "nDCG@10"], all_queries=all_queries, trials=200,
                shared=False)
    for run in runs:
        ev = evaluate(QRELS, run, ["AP", "nDCG@10"], all_queries=all_queries)
        for m, v in ev.mean().items():
            assert c.cells[(run.name, m)].interval.mean == v
        assert c.run_queries[run.name] == ev.query_ids
    assert len(c.run_queries["half"]) == (4 if all_queries else 2)


def test_paired_tests_use_the_queries_both_runs_are_averaged_over():
    runs = [Run.from_dict(BASE, name="base"), Run.from_dict(MISSING, name="half")]
    c = compare(QRELS, runs, ["AP"], test="t", shared=False)
    common, base, vals = c.paired("half", "AP")
    assert common == ["q1", "q2"]
    full = evaluate(QRELS, runs[0], ["AP"])
    assert base.tolist() == [full.per_query()[q]["AP"] for q in common]
    assert c.cells[("half", "AP")].diff == pytest.approx(float(np.mean(vals - base)))
    c_all = compare(QRELS, runs, ["AP"], test="t", all_queries=True)
    a, b = c_all.per_query["base"][:, 0], c_all.per_query["half"][:, 0]
    assert c_all.cells[("half", "AP")].p == pytest.approx(sps.ttest_rel(b, a).pvalue)
    assert c.warnings and c_all.warnings


def test_eval_and_compare_print_the_same_mean_for_a_run_missing_queries(tmp_path, capsys):
    (tmp_path / "q.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in QRELS.items()
                                              for d, g in ds.items()))
    for name, run in (("base", BASE), ("half", MISSING)):
        (tmp_path / f"{name}.run").write_text("".join(
            f"{q} Q0 {d} 1 {s} {name}\n" for q, ds in run.items() for d, s in ds.items()))
    files = [str(tmp_path / f) for f in ("q.qrels", "base.run", "half.run")]
    for flag in ([], ["--all-queries"]):
        assert main(["eval", *files, "-m", "AP", "--json", *flag]) == 0
        out, err = capsys.readouterr()
        ev = json.loads(out)
        assert ev["rule"] == (ALL_QUERIES if flag else RUN_QUERIES)
        assert "warning: run half has no results for 2 of the 4" in err
        assert main(["compare", *files, "-m", "AP", "--json", "--trials", "100",
                     "--run-queries", *flag]) == 0
        out, err = capsys.readouterr()
        cmp = json.loads(out)
        assert cmp["rule"] == ev["rule"]
        assert "warning: run half" in err
        for name in ("base", "half"):
            assert cmp["runs"][name]["AP"]["mean"] == ev["runs"][name]["mean"]["AP"]
            assert cmp["run_queries"][name] == ev["runs"][name]["queries"]
    assert main(["eval", *files, "-m", "AP"]) == 0
    assert "queries: means over each run's queries that have qrels" in capsys.readouterr().out


def _files(tmp_path, qrels: dict, runs: dict) -> list[str]:
    (tmp_path / "q.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items()
                                              for d, g in ds.items()))
    for name, run in runs.items():
        (tmp_path / f"{name}.run").write_text("".join(
            f"{q} Q0 {d} 1 {s} {name}\n" for q, ds in run.items() for d, s in ds.items()))
    return [str(tmp_path / "q.qrels"), *(str(tmp_path / f"{n}.run") for n in runs)]


def test_compare_puts_side_by_side_means_over_the_same_queries(tmp_path, capsys):
    """bm25 over 12 queries (0.9250) stood beside trig10 over 10 (0.8531, marked worse) while
    the test was over the 10 shared: now both means are over the 10 shared,
    the table says how many each row is over ("10 of 12"), stderr and JSON name what was left
    out, and --run-queries gives the old per-run means, labelled as such."""
    qids = [f"q{i:02d}" for i in range(12)]
    qrels = {q: {"a": 1, "b": 0} for q in qids}
    bm25 = {q: {"a": 2.0, "b": 1.0} for q in qids}  # AP 1 everywhere
    trig = {q: ({"a": 2.0, "b": 1.0} if i % 2 else {"b": 2.0, "a": 1.0})  # AP 1 or 0.5
            for i, q in enumerate(qids[:10])}  # lacks q10, q11
    bm25["q00"], bm25["q02"] = {"b": 2.0, "a": 1.0}, {"b": 2.0, "a": 1.0}
    c = compare(qrels, {"bm25": bm25, "trig10": trig}, "AP", test="t")
    assert c.run_queries["bm25"] == c.run_queries["trig10"] == qids[:10]
    assert c.own_queries == {"bm25": 12, "trig10": 10}
    for name, run in (("bm25", bm25), ("trig10", trig)):
        want = evaluate(qrels, {q: run[q] for q in qids[:10]}, "AP").mean()["AP"]
        assert c.cells[(name, "AP")].interval.mean == want
    assert c.cells[("bm25", "AP")].interval.mean == pytest.approx(0.9)

    files = _files(tmp_path, qrels, {"bm25": bm25, "trig10": trig})
    assert main(["compare", *files, "-m", "AP", "--trials", "100"]) == 0
    out, err = capsys.readouterr()
    header, _, base_row, trig_row = out.splitlines()[:4]
    assert header.split()[:3] == ["run", "queries", "AP"]
    assert base_row.split()[:4] == ["bm25", "(baseline)", "10", "of"]
    assert base_row.split()[4:6] == ["12", "0.9000"]
    assert trig_row.split()[:2] == ["trig10", "10"]
    assert "over the 10 queries every run has in the qrels" in out
    assert "left out: 2 of bm25's 12" in err
    assert main(["compare", *files, "-m", "AP", "--trials", "100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run_queries"] == {"bm25": 10, "trig10": 10} and data["shared"] is True
    assert data["own_queries"] == {"bm25": 12, "trig10": 10}
    assert data["runs"]["bm25"]["AP"]["mean"] == pytest.approx(0.9)
    assert main(["compare", *files, "-m", "AP", "--trials", "100", "--run-queries"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].split()[:4] == ["bm25", "(baseline)", "12", "0.9167"]
    assert "means over each run's queries that have qrels" in out


def test_compare_refuses_runs_sharing_no_query_unless_per_run_means():
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    runs = {"x": {"q1": {"a": 1.0}}, "y": {"q2": {"a": 1.0}}}
    with pytest.raises(InputError, match="the runs share no query that has qrels"):
        compare(qrels, runs, "AP")
    with pytest.raises(InputError, match="share no query with qrels; nothing to pair"):
        compare(qrels, runs, "AP", shared=False)
    both = compare(qrels, runs, "AP", all_queries=True, trials=10)
    assert both.run_queries == {"x": ["q1", "q2"], "y": ["q1", "q2"]} and not both.left_out()


# --- same-tag runs --------------------------------------------------------------------------

def test_distinct_names_rules():
    assert distinct_names(["a", "b"], ["x/1.run", "x/2.run"]) == ["a", "b"]
    assert distinct_names(["a", "a", "b"], ["x/1.run", "x/2.run", "x/3.run"]) == \
        ["1.run", "2.run", "3.run"]
    assert distinct_names(["a", "a"], ["x/1.run", "y/1.run"]) == ["x/1.run", "y/1.run"]
    assert distinct_names(["a", "a"], ["x/1.run", "x/1.run"]) == ["1.run#1", "1.run#2"]
    assert distinct_names(["a", "a", "b"]) == ["a#1", "a#2", "b"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=6),
       st.lists(st.sampled_from(["p/x.run", "q/x.run", "p/y.run"]), min_size=6, max_size=6))
def test_distinct_names_are_distinct_and_keep_distinct_input(names, sources):
    sources = sources[: len(names)]
    for got in (distinct_names(names), distinct_names(names, sources)):
        assert len(set(got)) == len(got) == len(names)
    if len(set(names)) == len(names):
        assert distinct_names(names, sources) == names


def test_python_api_numbers_runs_sharing_a_name_in_evaluate_many_and_compare():
    run = Run.from_dict(BASE, name="bm25")
    ev = evaluate_many(QRELS, [run, run], ["AP"])
    assert list(ev) == ["bm25#1", "bm25#2"]
    c = compare(QRELS, [run, run], ["AP"], trials=50)
    assert c.runs == ["bm25#1", "bm25#2"] and c.cells[("bm25#2", "AP")].diff == 0


@st.composite
def qrels_and_runs(draw):
    """Random qrels over q0..q5 and two runs each covering a random subset of the queries."""
    qids = [f"q{i}" for i in range(6)]
    docs = [f"d{i}" for i in range(5)]
    qrels = {q: {d: draw(st.integers(0, 3)) for d in draw(st.sets(st.sampled_from(docs),
                                                                 min_size=1))}
             for q in draw(st.sets(st.sampled_from(qids), min_size=1))}
    runs = []
    for name in ("a", "b"):
        covered = draw(st.sets(st.sampled_from(qids), min_size=1))
        covered.add(sorted(qrels)[0])  # each run shares a query with the qrels
        runs.append(Run.from_dict({q: {d: draw(st.floats(0, 1)) for d in
                                       draw(st.sets(st.sampled_from(docs), min_size=1))}
                                   for q in covered}, name=name))
    return qrels, runs


@settings(max_examples=60, deadline=None)
@given(qrels_and_runs(), st.booleans())
@pytest.mark.slow  # hypothesis, two paths
def test_compare_and_evaluate_agree_on_random_coverage(data, all_queries):
    qrels, runs = data
    c = compare(qrels, runs, ["AP", "nDCG@5"], all_queries=all_queries, trials=20,
                bootstrap=20, shared=False)
    for run in runs:
        ev = evaluate(qrels, run, ["AP", "nDCG@5"], all_queries=all_queries)
        assert c.run_queries[run.name] == ev.query_ids
        for m, v in ev.mean().items():
            assert c.cells[(run.name, m)].interval.mean == v
    common, base, vals = c.paired("b", "AP")
    assert set(common) == set(c.run_queries["a"]) & set(c.run_queries["b"])
    assert c.cells[("b", "AP")].diff == pytest.approx(float(np.mean(vals - base)))
