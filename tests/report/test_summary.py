"""report.summary: the report's sentences and warnings (Landis & Koch's words for kappa, the
200-pair and 5-run thresholds, significance after the correction, coverage without a test)."""

from __future__ import annotations

import pytest

from reljudge.audit import audit
from reljudge.report.summary import (
    MIN_PAIRS,
    MIN_RUNS,
    TAU_CAVEAT,
    comparison_summary,
    judge_summary,
    landis_koch,
)
from reljudge.stats import compare
from reljudge.trec_data import Qrels, Run


@pytest.mark.parametrize(("kappa", "word"), [
    (-1.0, "poor"), (-0.001, "poor"), (0.0, "slight"), (0.2, "slight"), (0.2001, "fair"),
    (0.21, "fair"), (0.4, "fair"), (0.41, "moderate"), (0.6, "moderate"),
    (0.61, "substantial"), (0.8, "substantial"), (0.8001, "almost perfect"),
    (0.81, "almost perfect"), (1.0, "almost perfect")])
def test_landis_koch_words_at_the_band_boundaries(kappa, word):
    assert landis_koch(kappa) == word


def test_landis_koch_boundaries_survive_float_noise():
    assert landis_koch(0.1 + 0.1) == "slight"  # 0.2 up to rounding
    assert landis_koch(0.7 + 0.1) == "substantial"  # 0.7999999999999999
    assert landis_koch(3 * 0.2) == "moderate"  # 0.6000000000000001


def test_landis_koch_refuses_an_undefined_kappa():
    with pytest.raises(ValueError):
        landis_koch(float("nan"))


def labels(pairs: int, flip: bool = False) -> Qrels:
    """``pairs`` labels over queries of 10 documents; ``flip`` changes every third grade."""
    data: dict[str, dict[str, int]] = {}
    for k in range(pairs):
        g = k % 4
        if flip and k % 3 == 0:
            g = (g + 1) % 4
        data.setdefault(f"q{k // 10}", {})[f"d{k}"] = g
    return Qrels.from_dict(data)


def runs_over(qrels: Qrels, n: int) -> list[Run]:
    """``n`` runs ranking every judged document, each in a different order."""
    data = qrels.to_dict()
    return [Run.from_dict({q: {d: float((i * 7919 + int(d[1:]) * 104729) % 97)
                               for d in docs} for q, docs in data.items()}, name=f"run{i}")
            for i in range(n)]


@pytest.mark.parametrize(("pairs", "warned"), [(MIN_PAIRS - 1, True), (MIN_PAIRS, False),
                                               (44, True), (500, False)])
def test_a_warning_when_fewer_than_200_pairs_back_the_agreement(pairs, warned):
    ref = labels(pairs)
    s = judge_summary(audit(ref, {"j": labels(pairs, flip=True)}, runs_over(ref, 6)))
    pair_warnings = [w for w in s.warnings if "pairs, fewer than 200" in w]
    assert bool(pair_warnings) is warned
    if warned:
        assert f"rest on {pairs} pairs" in pair_warnings[0]
    assert any(f"over {pairs} pairs" in line and "(Landis & Koch 1977)" in line
               for line in s.lines)


@pytest.mark.parametrize(("runs", "warned"), [(2, True), (3, True), (MIN_RUNS - 1, True),
                                              (MIN_RUNS, False), (8, False)])
def test_a_warning_when_fewer_than_5_runs_back_kendall_tau(runs, warned):
    ref = labels(300)
    s = judge_summary(audit(ref, {"j": labels(300, flip=True)}, runs_over(ref, runs)))
    tau_warnings = [w for w in s.warnings if "Kendall tau is computed from" in w]
    assert bool(tau_warnings) is warned
    if runs == 2:
        assert "it means nothing" in tau_warnings[0]
    assert any("Kendall tau" in line and f"over {runs} runs" in line for line in s.lines)
    assert s.lines.count(TAU_CAVEAT) == 1
    assert not [w for w in s.warnings if "fewer than 200" in w]


