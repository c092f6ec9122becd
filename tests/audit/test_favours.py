"""The runs a judge favours (infer.favours, audit.favours): the judge-only score minus the
human-based estimate, its interval and flag, both rankings; through estimate and audit."""

from __future__ import annotations

import json

import numpy as np
import pytest

import reljudge
from reljudge.audit.favours import reference_favours
from reljudge.cli import main
from reljudge.infer.cells import RunEstimate
from reljudge.infer.favours import OVER, UNDER, favours_of
from reljudge.infer.sample import draw
from reljudge.infer.scores import estimate_runs
from reljudge.io.trec import read_run
from reljudge.metrics import evaluate
from reljudge.store import LabelStore
from reljudge.testing.synthetic import twin_world
from reljudge.trec_data import Qrels
from tests.bench_support import run_script
from tests.helpers import ROOT, Lazy, grade_sample

stats = Lazy("scipy.stats")


def _row(run: str, llm: float, ppi: float, low: float, high: float, exact: bool = False
         ) -> RunEstimate:
    return RunEstimate(run, "nDCG@10", llm, llm, llm, ppi, low, high, ppi, low, high, 1.0, 10,
                       10.0, exact=exact)


def test_the_bias_interval_is_the_estimate_interval_turned_around_the_judge_score():
    rows = [_row("a", 0.50, 0.40, 0.35, 0.45), _row("b", 0.30, 0.32, 0.25, 0.39),
            _row("c", 0.20, 0.30, 0.26, 0.34), _row("d", 0.25, 0.25, 0.25, 0.25, exact=True)]
    f = favours_of("nDCG@10", rows, [0.001, 0.6, 0.004, 1.0], 0.95, top=2)
    a, b, c, d = f.runs
    assert (a.bias, a.bias_low, a.bias_high) == pytest.approx((0.10, 0.05, 0.15))
    assert (a.flag, b.flag, c.flag, d.flag) == (OVER, None, UNDER, None)
    assert a.says() == "the judge over-rates a by 0.10 nDCG@10 [0.05, 0.15]"
    assert c.says() == "the judge under-rates c by 0.10 nDCG@10 [0.06, 0.14]"
    assert b.says() is None
    assert [r.rank_judge for r in f.runs] == [1, 2, 4, 3]  # 0.50, 0.30, 0.20, 0.25
    assert [r.rank_human for r in f.runs] == [1, 2, 3, 4]  # 0.40, 0.32, 0.30, 0.25
    # Holm over four runs: 0.001 * 4 and 0.004 * 3 are at most 0.05, both flags kept
    assert [r.p_holm for r in f.runs] == pytest.approx([0.004, 1.0, 0.012, 1.0])
    assert (a.holm, c.holm) == (True, True)
    assert f.tau_top == pytest.approx(1.0)  # a and b, the top two by the estimate
    assert f.tau_all == pytest.approx(stats.kendalltau([0.40, 0.32, 0.30, 0.25],
                                                       [0.50, 0.30, 0.20, 0.25])[0])
    headers, table = f.table()
    assert headers[2:4] == ["judge-only", "human-based"]
    assert [row[0] for row in table] == ["a", "b", "d", "c"]  # in the judge-only order
    assert table[2][4] == table[2][6] == "exact (census)"
    assert [r.run for r in f.flagged()] == ["a", "c"]


def test_holm_keeps_a_flag_only_where_the_corrected_p_value_allows():
    rows = [_row(n, 0.5, 0.4, 0.35, 0.45) for n in "abcde"]
    f = favours_of("P@10", rows, [0.02] * 5, 0.95)
    assert all(r.flag == OVER for r in f.runs)
    assert not any(r.holm for r in f.runs)  # 5 * 0.02 > 0.05


def _trial(world, seed: int, queries: int = 30) -> list:
    """One query sample of the twin world: the favours of its runs and the circular one."""
    pairs = [(q, d) for q, d, _ in world.human]
    s = draw(pairs, "srs-queries", 0, seed, queries=queries)
    found: list = []
    estimate_runs(s, world.judge, world.human, [*world.runs, world.circular], ["nDCG@10"],
                  bootstrap=20, favours=found)
    return found[0].runs


