"""trec_eval 10's own test suite (tests/data/trec_eval, see its README) through our CLI: every
`quicktest` line of its Makefile (all 15: qrels with -m all_trec's measures, preference
judgments with -m all_prefs, qrels by judgment group with -m qrels_jg) reproduces trec_eval's
expected output byte for byte, its flags written as there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.errors import MeasureError
from reljudge.metrics.trec_names import trec_measures

DATA = Path(__file__).parent.parent / "data" / "trec_eval"


def ours(capsys, *args: str) -> str:
    assert main(["eval", *args, "--format", "trec"]) == 0
    return capsys.readouterr().out


def values(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        out[(name.rstrip(), qid)] = value
    return out


QUICKTEST = [  # the Makefile's lines: (trec_eval's arguments, the expected output)
    ("qrels.test results.test", "out.test"),
    ("qrels.test.with-comments results.test", "out.test"),
    ("qrels.comment.test.gz results.comment.test.gz", "out.comment.test"),
    ("-m all_trec qrels.test results.test", "out.test.a"),
    ("-m all_trec -q qrels.test results.test", "out.test.aq"),
    ("-m all_trec -q -c qrels.test results.trunc", "out.test.aqc"),
    ("-m all_trec -q -c -M100 qrels.test results.trunc", "out.test.aqcM"),
    ("-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test", "out.test.aql"),
    ("-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 "
     "-m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 "
     "-mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test",
     "out.test.meas_params"),
    ("-m all_prefs -q -R prefs prefs.test prefs.results.test", "out.test.prefs"),
    ("-m all_prefs -q -R prefs prefs.comment.test prefs.results.test", "out.test.prefs"),
    ("-m all_prefs -q -R qrels_prefs qrels.test results.test", "out.test.qrels_prefs"),
    ("-m qrels_jg -q -R qrels_jg qrels.123.gz results.test", "out.test.qrels_jg"),
    ("-m qrels_jg -q -R qrels_jg qrels.comments.123.gz results.test", "out.test.qrels_jg"),
    ("-q -m all_trec -Z zscores_file qrels.test results.test", "out.test.aqZ"),
]


@pytest.mark.parametrize("line, expected", QUICKTEST,
                         ids=[f"{e}-{i}" for i, (_, e) in enumerate(QUICKTEST)])
def test_a_quicktest_line_is_trec_evals_output_byte_for_byte(capsys, line, expected):
    argv = [str(DATA / a) if (DATA / a).exists() else a for a in line.split()]
    assert ours(capsys, *argv) == (DATA / expected).read_text()


def test_trec_eval_9_rules_on_request(capsys):
    """--compat trec_eval-9: iprec_at_recall's cut-off int(r x R + 0.9), as pytrec_eval; query
    302 at 0.60 is 0.1420 there and 0.1528 in trec_eval 10 (R = 77: 46.2 -> 47 vs 46)."""
    args = [str(DATA / "qrels.test"), str(DATA / "results.test"), "-q", "-m",
            "iprec_at_recall_0.60"]
    assert values(ours(capsys, *args))[("iprec_at_recall_0.60", "302")] == "0.1528"
    nine = values(ours(capsys, *args, "--compat", "trec_eval-9"))
    assert nine[("iprec_at_recall_0.60", "302")] == "0.1420"


def test_trec_evals_words_name_our_measures_everywhere(capsys):
    from reljudge.metrics.trec_names import plain_measures

    assert [tm.name for tm in trec_measures(["P.10,5", "map", "iprec_at_recall..5"])] == [
        "map", "iprec_at_recall_0.50", "P_5", "P_10"]  # trec_eval's order, values sorted
    assert plain_measures(["P_10", "ndcg_cut.10,20", "map", "nDCG@5"]) == [
        "P@10", "nDCG@10", "nDCG@20", "AP", "nDCG@5"]
    with pytest.raises(MeasureError, match="gm_map is a line of trec_eval's summary"):
        plain_measures(["gm_map"])
    with pytest.raises(MeasureError, match="relstring is text, not a number"):
        plain_measures(["relstring"])
    assert "IPrecAvg" in plain_measures(["all_trec"])  # the numbers of all_trec, as columns
    assert [tm.name for tm in trec_measures(["all_trec", "relstring.20", "P.5"])
            if tm.name.startswith(("relstring", "P_"))] == ["P_5", "relstring_20"]
    args = [str(DATA / "qrels.test"), str(DATA / "results.test")]
    assert main(["eval", *args, "-m", "P_10", "-m", "map", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    mean = record["runs"]["STANDARD"]["mean"]
    assert record["compat"] == "trec_eval-10"
    want = values((DATA / "out.test").read_text())
    assert f"{mean['P@10']:.4f}" == want[("P_10", "all")]
    assert f"{mean['AP']:.4f}" == want[("map", "all")]
    # ir_measures syntax in trec_eval's layout: its name when it has one
    out = ours(capsys, *args, "-m", "nDCG@10", "-m", "RR@10", "-q", "-n")
    assert [line.split("\t")[0].rstrip() for line in out.splitlines()][:2] == ["ndcg_cut_10",
                                                                              "RR@10"]
    assert "\tall\t" not in out  # -n: the queries' lines only


def test_all_queries_keeps_what_rests_on_the_qrels_alone():
    """trec_eval -c: a query the run lacks scores 0, but num_rel is its qrels' count."""
    from reljudge.metrics import evaluate

    qrels = {"a": {"d1": 1, "d2": 2, "d3": 0}, "b": {"d1": 1}}
    run = {"b": {"d1": 1.0}}
    ev = evaluate(qrels, run, ["NumRel", "AP", "NumRet"], all_queries=True)
    assert ev.per_query() == {"a": {"NumRel": 2.0, "AP": 0.0, "NumRet": 0.0},
                              "b": {"NumRel": 1.0, "AP": 1.0, "NumRet": 1.0}}
    with pytest.raises(Exception, match="unknown compat"):
        evaluate(qrels, run, ["AP"], compat="trec_eval-8")
    with pytest.raises(Exception, match="max_docs"):
        evaluate(qrels, run, ["AP"], max_docs=0)
    capped = evaluate({"q": {"d1": 1, "d2": 1}}, {"q": {"d1": 2.0, "d2": 1.0}}, ["NumRet", "P@2"],
                      max_docs=1)
    assert capped.per_query() == {"q": {"NumRet": 1.0, "P@2": 0.5}}  # trec_eval -M1


