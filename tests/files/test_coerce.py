"""The front door for in-memory inputs: every form of qrels, run and measures, one answer."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections import OrderedDict, namedtuple

import ir_measures
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reljudge.io.trec as trec
from reljudge.audit import audit
from reljudge.errors import InputError, MeasureError
from reljudge.io.coerce import as_qrels, as_run
from reljudge.metrics import evaluate, evaluate_many
from reljudge.stats import compare
from reljudge.trec_data import Qrels, Run
from tests.helpers import Lazy

pd = Lazy("pandas")

# ir_datasets' record types, same fields (ir_datasets itself is not a test dependency)
TrecQrel = namedtuple("TrecQrel", ["query_id", "doc_id", "relevance", "iteration"])
GenericScoredDoc = namedtuple("GenericScoredDoc", ["query_id", "doc_id", "score"])

MEASURES = ["nDCG@5", "nDCG", "P@3", "P(rel=2)@5", "R@10", "RR", "AP", "ERR@5", "Judged@5",
            "NumRel", "NumRet"]


def qrels_forms(rows: list[tuple[int, str, int]]) -> dict:
    """The same qrels in every accepted in-memory form; rows hold integer query ids."""
    by_int: dict = {}
    for q, d, g in rows:
        by_int.setdefault(q, {})[d] = g
    return {
        "dict str ids": {str(q): docs for q, docs in by_int.items()},
        "dict int ids": by_int,
        "dict numpy ids": {np.int64(q): {d: np.int32(g) for d, g in docs.items()}
                           for q, docs in by_int.items()},
        "Qrels": Qrels.from_dict(by_int),
        "ir_measures Qrel": [ir_measures.Qrel(str(q), d, g) for q, d, g in rows],
        "ir_datasets TrecQrel": (TrecQrel(str(q), d, g, "0") for q, d, g in rows),
        "records": [{"qid": q, "docno": d, "label": float(g)} for q, d, g in rows],
        "DataFrame": pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]),
    }


def run_forms(rows: list[tuple[int, str, float]]) -> dict:
    by_int: dict = {}
    for q, d, s in rows:
        by_int.setdefault(q, {})[d] = s
    return {
        "dict str ids": {str(q): docs for q, docs in by_int.items()},
        "dict int ids": by_int,
        "dict numpy ids": {np.int64(q): {d: np.float64(s) for d, s in docs.items()}
                           for q, docs in by_int.items()},
        "Run": Run.from_dict(by_int),
        "ir_measures ScoredDoc": [ir_measures.ScoredDoc(str(q), d, s) for q, d, s in rows],
        "ir_datasets ScoredDoc": (GenericScoredDoc(str(q), d, s) for q, d, s in rows),
        "records": [{"query_id": q, "doc_id": d, "score": s} for q, d, s in rows],
        "DataFrame": pd.DataFrame(rows, columns=["qid", "docid", "score"]),
    }


# xz at its fastest level: its default sets up a large dictionary, 20 ms a file however small
FILES = {"plain": lambda b: b, "bom+crlf": lambda b: b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n"),
         "gz": gzip.compress, "bz2": bz2.compress, "xz": lambda b: lzma.compress(b, preset=0)}


def file_forms(folder, qrels_rows, run_rows) -> dict:
    """(qrels, run) read from files in every wrapping, by both readers."""
    qtext = "".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels_rows).encode()
    rtext = "".join(f"{q} Q0 {d} {i} {s!r} run\n" for i, (q, d, s) in enumerate(run_rows)).encode()
    out = {}
    for name, wrap in FILES.items():
        (folder / f"{name}.qrels").write_bytes(wrap(qtext))
        (folder / f"{name}.run").write_bytes(wrap(rtext))
        for reader, threshold in (("arrow", 0), ("python", 1 << 62)):
            trec.FAST_MIN_BYTES = threshold
            try:
                out[f"{name} file, {reader}"] = (trec.read_qrels(folder / f"{name}.qrels"),
                                                 trec.read_run(folder / f"{name}.run"))
            finally:
                trec.FAST_MIN_BYTES = 1 << 20
    return out


docs = st.sampled_from([f"d{i}" for i in range(10)])
qids = st.integers(1, 4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.lists(st.tuples(qids, docs, st.integers(0, 3)), min_size=1, max_size=25,
                      unique_by=lambda t: (t[0], t[1])),
       run=st.lists(st.tuples(qids, docs, st.integers(0, 8).map(lambda x: x / 4)), min_size=1,
                    max_size=30, unique_by=lambda t: (t[0], t[1])),
       all_queries=st.booleans())
@pytest.mark.slow  # hypothesis over every input form and file format (the readers' own tests are fast)
def test_every_input_form_gives_the_same_evaluation(tmp_path_factory, qrels, run, all_queries):
    """Two paths, one answer: dicts (str, int, numpy ids), Qrels/Run, namedtuples, records,
    DataFrames and files (plain, BOM+CRLF, gz, bz2, xz; both readers): bit-identical matrices."""
    qforms, rforms = qrels_forms(qrels), run_forms(run)
    pairs = {f"{k} qrels, {k2} run": (qforms[k], rforms[k2])
             for k in qforms for k2 in rforms if k == k2 or "str ids" in (k + k2)}
    # fresh forms: the ir_datasets ones are generators, read once
    typed_run, typed_qrels = run_forms(run)["Run"], qrels_forms(qrels)["Qrels"]
    pairs.update({f"qrels as {k}": (v, typed_run) for k, v in qrels_forms(qrels).items()})
    pairs.update({f"run as {k}": (typed_qrels, v) for k, v in run_forms(run).items()})
    pairs.update(file_forms(tmp_path_factory.mktemp("f"), qrels, run))
    if {q for q, _, _ in qrels}.isdisjoint(q for q, _, _ in run):
        for q, r in pairs.values():
            with pytest.raises(InputError, match="no query in common"):
                evaluate(q, r, MEASURES, all_queries=all_queries)
        return
    want = evaluate(qforms["dict str ids"], rforms["dict str ids"], MEASURES,
                    all_queries=all_queries)
    assert want.query_ids  # something was scored
    for name, (q, r) in pairs.items():
        got = evaluate(q, r, MEASURES, all_queries=all_queries)
        assert got.query_ids == want.query_ids, name
        assert np.array_equal(got.scores, want.scores), name


def test_integer_ids_are_scored_not_silently_dropped():
    got = evaluate({1: {"a": 1}}, {1: {"a": 0.5}}, ["nDCG@10"])
    assert got.query_ids == ["1"] and got.mean() == {"nDCG@10": 1.0}
    got = evaluate({np.int64(1): {7: 1}}, {"1": {np.int64(7): 0.5, 8: 0.9}}, ["RR"])
    assert got.mean() == {"RR": 0.5}


@pytest.mark.parametrize(("qrels", "run", "needle"), [
    ({}, {"q": {"a": 1.0}}, "the qrels are empty"),
    ({"q": {}}, {"q": {"a": 1.0}}, "the qrels are empty"),
    ({"q": {"a": 1}}, {}, "run 'run' is empty"),
    ({"q": {"a": 1}}, Run.from_dict({}, name="bm25"), "run 'bm25' is empty"),
    ({"q": {"a": 1}}, {"x": {"a": 1.0}}, r"no query in common \(run queries e.g. \['x'\], "
                                         r"qrels queries e.g. \['q'\]\)"),
    ({1: {"a": 1}, "1": {"b": 1}}, {"1": {"a": 1.0}}, "query id '1' appears twice"),
    ({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, r"expected an integer grade, found 1.5 \(query 'q'"),
    ({"q": {"a": "1"}}, {"q": {"a": 1.0}}, "expected an integer grade, found '1'"),
    ({"q": {"a": 1}}, {"q": {"a": "0.5"}}, "expected a numeric score, found '0.5'"),
    ({"q": {"a": 1}}, {"q": {"a": None}}, "expected a numeric score, found None"),
    ({"q": {"a": 1}}, {"q": {"a": float("nan")}}, "run score of query 'q' is nan"),
    ({"q": [("a", 1)]}, {"q": {"a": 1.0}}, r"expected \{query id: \{document id: grade\}\}"),
    ([("q", "a", 1)], {"q": {"a": 1.0}}, "expected records with named fields"),
    ("x.qrels", {"q": {"a": 1.0}}, "found a path 'x.qrels'; read the file with "
                                   "reljudge.read_qrels"),
    (Run.from_dict({"q": {"a": 1.0}}), {"q": {"a": 1.0}}, "expected qrels, found a Run"),
])
def test_bad_in_memory_inputs_are_input_errors_saying_what(qrels, run, needle):
    with pytest.raises(InputError, match=needle):
        evaluate(qrels, run, ["AP"])


def test_dataframe_columns_are_found_by_their_usual_names_or_refused():
    run = {"q": {"a": 1.0, "b": 0.5}}
    for cols in (["query_id", "doc_id", "relevance"], ["qid", "docno", "label"],
                 ["QID", "docid", "grade"]):
        df = pd.DataFrame([("q", "b", 1)], columns=cols)
        assert evaluate(df, run, "RR").mean() == {"RR": 0.5}
    df = pd.DataFrame([("q", "b", 1, 2)], columns=["qid", "docid", "label", "grade"])
    with pytest.raises(InputError, match="qrels: columns 'label' and 'grade' both name the grade"):
        evaluate(df, run, "RR")
    df = pd.DataFrame([("q", "b", 1)], columns=["q", "docid", "label"])
    with pytest.raises(InputError, match=r"qrels: expected a query id column \(one of query_id, "
                                         r"qid\), found \['q', 'docid', 'label'\]"):
        evaluate(df, run, "RR")
    df = pd.DataFrame({"qid": ["q", None], "docid": ["a", "b"], "score": [1.0, 2.0]})
    with pytest.raises(InputError, match="run: query id of row 1 is missing"):
        as_run(df)
    df = pd.DataFrame({"qid": ["q", "q"], "docid": ["a", "a"], "score": [1.0, 2.0]})
    with pytest.raises(InputError, match="duplicate run entry for query 'q', document 'a'"):
        as_run(df)


def test_measures_as_a_string_a_list_or_ir_measures_objects():
    qrels, run = {"q": {"a": 1, "b": 2}}, {"q": {"a": 1.0, "b": 0.5, "c": 0.1}}
    one = evaluate(qrels, run, "nDCG@10")
    assert one.measures == ["nDCG@10"]
    objs = evaluate(qrels, run, [ir_measures.nDCG @ 10, ir_measures.P(rel=2) @ 2,
                                 ir_measures.parse_measure("AP")])
    text = evaluate(qrels, run, ["nDCG@10", "P(rel=2)@2", "AP"])
    assert objs.measures == text.measures and np.array_equal(objs.scores, text.scores)
    assert evaluate(qrels, run, ir_measures.RR).measures == ["RR"]
    with pytest.raises(MeasureError, match="measure nDCG@10 given twice"):
        evaluate(qrels, run, ["nDCG@10", "AP", ir_measures.nDCG @ 10])
    with pytest.raises(MeasureError, match="expected a measure as text, e.g. 'nDCG@10', found int"):
        evaluate(qrels, run, [10])


def test_constructors_compare_and_audit_take_the_same_forms():
    rows = [(1, "a", 2), (1, "b", 0), (2, "c", 1)]
    qrels = as_qrels(pd.DataFrame(rows, columns=["qid", "docno", "relevance"]))
    assert as_qrels([ir_measures.Qrel(str(q), d, g) for q, d, g in rows]) == qrels
    assert Qrels.from_dict({1: {"a": 2, "b": 0}, 2: {"c": 1.0}}) == qrels
    run = as_run([GenericScoredDoc(1, "a", 0.5), GenericScoredDoc(2, "c", 0.1)], name="x")
    assert run.name == "x" and run.to_dict() == {"1": {"a": 0.5}, "2": {"c": 0.1}}
    with pytest.raises(InputError, match="qrels: expected an integer grade, found 'high'"):
        Qrels.from_arrays(["q"], ["a"], ["high"])
    with pytest.raises(InputError, match="run: expected a numeric score, found '0.5'"):
        Run.from_arrays(["q"], ["a"], ["0.5"])

    runs = {"a": {1: {"a": 1.0, "b": 0.5}, 2: {"c": 1.0}},
            "b": pd.DataFrame([(1, "b", 1.0), (1, "a", 0.5)], columns=["qid", "docid", "score"])}
    c = compare({1: {"a": 2, "b": 0}, 2: {"c": 1}}, runs, "AP", trials=100, bootstrap=50)
    want = compare(qrels, [Run.from_dict(runs["a"], name="a"), as_run(runs["b"], "b")], ["AP"],
                   trials=100, bootstrap=50)
    assert c.runs == ["a", "b"] and c.measures == ["AP"]
    assert all(np.array_equal(c.per_query[n], want.per_query[n]) for n in c.runs)
    many = evaluate_many(qrels, [Run.from_dict(runs["a"], name="a")], "AP")
    assert many["a"].mean() == evaluate(qrels, runs["a"], "AP").mean()

    judge = {1: {"a": 2, "b": 1}, 2: {"c": 1}}
    r1 = audit({"1": {"a": 2, "b": 0}, "2": {"c": 1}}, judge, runs=[runs["a"]])
    r2 = audit(qrels, Qrels.from_dict(judge), runs=[Run.from_dict(runs["a"], name="run1")])
    assert r1.row(r1.judges[0]) == r2.row(r2.judges[0])
    r4 = audit(qrels, judge, runs=[runs["a"]], measure=ir_measures.AP)
    assert r4.measure == "AP" and r4.judges[0].systems.measure == "AP"
    r3 = audit(qrels, {"j1": judge, "j2": pd.DataFrame(rows, columns=["qid", "docid", "label"])})
    assert [j.name for j in r3.judges] == ["j1", "j2"] and r3.judges[1].items.stats["exact"] == 1
    with pytest.raises(InputError, match="the judge labels are empty"):
        audit(qrels, {})


def test_pandas_and_ir_measures_are_not_imported_for_plain_inputs(tmp_path):
    import subprocess
    import sys

    (tmp_path / "x.run").write_text("q Q0 a 1 0.5 t\n")
    code = ("import sys; from reljudge.metrics import evaluate; from reljudge.io.trec import read_run;"
            f"evaluate({{1: {{'a': 1}}}}, {{1: {{'a': .5}}}}, 'AP');"
            f"evaluate({{'q': {{'a': 1}}}}, read_run({str(tmp_path / 'x.run')!r}), ['AP']);"
            "print(sorted({'pandas', 'ir_measures'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_runs_for_compare_and_evaluate_many_in_every_collection():
    qrels = {"q": {"a": 1}}
    with pytest.raises(InputError, match="no runs to compare"):
        compare(qrels, [], "AP")
    with pytest.raises(InputError, match="expected runs as a list of runs or a"):
        evaluate_many(qrels, "bm25.run", "AP")
    got = evaluate_many(qrels, [{"q": {"a": 1.0}}, Run.from_dict({"q": {"b": 1.0}}, name="x"),
                                [ir_measures.ScoredDoc("q", "a", 0.5)]], "RR")
    assert {n: e.mean()["RR"] for n, e in got.items()} == {"run1": 1.0, "x": 0.0, "run3": 1.0}
    # runs sharing a name are numbered, as everywhere (types.distinct_runs)
    twice = evaluate_many(qrels, [Run.from_dict({"q": {"a": 1.0}})] * 2, "RR")
    assert sorted(twice) == ["run#1", "run#2"]


def test_an_infinite_score_is_refused_in_memory_as_in_files(tmp_path):
    """A run file with score inf is refused ("expected a numeric score"); in memory it was
    ranked first. Every in-memory form now says the same, naming the query,
    and so does compare."""
    qrels = {"q": {"a": 1, "b": 0}}
    for bad in (float("inf"), float("-inf")):
        forms = [{"q": {"a": bad, "b": 1.0}}, {"q": {"a": np.float64(bad), "b": 1}},
                 pd.DataFrame([("q", "a", bad), ("q", "b", 1.0)],
                              columns=["qid", "docid", "score"]),
                 [GenericScoredDoc("q", "a", bad)]]
        for run in forms:
            with pytest.raises(InputError, match=f"run score of query 'q' is {bad}; scores "
                                                 "must be finite numbers"):
                evaluate(qrels, run, "AP")
            with pytest.raises(InputError, match=f"query 'q' is {bad}"):
                compare(qrels, {"x": run, "y": {"q": {"a": 1.0}}}, "AP", trials=10)
    (tmp_path / "x.run").write_text("q Q0 a 1 inf t\n")
    with pytest.raises(InputError, match="expected a numeric score, found 'inf'"):
        trec.read_run(tmp_path / "x.run")


def test_no_measures_or_no_runs_are_errors_not_an_empty_result():
    """evaluate(qrels, run, []) gave an Evaluation of nothing and evaluate_many(qrels, [])
    returned {}: both now say what is missing, as compare does."""
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    for empty in ([], (), iter([])):
        with pytest.raises(MeasureError, match=r"no measures given; name at least one, "
                                               r"e.g. \['nDCG@10'\]"):
            evaluate(qrels, run, empty)
    with pytest.raises(MeasureError, match="no measures given"):
        evaluate_many(qrels, {"x": run}, [])
    with pytest.raises(MeasureError, match="no measures given"):
        compare(qrels, {"x": run}, [])
    for none in ([], {}):
        with pytest.raises(InputError, match="no runs to evaluate"):
            evaluate_many(qrels, none, ["AP"])


class _Str(str):
    pass


_ITEM = st.sampled_from(["a", "b", 1, 2.5, True, None, np.float64(0.5), np.int64(3), _Str("c"),
                         1.5, 0])


@pytest.mark.slow  # hypothesis, 300 examples
@settings(max_examples=300, deadline=None)
@given(data=st.one_of(
    st.dictionaries(st.sampled_from(["q1", "q2", 3, _Str("q4")]),
                    st.one_of(st.dictionaries(_ITEM, _ITEM, max_size=4),
                              st.dictionaries(st.sampled_from(["a", "b", "c"]),  # near clean
                                              st.sampled_from([1, 0, 2.5, 1.5, True]),
                                              max_size=3),
                              st.builds(OrderedDict, st.dictionaries(_ITEM, _ITEM, max_size=2))),
                    max_size=3),
    st.lists(st.just(1), max_size=1)))
def test_the_clean_dict_check_is_every_type_in_the_accepted_set(data):
    """``values._already_clean`` (counting the usual type) says what its definition says: the
    outer ids str, the inner values exactly dicts, their ids str, their values of the accepted
    types, for grades ({int}) and scores ({float, int})."""
    from itertools import chain

    from reljudge import values

    for ok in ({int}, {float, int}):
        want = (isinstance(data, dict) and set(map(type, data)) <= {str}
                and set(map(type, data.values())) <= {dict}
                and set(map(type, chain.from_iterable(data.values()))) <= {str}
                and set(map(type, chain.from_iterable(d.values() for d in data.values())))
                <= ok)
        assert values._already_clean(data, ok) == want