def test_the_twin_world_is_unbiased_for_its_runs_and_not_for_the_circular_one():
    w = twin_world(groups=20, docs=20, runs=4, seed=1)
    for run in w.runs:
        judge = evaluate(w.judge, run, ["nDCG@10", "AP"], all_queries=True).mean()
        human = evaluate(w.human, run, ["nDCG@10", "AP"], all_queries=True).mean()
        assert judge == pytest.approx(human, abs=1e-12)
    judge = evaluate(w.judge, w.circular, ["nDCG@10"], all_queries=True).mean()["nDCG@10"]
    human = evaluate(w.human, w.circular, ["nDCG@10"], all_queries=True).mean()["nDCG@10"]
    assert judge == pytest.approx(1.0) and human < 0.9


def test_a_query_sample_flags_the_circular_run_as_over_rated():
    runs = _trial(twin_world(seed=2), seed=5)
    circular = next(r for r in runs if r.run == "circular")
    assert circular.flag == OVER and circular.bias_low > 0
    assert circular.rank_judge == 1 and circular.rank_human > 1


def _upper(flags: int, n: int, confidence: float = 0.99) -> float:
    """One-sided Clopper-Pearson upper bound of a rate."""
    return 1.0 if flags == n else float(stats.beta.ppf(confidence, flags + 1, n - flags))


@pytest.mark.slow
def test_unbiased_runs_are_flagged_at_most_at_the_nominal_rate_and_the_circular_run_almost_always():
    """200 query samples (30 of 80 twin queries, nDCG@10): the flag rate of the 8 unbiased
    runs, whose 99 % upper bound must stay under 0.05 + 0.02; the circular run's power."""
    world = twin_world(seed=3)
    unbiased = circular = 0
    trials = 200
    for seed in range(trials):
        runs = _trial(world, seed)
        unbiased += sum(r.flag is not None for r in runs if r.run != "circular")
        circular += sum(r.flag == OVER for r in runs if r.run == "circular")
    n = trials * len(world.runs)
    assert _upper(unbiased, n) <= 0.07, f"{unbiased} of {n} unbiased runs flagged"
    assert circular / trials >= 0.9, f"the circular run flagged in {circular} of {trials}"


@pytest.mark.slow
def test_a_pair_sample_flags_unbiased_runs_at_most_at_the_nominal_rate_for_ndcg():
    """The ratio estimator of nDCG@10 from a stratified pair sample (10 % of the pool),
    80 draws: the same two properties."""
    world = twin_world(groups=30, docs=20, seed=4)
    pairs = [(q, d) for q, d, _ in world.judge]
    grades = {(q, d): g for q, d, g in world.judge}
    unbiased = circular = 0
    trials = 80
    for seed in range(trials):
        s = draw(pairs, "stratified-pairs", len(pairs) // 10, seed, grades=grades)
        found: list = []
        estimate_runs(s, world.judge, world.human, [*world.runs, world.circular],
                      ["nDCG@10"], bootstrap=200, seed=seed, favours=found)
        unbiased += sum(r.flag is not None for r in found[0].runs if r.run != "circular")
        circular += sum(r.flag == OVER for r in found[0].runs if r.run == "circular")
    n = trials * len(world.runs)
    assert _upper(unbiased, n) <= 0.08, f"{unbiased} of {n} unbiased runs flagged"
    assert circular / trials >= 0.9, f"the circular run flagged in {circular} of {trials}"


def _sampled_store(world, capsys) -> tuple:
    tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q",
                 "--design", "srs-queries", "--query-count", "12", "--seed", "3"]) == 0
    capsys.readouterr()
    grade_sample(store_path, truth, "q")
    return store_path, truth, runs