def test_trec_evals_words_work_in_the_api_and_compare(capsys):
    from reljudge.metrics import evaluate

    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "c": 1.0}}
    ev = evaluate(qrels, run, ["P.1,2", "map", "ndcg_cut_10"])
    assert ev.measures == ["P@1", "P@2", "AP", "nDCG@10"]
    assert ev.column("P_2").tolist() == [0.5]
    args = [str(DATA / "qrels.test"), str(DATA / "results.test"), str(DATA / "results.trunc")]
    assert main(["compare", *args, "-m", "P_10", "--json"]) == 0
    assert "P@10" in capsys.readouterr().out


def test_a_bad_zscores_file_is_one_line_naming_the_line(tmp_path, capsys):
    bad = tmp_path / "z.txt"
    bad.write_text("301 map 0.1 0.2\n301 P_10 high 0.1\n")
    argv = ["eval", str(DATA / "qrels.test"), str(DATA / "results.test"), "--format", "trec",
            "-Z", str(bad)]
    assert main(argv) == 2
    assert f"{bad}:2: expected QID MEASURE MEAN STDDEV" in capsys.readouterr().err
    assert main(argv[:3] + ["-Z", str(bad)]) == 2  # -Z needs --format trec
    assert "-Z/--zscores goes with --format trec" in capsys.readouterr().err


def test_the_all_line_sums_in_trec_evals_order_as_doubles(tmp_path, capsys):
    """trec_eval adds each query's value to the summary in query order, one double addition
    at a time (meas_acc.c, te_acc_meas_a_cut: +=), over the queries sorted by id, then divides
    by their number (meas_avg.c, te_calc_avg_meas_a_cut). Here P@100 is k/100 with the k below
    (checked per query against pytrec_eval): added in order, the sum over 16 is
    1.4200000000000002, its mean 0.08875000000000002 prints as 0.0888; numpy's pairwise mean
    is 0.08875 exactly and printed 0.0887."""
    ks = [13, 18, 18, 5, 0, 19, 16, 6, 1, 5, 6, 6, 10, 9, 6, 4]
    qids = [f"q{i:02d}" for i in range(len(ks))]
    qrels = {q: {**{f"d{j}": 1 for j in range(k)}, "x": 0} for q, k in zip(qids, ks, strict=True)}
    run = {q: {f"d{j}": float(100 - j) for j in range(100)} for q in qids}
    (tmp_path / "q.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                              for d, g in docs.items()))
    (tmp_path / "r.run").write_text("".join(f"{q} Q0 {d} {i} {s} r\n" for q, docs in
                                            reversed(run.items())  # file order is not used
                                            for i, (d, s) in enumerate(docs.items(), 1)))
    import pytrec_eval
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P_100"}).evaluate(run)
    assert [theirs[q]["P_100"] for q in qids] == [k / 100 for k in ks]
    out = values(ours(capsys, str(tmp_path / "q.qrels"), str(tmp_path / "r.run"), "-m", "P.100",
                      "-m", "gm_map"))
    assert out[("P_100", "all")] == "0.0888"
    total = 0.0
    for k in ks:  # trec_eval's loop, as the C source writes it
        total += k / 100
    assert f"{total / len(ks):.4f}" == "0.0888"