def test_the_summary_reads_the_judges_kappa_in_words():
    ref = labels(400)
    res = audit(ref, {"j": labels(400, flip=True)}, runs_over(ref, 5))
    kappa = res.judges[0].items.stats["kappa"]
    line = judge_summary(res).lines[0]
    assert f"Cohen's kappa {kappa:.3f} over 400 pairs, {landis_koch(kappa)} agreement" in line
    assert "95% CI" not in line  # no bootstrap, no interval


def test_the_kappa_interval_is_read_in_words_at_both_ends():
    ref = labels(400)
    judge = labels(400, flip=True).to_dict()
    for k, q in enumerate(sorted(judge)):  # a judge that is worse on some queries than others
        if k % 2:
            judge[q] = {d: (g + 2) % 4 for d, g in judge[q].items()}
    res = audit(ref, {"j": Qrels.from_dict(judge)}, runs_over(ref, 5), bootstrap=300)
    lo, hi = res.judges[0].items.ci["kappa"]
    assert lo < hi
    words = landis_koch(lo), landis_koch(hi)
    span = words[0] if words[0] == words[1] else f"{words[0]} to {words[1]}"
    line = judge_summary(res).lines[0]
    assert f", 95% CI {lo:.3f} to {hi:.3f} over resampled queries ({span})" in line


def ranked(name: str, rank_of_relevant: int, queries: int) -> Run:
    """A run that puts the one relevant document d0 at ``rank_of_relevant`` for each query."""
    data = {}
    for i in range(queries):
        order = [f"d{j}" for j in range(1, 5)]
        order.insert(rank_of_relevant - 1, "d0")
        data[f"q{i}"] = {d: float(10 - r) for r, d in enumerate(order)}
    return Run.from_dict(data, name=name)


def graded(queries: int) -> Qrels:
    return Qrels.from_dict({f"q{i}": {"d0": 3, "d1": 0, "d2": 0, "d3": 0, "d4": 0}
                            for i in range(queries)})


def test_best_run_and_significant_differences_after_the_correction():
    runs = [ranked("base", 3, 30), ranked("good", 1, 30), ranked("worse", 5, 30)]
    comp = compare(graded(30), runs, ["nDCG@10", "Judged@10"], trials=2000)
    s = comparison_summary(comp)
    assert s.lines[0].startswith("Best run on nDCG@10: good (1.0000")
    assert s.lines[0].endswith("significantly better than the baseline base.")
    assert "Holm correction over 2 comparison(s)" in s.lines[1]
    nd = next(x for x in s.lines if x.startswith("nDCG@10:"))
    assert "significantly better: good (+0.5" in nd and "significantly worse: worse (-0." in nd
    for n in ("good", "worse"):
        assert f"adjusted p {comp.cells[(n, 'nDCG@10')].p_adjusted:.4f}" in nd
    judged = [x for x in s.lines if "Judged@10" in x]
    assert len(judged) == 1 and "not a test" in judged[0] and "adjusted p" not in judged[0]
    assert s.warnings == []  # 30 queries: no warning


def test_no_significance_claimed_where_the_correction_removes_it():
    # one query where good wins, the rest tied: a tiny difference, not significant
    runs = [ranked("base", 1, 30), ranked("good", 1, 30)]
    runs[0] = Run.from_dict({**runs[0].to_dict(), "q0": {"d1": 9.0, "d0": 8.0, "d2": 7.0}},
                            name="base")
    comp = compare(graded(30), runs, ["nDCG@10"], trials=2000)
    s = comparison_summary(comp)
    assert not comp.cells[("good", "nDCG@10")].significant
    assert "its lead over the baseline base is not significant" in s.lines[0]
    assert "nDCG@10: no significant difference: good." in s.lines


def test_few_queries_are_flagged():
    runs = [ranked("base", 3, 10), ranked("good", 1, 10)]
    s = comparison_summary(compare(graded(10), runs, ["nDCG@10"], trials=500))
    assert any(w.startswith("Only 10 queries back the paired tests") for w in s.warnings)