def test_the_api_and_the_cli_give_the_same_favours(world, capsys):
    store_path, _, runs = _sampled_store(world, capsys)
    assert main(["estimate", "--store", str(store_path), "--sample", "q", *map(str, runs),
                 "-m", "nDCG@10", "-m", "P@5", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["favours"]
    with LabelStore(store_path, create=False, readonly=True) as store:
        est = reljudge.estimate(store, [read_run(r) for r in runs], ["nDCG@10", "P@5"],
                                sample="q")
    assert est is not None and est.favours is not None
    assert cli == json.loads(json.dumps([f.to_json() for f in est.favours]))
    assert [f["measure"] for f in cli] == ["nDCG@10", "P@5"]
    row = {r.run: r for r in est.rows if r.measure == "nDCG@10"}
    for r in est.favours[0].runs:  # the bias is the judge-only score minus the estimate
        assert r.bias == pytest.approx(row[r.run].llm - row[r.run].ppi)
        assert (r.bias_low, r.bias_high) == pytest.approx(
            (row[r.run].llm - row[r.run].ppi_high, row[r.run].llm - row[r.run].ppi_low))
    assert main(["estimate", "--store", str(store_path), "--sample", "q", *map(str, runs),
                 "-m", "nDCG@10"]) == 0
    out = capsys.readouterr().out
    assert "judge-only" in out and "bias 95% CI" in out and "Kendall's tau-b" in out
    for said in est.favours[0].lines():
        assert said in out


def test_audit_and_estimate_give_the_same_bias_from_the_same_human_queries(world, capsys):
    store_path, truth, runs = _sampled_store(world, capsys)
    with LabelStore(store_path, create=False, readonly=True) as store:
        sampled = set(store.sample_pairs("q"))
        judge = store.source_grades("judge-a")
        est = reljudge.estimate(store, [read_run(r) for r in runs], "nDCG@10", sample="q")
    assert est is not None and est.favours is not None
    reference = Qrels.from_arrays(*zip(*[(q, d) for q, d in sampled], strict=True),
                                  np.array([truth[p] for p in sampled]))
    judge_q = Qrels.from_arrays(*zip(*judge, strict=True), np.array(list(judge.values())))
    res = reljudge.audit(reference, judge_q, [read_run(r) for r in runs], favours=True)
    audited = res.judges[0].favours
    assert audited is not None
    assert audited.runs == est.favours[0].runs


def test_a_full_reference_gives_the_exact_bias_and_flags_what_is_not_zero(world):
    _, _, truth, paths = world
    runs = [read_run(p) for p in paths]
    human = Qrels.from_dict(_nested(truth))
    lenient = Qrels.from_dict(_nested({p: min(3, g + 1) for p, g in truth.items()}))
    f = reference_favours(human, lenient, runs, "nDCG@10")
    for r, run in zip(f.runs, runs, strict=True):
        judged = evaluate(lenient, run, ["nDCG@10"], all_queries=True).mean()["nDCG@10"]
        truth_score = evaluate(human, run, ["nDCG@10"], all_queries=True).mean()["nDCG@10"]
        assert r.exact and r.bias == pytest.approx(judged - truth_score)
        assert r.bias_low == r.bias_high == pytest.approx(r.bias)
    same = reference_favours(human, human, runs, "nDCG@10")
    assert all(r.flag is None and r.bias == pytest.approx(0.0) for r in same.runs)


def test_a_reference_of_too_few_of_the_judges_queries_is_refused_in_one_line(world):
    _, _, truth, paths = world
    runs = [read_run(p) for p in paths]
    two = Qrels.from_dict({q: d for q, d in _nested(truth).items() if q in ("q0", "q1")})
    with pytest.raises(reljudge.InputError, match="labels 2 of the judge's 30 queries"):
        reference_favours(two, Qrels.from_dict(_nested(truth)), runs, "nDCG@10")


def _nested(grades: dict) -> dict:
    out: dict = {}
    for (q, d), g in grades.items():
        out.setdefault(q, {})[d] = g
    return out


def test_audit_prints_each_judges_favours_and_refuses_favours_without_runs(world, tmp_path,
                                                                         capsys):
    _, _, truth, runs = world
    ref = tmp_path / "human.qrels"
    ref.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in truth.items()))
    judge = tmp_path / "lenient.qrels"
    judge.write_text("".join(f"{q} 0 {d} {min(3, g + 1)}\n" for (q, d), g in truth.items()))
    assert main(["audit", "--reference", str(ref), "--judge", str(judge), *map(str, runs),
                 "--favours"]) == 0
    out = capsys.readouterr().out
    assert "the runs lenient favours (nDCG@10, against human.qrels)" in out
    assert "exact (census)" in out and "the judge over-rates sys" in out
    assert main(["audit", "--reference", str(ref), "--judge", str(judge), *map(str, runs),
                 "--favours", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["favours_by_measure"]["nDCG@10"]["lenient"]["runs"][0]["exact"] is True
    assert main(["audit", "--reference", str(ref), "--judge", str(judge), "--favours"]) == 2
    assert "--favours compares runs" in capsys.readouterr().err


LLMJUDGE = ROOT / ".." / "shared" / "data" / "llmjudge"
UMBRELA = LLMJUDGE / "llm" / "labels" / "willia-umbrela1.txt"


@pytest.mark.slow
@pytest.mark.skipif(not UMBRELA.exists(), reason="no LLMJudge data beside the checkout")
def test_a_real_judge_over_rates_the_run_ranked_by_its_own_grades(tmp_path, capsys):
    """LLMJudge (TREC DL 2023, 25 queries): a store with the UMBRELA judge's labels, a
    stratified pair sample of 20 % drawn by `reljudge sample` and graded with the NIST
    labels; runs: the judge's own grades as scores (circular) and four other judges'. The
    circular run is flagged over-rated, and every flag agrees in sign with the bias that
    all the NIST labels give (`audit --favours`, a census)."""
    from reljudge.io.label_files import read_judge

    human, _ = read_judge(LLMJUDGE / "human" / "test.qrels")
    truth = {(q, d): g for q, d, g in human}
    store_path = tmp_path / "dl23.sqlite"
    umbrela, _ = read_judge(UMBRELA, clip=True)
    with LabelStore(store_path) as store:
        store.add_grades(list(umbrela), "llm", "umbrela")
    runs = []
    for name in ("willia-umbrela1", "Olz-gpt4o", "h2oloo-fewself", "TREMA-4prompts",
                 "NISTRetrieval-instruct0"):
        labels, _ = read_judge(LLMJUDGE / "llm" / "labels" / f"{name}.txt", clip=True)
        tag = "circular" if name == "willia-umbrela1" else name
        runs.append(tmp_path / f"{tag}.run")
        runs[-1].write_text("".join(f"{q} Q0 {d} 0 {g} {tag}\n" for q, d, g in labels))
    assert main(["sample", "--store", str(store_path), "--judge", "umbrela", "--name", "s",
                 "--design", "stratified-pairs", "--budget", "885", "--seed", "1"]) == 0
    grade_sample(store_path, truth, "s")
    capsys.readouterr()
    assert main(["estimate", "--store", str(store_path), "--sample", "s", *map(str, runs),
                 "-m", "nDCG@10", "--json"]) == 0
    favours = json.loads(capsys.readouterr().out)["favours"][0]["runs"]
    ref = tmp_path / "human.qrels"
    ref.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in human))
    assert main(["audit", "--reference", str(ref), "--judge", str(UMBRELA), "--clip",
                 *map(str, runs), "--favours", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)["favours_by_measure"]["nDCG@10"]
    census = {r["run"]: r["bias"] for r in exact["willia-umbrela1"]["runs"]}
    flags = {r["run"]: r["flag"] for r in favours}
    assert flags["circular"] == OVER and census["circular"] > 0.1
    for r in favours:
        if r["flag"]:
            assert (census[r["run"]] > 0) == (r["flag"] == OVER), r


@pytest.mark.slow
def test_the_favours_bench_runs_end_to_end(monkeypatch, capsys):
    """bench/favours.py with tiny settings (the real judges part skips without the data)."""
    run_script(ROOT / "bench" / "favours.py", ["--trials", "2", "--judges", "1", "--draws", "1",
                                               "--bootstrap", "20"], monkeypatch)
    out = capsys.readouterr().out
    assert "| twins | srs-queries | 2 | 8 |" in out, out
    assert "(true bias +" in out, out
    if UMBRELA.exists():
        assert "| all 1 |" in out, out
