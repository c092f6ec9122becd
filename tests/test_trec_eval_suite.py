"""trec_eval 10's own test suite (tests/data/trec_eval, see its README) through our CLI:
every `quicktest` line whose measures we all offer is reproduced byte for byte; on the others
every value of a measure we offer is compared, and the measures we do not offer yet are
listed (so that this test says when one is added without its lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.errors import MeasureError
from reljudge.metrics.trec_names import ORDER, trec_measures

DATA = Path(__file__).parent / "data" / "trec_eval"
OFFERED = [name for name, spec in ORDER.items() if spec is not None or name in ("runid",
                                                                                  "num_q")]
NOT_OFFERED = {name for name, spec in ORDER.items() if spec is None} - {"runid", "num_q"}


def ours(capsys, *args: str) -> str:
    assert main(["eval", *args, "--format", "trec"]) == 0
    return capsys.readouterr().out


def values(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        out[(name.rstrip(), qid)] = value
    return out


def offered(name: str) -> bool:
    """A printed name we compute (P_10 yes; ndcg_1=3,2=9,4=4.5 and Rprec_mult_0.20 not yet)."""
    try:
        return trec_measures([name]) is not None
    except MeasureError:
        return False


def base(name: str) -> str:
    """A printed name's measure: P_10 -> P, iprec_at_recall_0.10 -> iprec_at_recall."""
    for b in sorted(ORDER, key=len, reverse=True):
        if name == b or name.startswith(b + "_"):
            return b
    raise AssertionError(f"unknown trec_eval measure {name}")


@pytest.mark.parametrize("qrels, run, expected", [
    ("qrels.test", "results.test", "out.test"),
    ("qrels.test.with-comments", "results.test", "out.test"),
    ("qrels.comment.test.gz", "results.comment.test.gz", "out.comment.test"),
])
def test_the_official_measures_are_trec_evals_output_byte_for_byte(capsys, qrels, run,
                                                                  expected):
    assert ours(capsys, str(DATA / qrels), str(DATA / run)) == (DATA / expected).read_text()


ALL_TREC = [m for name in OFFERED for m in ("-m", name)]


@pytest.mark.parametrize("qrels, flags, run, expected, compared", [
    ("qrels.test", [], "results.test", "out.test.a", 96),
    ("qrels.test", ["-q"], "results.test", "out.test.aq", 372),
    ("qrels.test", ["-q", "-c"], "results.trunc", "out.test.aqc", 372),
    ("qrels.test", ["-q", "-c", "-M", "100"], "results.trunc", "out.test.aqcM", 372),
    ("qrels.rel_level", ["-q", "-l", "2"], "results.test", "out.test.aql", 372),
])
def test_every_value_of_all_trec_we_offer_is_trec_evals(capsys, qrels, flags, run, expected,
                                                        compared):
    got = values(ours(capsys, str(DATA / qrels), str(DATA / run), *flags, *ALL_TREC))
    want = values((DATA / expected).read_text())
    mine = {k: v for k, v in want.items() if offered(k[0])}
    assert {k: got.get(k) for k in mine} == mine
    assert set(got) == set(mine)  # nothing more, nothing less
    assert len(mine) == compared
    assert {base(k[0]) for k in want} - set(OFFERED) <= NOT_OFFERED


def test_the_parameterised_line_is_trec_evals_output_byte_for_byte(capsys):
    """The Makefile's line as written (-mX attached, its parameter syntax throughout)."""
    argv = ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m",
            "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m",
            "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20", str(DATA / "qrels.test"), str(DATA / "results.test")]
    assert ours(capsys, *argv) == (DATA / "out.test.meas_params").read_text()


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
    with pytest.raises(MeasureError, match="all_trec includes measures reljudge does not "
                                           "offer yet: G, ndcg_rel, Rndcg, relstring"):
        trec_measures(["all_trec"])
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
