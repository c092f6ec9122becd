"""`reljudge sample` and `reljudge estimate` end to end on a real SQLite store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.metrics import evaluate
from reljudge.store import LabelStore
from reljudge.trec_data import Qrels, Run
from tests.helpers import ND, NQ
from tests.helpers import grade_sample as _grade


def test_query_sample_then_estimate_shows_three_columns_and_covers(world, capsys):
    tmp, store_path, truth, runs = world
    out = tmp / "q.jsonl"
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q10",
                 "--design", "srs-queries", "--query-count", "10", "--seed", "3",
                 "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 10 * ND and lines[0]["query"].startswith("query ")
    assert "have no query or passage text" in capsys.readouterr().err  # no passage texts
    _grade(store_path, truth, "q10")
    assert main(["estimate", "--store", str(store_path), "--sample", "q10", *map(str, runs),
                 "-m", "nDCG@10", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    qrels = Qrels.from_dict(_as_dict(truth))
    for row in res["runs"]:
        run = Run.from_arrays(*_read(runs[int(row["run"][-1])]), name=row["run"])
        human_truth = evaluate(qrels, run, ["nDCG@10"], all_queries=True).mean()["nDCG@10"]
        assert row["ppi_low"] <= human_truth <= row["ppi_high"]
        assert row["human_labels"] == 10
        assert row["llm"] != pytest.approx(row["ppi"])
    assert len(res["differences"]) == 1 and 0 <= res["differences"][0]["p"] <= 1
    assert main(["estimate", "--store", str(store_path), "--sample", "q10",
                 *map(str, runs)]) == 0
    table = capsys.readouterr().out
    for col in ("llm 95% CI", "human 95% CI", "ppi 95% CI", "worth", "p (ppi)",
                "sys1 - sys0"):
        assert col in table


def test_pair_sample_estimate_for_dcg_and_refusal_for_ap(world, capsys):
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "p",
                 "--design", "stratified-pairs", "--budget", "120"]) == 0
    _grade(store_path, truth, "p")
    assert main(["estimate", "--store", str(store_path), "--sample", "p", *map(str, runs),
                 "-m", "DCG@10", "-m", "P@5", "--format", "csv"]) == 0
    assert capsys.readouterr().out.count("\n") >= 5
    assert main(["estimate", "--store", str(store_path), "--sample", "p", str(runs[0]),
                 "-m", "AP"]) == 2
    assert "draw a query-level sample" in capsys.readouterr().err


def test_errors_are_one_line_and_write_nothing(world, capsys):
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "nobody", "--name", "x",
                 "--budget", "20"]) == 2
    assert "known sources: judge-a" in capsys.readouterr().err
    out = tmp / "x.tsv"
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "x",
                 "--budget", "3", "--out", str(out)]) == 2
    assert "cannot give every stratum" in capsys.readouterr().err and not out.exists()
    with LabelStore(store_path) as store:
        assert store.sample_names() == []
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "x",
                 "--design", "srs-pairs", "--budget", "30"]) == 0
    capsys.readouterr()
    assert main(["estimate", "--store", str(store_path), "--sample", "x", str(runs[0]),
                 "-m", "DCG@10"]) == 2
    assert "not fully graded: 30 of 30 pairs" in capsys.readouterr().err
    assert main(["estimate", "--store", str(store_path), "--sample", "y", str(runs[0])]) == 2
    assert "known samples: x" in capsys.readouterr().err


def _as_dict(truth):
    out: dict = {}
    for (q, d), g in truth.items():
        out.setdefault(q, {})[d] = g
    return out


def _read(path):
    rows = [ln.split() for ln in path.read_text().splitlines()]
    return [r[0] for r in rows], [r[2] for r in rows], np.array([float(r[4]) for r in rows])


def test_compare_and_report_show_estimates_when_the_store_has_a_graded_sample(world, capsys):
    tmp, store_path, truth, runs = world
    qrels = tmp / "judge.qrels"
    with LabelStore(store_path) as store:
        grades = store.source_grades("judge-a")
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()))
    args = ["compare", str(qrels), *map(str, runs), "-m", "nDCG@10", "--store", str(store_path)]
    assert main(args) == 0
    assert "ppi 95% CI" not in capsys.readouterr().out  # no sample yet: nothing added
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q",
                 "--design", "srs-queries", "--query-count", "8"]) == 0
    assert main(args) == 0
    assert "ppi 95% CI" not in capsys.readouterr().out  # drawn but not graded: nothing added
    _grade(store_path, truth, "q")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ppi 95% CI" in out and "sample 'q' (srs-queries)" in out
    assert main([*args, "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimates"]
    assert est["sample"] == "q" and len(est["runs"]) == 2 and len(est["differences"]) == 1
    page = tmp / "r.html"
    assert main(["report", str(qrels), *map(str, runs), "-m", "nDCG@10", "--store",
                 str(store_path), "--out", str(page)]) == 0
    text = page.read_text()
    assert "Scores under human labels" in text and "sample &#x27;q&#x27;" in text


def test_pair_sample_from_a_run_pool_estimates_the_pool_score(world, capsys):
    tmp, store_path, truth, runs = world
    queries = tmp / "q.tsv"
    queries.write_text("".join(f"q{q}\tnew text {q}\n" for q in range(NQ)))
    passages = tmp / "p.jsonl"
    passages.write_text("".join(json.dumps({"docid": d, "text": f"passage {d}"}) + "\n"
                                for _, d in truth))
    out = tmp / "pool.tsv"
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "pool",
                 *map(str, runs), "--depth", "5", "--design", "srs-pairs",
                 "--budget", "150", "--seed", "2", "--out", str(out),
                 "--queries-file", str(queries), "--passages-file", str(passages)]) == 0
    assert "no query or passage text" not in capsys.readouterr().err
    rows = [ln.split("\t") for ln in out.read_text().splitlines()[1:]]
    assert len(rows) == 150 and rows[0][3].startswith("new text") and rows[0][4].startswith(
        "passage ")
    with LabelStore(store_path) as store:
        s = store.sample("pool")
    pool = {tuple(p) for p in s.params["population"]}
    assert s.params["strata"]["all"]["population"] == len(pool) < len(truth)
    _grade(store_path, truth, "pool")
    assert main(["estimate", "--store", str(store_path), "--sample", "pool", *map(str, runs),
                 "-m", "DCG@5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    pool_qrels = Qrels.from_dict(_as_dict({p: g for p, g in truth.items() if p in pool}))
    for row in res["runs"]:
        run = Run.from_arrays(*_read(runs[int(row["run"][-1])]), name=row["run"])
        target = evaluate(pool_qrels, run, ["DCG@5"], all_queries=True).mean()["DCG@5"]
        assert row["ppi_low"] <= target <= row["ppi_high"]
        assert row["human_low"] <= target <= row["human_high"]


def test_small_query_sample_warns_at_draw_time_and_on_every_estimate(world, capsys):
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q",
                 "--design", "srs-queries", "--query-count", "6"]) == 0
    err = capsys.readouterr().err
    assert "a sample of 6 of 30 queries" in err and "Recommended: --query-count 20 or more" in err
    _grade(store_path, truth, "q")
    assert main(["estimate", "--store", str(store_path), "--sample", "q", *map(str, runs),
                 "-m", "nDCG@10", "--json"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    assert all("from 6 sampled queries" in r["warning"] for r in res["runs"] + res["differences"])
    assert len(res["warnings"]) == 3 and cap.err.count("warning: ") == 3
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "all",
                 "--design", "srs-queries", "--query-count", str(NQ)]) == 0
    assert "warning" not in capsys.readouterr().err  # every query: no sampling error
    _grade(store_path, truth, "all")
    assert main(["estimate", "--store", str(store_path), "--sample", "all", *map(str, runs),
                 "-m", "nDCG@10", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["warnings"] == [] and "warning" not in cap.err


def test_small_pair_sample_warns_with_a_budget_that_clears_the_warning(world, capsys):
    tmp, store_path, truth, runs = world
    common = ["sample", "--store", str(store_path), "--judge", "judge-a",
              *map(str, runs), "--depth", "10", "--design", "stratified-pairs"]
    assert main([*common, "--name", "small", "--budget", "16"]) == 0
    err = capsys.readouterr().err
    assert "warning: this sample puts about" in err
    budget = int(err.split("Recommended: --budget ")[1].split()[0])
    _grade(store_path, truth, "small")
    assert main(["estimate", "--store", str(store_path), "--sample", "small", *map(str, runs),
                 "-m", "DCG@10"]) == 0
    cap = capsys.readouterr()
    assert "sampled pairs in the run's top 10" in cap.err and "ppi 95% CI" in cap.out
    assert 16 < budget <= 4 * 16  # 16 * 25 / (expected top-10 pairs, ~14 of them)
    assert main([*common, "--name", "enough", "--budget", str(budget)]) == 0
    assert "warning" not in capsys.readouterr().err


def _judge_qrels_and_graded_queries(tmp, store_path, truth, count: int):
    """judge-a's labels written as qrels, and a sample "q" of ``count`` queries graded by
    the annotators (from ``truth``); the qrels path."""
    qrels = tmp / "judge.qrels"
    with LabelStore(store_path) as store:
        grades = store.source_grades("judge-a")
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()))
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q",
                 "--design", "srs-queries", "--query-count", str(count)]) == 0
    _grade(store_path, truth, "q")
    return qrels


def test_compare_and_report_carry_the_warning(world, capsys):
    tmp, store_path, truth, runs = world
    qrels = _judge_qrels_and_graded_queries(tmp, store_path, truth, 5)
    capsys.readouterr()
    args = ["compare", str(qrels), *map(str, runs), "-m", "nDCG@10", "--store", str(store_path)]
    assert main([*args, "--json"]) == 0
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)["estimates"]["warnings"]) == 3 and "5 sampled" in cap.err
    page = tmp / "r.html"
    assert main(["report", str(qrels), *map(str, runs), "-m", "nDCG@10", "--store",
                 str(store_path), "--out", str(page)]) == 0
    assert page.read_text().count('<p class="warning">warning: ') == 3


def test_pair_sample_without_runs_warns_from_the_largest_possible_top_k(world, capsys):
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "s",
                 "--design", "srs-pairs", "--budget", "10"]) == 0
    err = capsys.readouterr().err  # a top 10 holds at most 300 of the 360 pairs: ~8.3 of 10
    assert "at most 300 of the 360 pairs" in err and "about 8.3" in err
    assert "give RUN files" in err and "Recommended: --budget of at least 30" in err
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "t",
                 "--design", "srs-pairs", "--budget", "30"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_compare_with_store_as_csv_is_one_table_and_json_has_the_estimates(world, capsys):
    import csv
    import io

    tmp, store_path, truth, runs = world
    qrels = _judge_qrels_and_graded_queries(tmp, store_path, truth, 8)
    capsys.readouterr()
    args = ["compare", str(qrels), *map(str, runs), "-m", "nDCG@10", "-m", "RR",
            "--format", "csv"]
    assert main(args) == 0
    without_store = capsys.readouterr().out
    assert main([*args, "--store", str(store_path)]) == 0
    cap = capsys.readouterr()
    assert cap.out == without_store  # the comparison table, and nothing after it
    rows = list(csv.reader(io.StringIO(cap.out)))
    assert len({len(r) for r in rows}) == 1 and len(rows) == 1 + 2  # header, one row per run
    assert "estimates from sample 'q' are in --format json" in cap.err
    assert main([*args[:-2], "--json", "--store", str(store_path)]) == 0
    assert json.loads(capsys.readouterr().out)["estimates"]["sample"] == "q"


def test_an_undone_grade_is_no_human_truth_for_estimate(world, capsys):
    """A grade its annotator took back (assess's undo) leaves the pair ungraded for estimate,
    as for merge, stats and audit: the sample is then not fully graded (it was taken as
    graded before)."""
    from reljudge.labels import RETRACTED, LabelEvent

    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q8",
                 "--design", "srs-queries", "--query-count", "8", "--seed", "1"]) == 0
    _grade(store_path, truth, "q8")
    with LabelStore(store_path) as store:
        q, d = store.sample_pairs("q8")[0]
        store.add_events([LabelEvent(q, d, None, "human", "ann1", failure=RETRACTED)])
    capsys.readouterr()
    assert main(["estimate", "--store", str(store_path), "--sample", "q8",
                 *map(str, runs)]) == 2
    assert "is not fully graded" in capsys.readouterr().err


def test_a_teams_grades_reach_estimate_as_labels_merge_adjudicated_first_merges_them(world):
    """Two annotators on a sample, disagreeing on some pairs, one adjudicator settling them:
    estimate's human truth is the merge's (adjudicated-first, human sources), and with the
    adjudicated grades equal to the truth the estimate equals the one-annotator estimate."""
    from reljudge.infer.scores import estimate, human_truth
    from reljudge.labels import LabelEvent

    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q6",
                 "--design", "srs-queries", "--query-count", "6", "--seed", "2"]) == 0
    run_objs = [Run.from_arrays(*_read(r), name=f"sys{i}") for i, r in enumerate(runs)]
    _grade(store_path, truth, "q6")
    with LabelStore(store_path) as store:
        alone = estimate(store, run_objs, ["nDCG@10"], sample="q6")
        pairs = store.sample_pairs("q6")
        other = {p: (truth[p] + 1) % 4 if k % 3 == 0 else truth[p] for k, p in enumerate(pairs)}
        store.add_events([LabelEvent(*p, g, "human", "ann2", meta={"sample": "q6"})
                          for p, g in other.items()])
        disputed = [p for p in pairs if other[p] != truth[p]]
        merged = {(lab.qid, lab.docid): int(lab.grade)
                  for lab in store.merge("adjudicated-first").labels if (lab.qid, lab.docid)
                  in set(pairs)}
        assert human_truth(store, set(pairs)) == merged  # two paths, one answer
        assert all(merged[p] == min(truth[p], other[p]) for p in disputed)  # a tie: lower
        store.add_events([LabelEvent(*p, truth[p], "human", "adjudicated:dan",
                                     meta={"sample": "q6"}) for p in disputed])
        assert human_truth(store, set(pairs)) == {p: truth[p] for p in pairs}
        settled = estimate(store, run_objs, ["nDCG@10"], sample="q6")
        assert human_truth(store, set(pairs), "ann2") == other
    assert [(r.run, r.ppi, r.ppi_low, r.ppi_high) for r in settled.rows] == \
        [(r.run, r.ppi, r.ppi_low, r.ppi_high) for r in alone.rows]


def test_estimate_p5_from_a_small_sample_respects_the_measure_and_says_its_uncertainty(world,
                                                                                     capsys):
    """P@5 printed an interval outside [0, 1] (here [-0.1625, 2.1625]), a
    difference row ppi [-0.0200, -0.0200] p 0.0000 from 8 of 360 pairs (a judge that agreed
    with every sampled grade) and worth 360.0000; now intervals stay in the range, the
    difference row has a width and a p-value above 0, counts are integers, and each
    warning is its own line."""
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "s",
                 "--design", "srs-pairs", "--budget", "8", "--seed", "0"]) == 0
    _grade(store_path, truth, "s")
    capsys.readouterr()
    assert main(["estimate", "--store", str(store_path), "--sample", "s", *map(str, runs),
                 "-m", "P@5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for row in res["runs"]:
        assert 0 <= row["human_low"] <= row["human_high"] <= 1
        assert 0 <= row["ppi_low"] <= row["ppi_high"] <= 1
    (diff,) = res["differences"]
    assert -1 <= diff["ppi_low"] < diff["ppi_high"] <= 1 and diff["p"] > 0.05
    assert "stratum/strata short of a census had all sampled values equal" in diff["warning"]
    assert main(["estimate", "--store", str(store_path), "--sample", "s", *map(str, runs),
                 "-m", "P@5"]) == 0
    out, err = capsys.readouterr()
    worth = [line.split()[-1] for line in out.splitlines() if line.startswith("sys0 ")]
    assert worth and worth[0].isdigit()  # an integer count, not 9.1000
    assert " 0.0000\n" not in out and "-0.0200]" not in out
    lines = err.splitlines()
    assert len(lines) == 3 and all(line.startswith("warning: ") for line in lines)


def test_each_estimate_warning_starts_its_own_line_in_every_display(world):
    """'...(docs/ppi.md)warning: south P@5: ...': the note and the warnings ran
    together where the notes were joined without a line break (the notebook display)."""
    import re

    from reljudge.infer.scores import estimate
    from reljudge.io.trec import read_runs

    _tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "s",
                 "--design", "srs-pairs", "--budget", "8", "--seed", "0"]) == 0
    _grade(store_path, truth, "s")
    with LabelStore(store_path, create=False) as store:
        est = estimate(store, read_runs([str(r) for r in runs]), ["P@5"], sample="s")
    assert len(est.warnings()) == 3
    for shown in (str(est), re.sub(r"<[^>]+>", "", est._repr_html_())):
        lines = shown.splitlines()
        assert sum(line.startswith("warning: ") for line in lines) == 3
        assert "warning:" not in shown.replace("\nwarning: ", "\n")  # none mid-line


def test_estimate_ranks_the_runs_with_the_orders_the_sample_supports(world, capsys):
    """--json carries each measure's ranking (every pair's paired difference, p and
    Holm-corrected p, the supported order) and the table prints it; one run: no ranking,
    said."""
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "p",
                 "--design", "stratified-pairs", "--budget", "200", "--seed", "1"]) == 0
    _grade(store_path, truth, "p")
    capsys.readouterr()
    args = ["estimate", "--store", str(store_path), "--sample", "p", "-m", "DCG@10"]
    assert main([*args, *map(str, runs), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    (ranking,) = res["rankings"]
    assert ranking["measure"] == "DCG@10" and ranking["correction"] == "Holm"
    assert ranking["family"] == "all pairs of runs per measure" and ranking["alpha"] == 0.05
    assert [r["rank"] for r in ranking["runs"]] == [1, 2]
    assert {r["run"] for r in ranking["runs"]} == {"sys0", "sys1"}
    (pair,) = ranking["pairs"]
    assert pair["supported"] == "sys0 > sys1" and pair["p_holm"] <= 0.05  # noise 0.5 vs 2.0
    assert ranking["runs"][0]["above"] == ["sys1"] and ranking["runs"][1]["below"] == ["sys0"]
    assert "Holm-corrected over all pairs of runs per measure" in res["ranking_note"]
    assert main([*args, *map(str, runs)]) == 0
    out = capsys.readouterr().out
    assert "significantly above" in out and "ranking: the LLM-only order" in out
    assert main([*args, str(runs[0]), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["rankings"] == [] and res["ranking_note"].startswith("no ranking")
    assert main([*args, str(runs[0])]) == 0
    assert "no ranking: it needs at least two runs" in capsys.readouterr().out


def test_no_ranking_skips_the_pairs_of_runs_and_changes_nothing_else(world, capsys):
    """--no-ranking: no pair of runs estimated, the note says the ranking was not asked
    for, and every row, difference and bias is the one printed with the ranking."""
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "p",
                 "--design", "stratified-pairs", "--budget", "200", "--seed", "1"]) == 0
    _grade(store_path, truth, "p")
    capsys.readouterr()
    args = ["estimate", "--store", str(store_path), "--sample", "p", "-m", "DCG@10",
            "-m", "P@5", *map(str, runs), "--json"]
    assert main(args) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert main([*args, "--no-ranking"]) == 0
    skipped = json.loads(capsys.readouterr().out)
    assert len(ranked["rankings"]) == 2 and skipped["rankings"] == []
    assert skipped["ranking_note"] == "no ranking: not asked for"
    assert {k: v for k, v in skipped.items() if not k.startswith("ranking")} == {
        k: v for k, v in ranked.items() if not k.startswith("ranking")}
    assert main([*args[:-1], "--no-ranking"]) == 0
    out = capsys.readouterr().out
    assert "significantly above" not in out and "no ranking: not asked for" in out


def test_report_leaves_out_a_run_the_sample_does_not_speak_for_and_says_so(world, capsys):
    """A report from a store whose sample was drawn from another pool used to fail whole
    ("run ...: N of its top-5 pairs are outside the pool"): it now estimates the runs the
    sample serves and names each one left out; `estimate` itself still refuses."""
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "one",
                 str(runs[0]), "--depth", "5", "--design", "srs-pairs",
                 "--budget", "60", "--seed", "1"]) == 0
    _grade(store_path, truth, "one")
    capsys.readouterr()
    qrels = tmp / "judge.qrels"
    with LabelStore(store_path) as store:
        grades = store.source_grades("judge-a")
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()))
    page = tmp / "r.html"
    assert main(["report", str(qrels), *map(str, runs), "-m", "DCG@5", "--store",
                 str(store_path), "--out", str(page)]) == 0
    text = page.read_text()
    assert "Scores under human labels" in text
    assert "warning: not estimated: run sys1: " in text and "not estimated: run sys0" not in text
    assert main(["estimate", "--store", str(store_path), "--sample", "one", *map(str, runs),
                 "-m", "DCG@5"]) == 2
    assert "run sys1: " in capsys.readouterr().err


@pytest.mark.slow  # two estimates of nDCG in fresh interpreters
def test_estimate_has_blas_threads_sleep_when_idle_unless_the_user_set_it(world, capsys):
    """`estimate`'s few small products: OpenBLAS's workers, spinning 2^28 cycles after numpy
    starts and after each product, only burned CPU. They sleep at once instead
    (OPENBLAS_THREAD_TIMEOUT=4, read when numpy loads), a user's own setting is kept, and
    the output is the same byte for byte."""
    import os
    import subprocess
    import sys

    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "p",
                 "--design", "stratified-pairs", "--budget", "120"]) == 0
    _grade(store_path, truth, "p")
    code = ("import os, sys\nfrom reljudge.cli import main\ncode = main(sys.argv[1:])\n"
            "print(code, os.environ.get('OPENBLAS_THREAD_TIMEOUT'), file=sys.stderr)\n")
    outputs = []
    for user in (None, "28"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if user:
            env["OPENBLAS_THREAD_TIMEOUT"] = user
        done = subprocess.run([sys.executable, "-c", code, "estimate", "--store",
                               str(store_path), "--sample", "p", *map(str, runs), "-m",
                               "DCG@10", "-m", "nDCG@10", "--format", "json"], env=env,
                              capture_output=True, text=True, check=True)
        assert done.stderr.splitlines()[-1].split() == ["0", user or "4"]
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])["runs"]
