"""infer.ranking: runs ranked per measure, the pairwise orders a human sample supports (Holm
over every pair of runs), and a reported ranking that keeps every supported order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.infer.ranking import rank_pairs, reported_order
from reljudge.infer.sample import draw
from reljudge.infer.scores import estimate_runs
from reljudge.stats import holm
from reljudge.trec_data import Run
from tests.infer.test_scores import _qrels


def _holm_cases():
    """p-values with ties, in families of 1 to 496 tests."""
    rng = np.random.default_rng(0)
    for m in (1, 2, 3, 10, 45, 496):
        p = rng.beta(0.3, 1.0, size=m)
        p[: m // 3] = p[0]  # ties
        yield p


@pytest.mark.slow  # imports statsmodels (about 2 s); the textbook test below is the fast one
def test_holm_matches_statsmodels():
    from statsmodels.stats import multitest
    for p in _holm_cases():
        reject, adjusted, _, _ = multitest.multipletests(p, alpha=0.05, method="holm")
        assert holm(p) == pytest.approx(adjusted, abs=1e-12)
        assert np.array_equal(holm(p) <= 0.05, reject)


def test_holm_is_the_textbook_step_down_adjustment():
    """Holm (1979) written out: the i-th smallest p-value times (m - i + 1), the running
    maximum of those in increasing order, at most 1; each p-value gets its rank's."""
    for p in _holm_cases():
        m = len(p)
        order = sorted(range(m), key=lambda i: p[i])
        want, running = [0.0] * m, 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * float(p[i])))
            want[i] = running
        assert holm(p) == pytest.approx(want, abs=1e-12)


def _three_runs(seed=0, queries=20, docs=30):
    """True grades; a judge that reverses them (3 - grade); runs A (ranks by the truth), B
    (noisy) and C (ranks by the judge): under the judge C > B > A, under humans A > B > C."""
    rng = np.random.default_rng(seed)
    truth = {(f"q{q}", f"d{d}"): int(rng.integers(0, 4)) for q in range(queries)
             for d in range(docs)}
    judge = {p: 3 - g for p, g in truth.items()}
    pairs = list(truth)
    grades = np.array([truth[p] for p in pairs], dtype=np.float64)
    runs = [Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs], score, name=name)
            for name, score in (("A", grades + 0.3 * rng.normal(size=len(pairs))),
                                ("B", grades + 3.0 * rng.normal(size=len(pairs))),
                                ("C", -grades + 0.3 * rng.normal(size=len(pairs))))]
    return truth, judge, runs


def test_intervals_supporting_a_above_b_above_c_rank_them_so_against_the_llm_order():
    truth, judge, runs = _three_runs()
    s = draw(sorted(truth), "stratified-pairs", 300, 1, grades=judge)
    rankings: list = []
    rows, _ = estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                            ["DCG@10"], rankings=rankings)
    (r,) = rankings
    llm = {row.run: row.llm for row in rows}
    assert llm["C"] > llm["B"] > llm["A"]  # the judge's order is the reverse
    assert sorted(p.supported for p in r.pairs) == ["A > B", "A > C", "B > C"]
    assert all(p.p_holm <= 0.05 and p.p_holm >= p.p for p in r.pairs)
    assert [x.run for x in r.runs] == ["A", "B", "C"] and [x.rank for x in r.runs] == [1, 2, 3]
    assert (r.runs[0].above, r.runs[0].below) == (["B", "C"], [])
    assert (r.runs[1].above, r.runs[1].below) == (["C"], ["A"])
    assert r.correction == "Holm" and r.family == "all pairs of runs per measure"
    first = next(p for p in r.pairs if (p.first, p.second) == ("A", "B"))
    assert first.low <= first.difference <= first.high and first.difference > 0


@pytest.mark.parametrize("design", ["srs-queries", "srs-pairs", "stratified-pairs"])
def test_a_pair_test_is_the_paired_difference_row_of_estimate(design):
    """The ranking's A - B is the difference row's B - A with the sign turned, on every
    design: the same paired estimator, the same p-value (Holm over one pair leaves it)."""
    truth, judge, runs = _three_runs(queries=12, docs=20)
    s = draw(sorted(truth), design, 80, 2, grades=judge, queries=6)
    rankings: list = []
    _, diffs = estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}),
                             runs[:2], ["P@5"], rankings=rankings)
    (pair,) = rankings[0].pairs
    assert (pair.first, pair.second) == ("A", "B") and diffs[0].run == "B - A"
    assert pair.difference == pytest.approx(-diffs[0].ppi)
    assert (pair.low, pair.high) == (pytest.approx(-diffs[0].ppi_high),
                                     pytest.approx(-diffs[0].ppi_low))
    assert pair.p == pytest.approx(diffs[0].p) and pair.p_holm == pytest.approx(pair.p)


def _many_runs(seed, queries=10, docs=25, count=9):
    """Human and judge grades and ``count`` runs of growing noise over them, ties included."""
    rng = np.random.default_rng(seed)
    truth = {(f"q{q}", f"d{d}"): int(rng.integers(0, 4)) for q in range(queries)
             for d in range(docs)}
    judge = {p: int(np.clip(g + rng.integers(-1, 2), 0, 3)) for p, g in truth.items()}
    pairs = list(truth)
    grades = np.array([truth[p] for p in pairs], dtype=np.float64)
    runs = [Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs],
                            (grades + (0.3 + r) * rng.normal(size=len(pairs))).round(1),
                            name=f"r{r}") for r in range(count)]
    return truth, judge, runs


def _pair_design_of(seed: int, design: str, budget: int) -> tuple:
    """The pair design of a sample drawn from ``_many_runs(seed)``, with its empty cells, the
    runs' names and the measures DCG@5, P@5 and RBP(p=0.8)@5."""
    from reljudge.infer import scores
    from reljudge.metrics import parse_measure

    truth, judge, runs = _many_runs(seed)
    s = draw(sorted(truth), design, budget, seed, grades=judge)
    parsed = [parse_measure(m) for m in ("DCG@5", "P@5", "RBP(p=0.8)@5")]
    cells: dict = {(r.name, str(m)): {} for m in parsed for r in runs}
    d = scores._pair_design(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                            parsed, sorted({q for q, _ in truth}), cells, 0.95)
    return d, cells, [r.name for r in runs], parsed


@pytest.mark.slow  # 12 samples, about 5 s; the two fixed samples below are the fast test
@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["srs-pairs", "stratified-pairs"]),
       st.sampled_from([40, 90, 160]), st.sampled_from([1, 1 << 22]))
def test_all_pairs_at_once_equal_each_pair_alone_to_the_bit(seed, design, budget, cells_at_once):
    """``differences`` of every pair of runs in one vectorised call (in chunks of any size)
    gives, field by field and bit for bit, the estimate of each pair's difference cell."""
    _all_pairs_at_once_equal_each_pair_alone(seed, design, budget, cells_at_once)


@pytest.mark.parametrize(("seed", "design", "budget", "cells_at_once"),
                         [(5, "srs-pairs", 40, 1), (11, "stratified-pairs", 160, 1 << 22)])
def test_all_pairs_of_two_samples_at_once_equal_each_pair_alone_to_the_bit(
        seed, design, budget, cells_at_once):
    """The sweep above on two samples: both designs, both chunk sizes."""
    _all_pairs_at_once_equal_each_pair_alone(seed, design, budget, cells_at_once)


def _all_pairs_at_once_equal_each_pair_alone(seed, design, budget, cells_at_once) -> None:
    from reljudge.infer import scores
    from reljudge.infer.cells import difference_cell
    from reljudge.infer.ranking import differences

    d, cells, names, parsed = _pair_design_of(seed, design, budget)
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    saved = scores.DIFFERENCE_CELLS
    scores.DIFFERENCE_CELLS = cells_at_once
    try:
        for m in parsed:
            many = differences(d, cells, names, m, pairs)
            for k, (i, j) in enumerate(pairs):
                one, _ = d.estimate(difference_cell(cells[(names[i], str(m))],
                                                    cells[(names[j], str(m))]), names[i], m,
                                    names[j])
                for f in ppi_fields():
                    want, got = np.asarray(getattr(one, f)), np.asarray(getattr(many, f))[k]
                    assert np.array_equal(want, got), (str(m), names[i], names[j], f)
    finally:
        scores.DIFFERENCE_CELLS = saved


@pytest.mark.slow  # 12 samples, about 3 s; the two fixed samples below are the fast test
@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["srs-pairs", "stratified-pairs"]),
       st.sampled_from([40, 90, 160]))
def test_every_run_at_once_equals_each_run_alone_to_the_bit(seed, design, budget):
    """``estimates`` of every run's own row and of every run minus a baseline, in one call
    each, give bit for bit each run's estimate and each difference cell's, with the same
    counts of sampled pairs in the top k (DCG@k and RBP@k vectorised, P@k run by run)."""
    _every_run_at_once_equals_each_run_alone(seed, design, budget)


@pytest.mark.parametrize(("seed", "design", "budget"),
                         [(5, "srs-pairs", 90), (11, "stratified-pairs", 40)])
def test_every_run_of_two_samples_at_once_equals_each_run_alone_to_the_bit(seed, design,
                                                                           budget):
    """The sweep above on two samples, one of each design."""
    _every_run_at_once_equals_each_run_alone(seed, design, budget)


def _every_run_at_once_equals_each_run_alone(seed, design, budget) -> None:
    from reljudge.infer.cells import difference_cell, estimates

    d, cells, names, parsed = _pair_design_of(seed, design, budget)
    for m in parsed:
        own, counts = estimates(d, cells, names, m, [(i, None) for i in range(len(names))])
        minus, dcounts = estimates(d, cells, names, m, [(i, 0) for i in range(1, len(names))])
        for i, n in enumerate(names):
            one, k = d.estimate(cells[(n, str(m))], n, m)
            _same(one, own, i, (str(m), n))
            assert counts[i] == k
            if i:
                one, k = d.estimate(difference_cell(cells[(n, str(m))],
                                                    cells[(names[0], str(m))]), n, m, names[0])
                _same(one, minus, i - 1, (str(m), n, names[0]))
                assert dcounts[i - 1] == k


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([40, 90, 160]), st.sampled_from([0, 3, 40]))
def test_ratio_estimates_at_once_equal_each_alone_to_the_bit(seed, budget, replicates):
    """The ratio estimator's (nDCG@k) ``estimates`` of every run, every run minus the first
    and every pair of runs in one call each give bit for bit each one's ``estimate`` (the
    bootstrap's and the jackknife's spreads reduced row by row), and the same counts."""
    from reljudge.infer import scores
    from reljudge.infer.cells import estimates
    from reljudge.metrics import parse_measure

    truth, judge, runs = _many_runs(seed, count=5)
    s = draw(sorted(truth), "stratified-pairs", budget, seed, grades=judge)
    queries = sorted({q for q, _ in truth})
    m = parse_measure("nDCG@5")
    d = scores._ratio_design(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                             [m], queries, 0.95, replicates, seed)
    names = [r.name for r in runs]
    n = len(names)
    for pairs in ([(i, None) for i in range(n)], [(i, 0) for i in range(1, n)],
                  [(i, j) for i in range(n) for j in range(i + 1, n)]):
        many, counts = estimates(d, {}, names, m, pairs)
        for k, (i, j) in enumerate(pairs):
            one, count = d.estimate({}, names[i], m, None if j is None else names[j])
            _same(one, many, k, (names[i], j))
            assert counts[k] == count


def test_jackknife_sds_of_many_estimates_equal_each_sd_to_the_bit():
    """``Jackknife.sds`` of K estimates' values is ``sd`` of each, bit for bit."""
    from reljudge.infer.ratio import Jackknife

    rng = np.random.default_rng(3)
    stratum = np.repeat(np.arange(3), [7, 30, 2])
    jk = Jackknife(np.ones((len(stratum), 5)), rng.uniform(0, 1, len(stratum)), stratum)
    values = rng.normal(size=(50, len(stratum))) * 10.0 ** rng.integers(-8, 8, (50, 1))
    assert jk.sds(values) == [jk.sd(v) for v in values]


def _same(one, many, k, where) -> None:
    """Every field of the estimate ``one`` equals the k-th of ``many`` bit for bit."""
    for f in ppi_fields():
        want = np.asarray(getattr(one, f))
        got = np.broadcast_to(getattr(many, f), np.shape(many.value))[k]
        assert np.array_equal(want, got) and want.dtype.kind == np.asarray(got).dtype.kind, (
            *where, f)


def ppi_fields() -> list[str]:
    """The fields of an estimate that vary by estimate (all but the level)."""
    from reljudge.infer.ppi import Estimate

    return [f for f in Estimate.__dataclass_fields__ if f != "level"]


def test_a_single_run_has_no_ranking():
    truth, judge, runs = _three_runs()
    s = draw(sorted(truth), "stratified-pairs", 100, 1, grades=judge)
    rankings: list = []
    estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs[:1],
                  ["DCG@10"], rankings=rankings)
    assert rankings == []


def test_no_supported_order_leaves_the_llm_order():
    names = ["a", "b", "c", "d"]
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    r = rank_pairs(names, "P@5", [0.2, 0.9, 0.5, 0.5], [(0.1, 0, 1), (0.1, 0, 1),
                                                          (0.3, 0, 1), (0.4, 0, 1)],
                   pairs, [(0.1, -1, 1, 0.5)] * len(pairs), 0.05)
    assert [x.run for x in r.runs] == ["b", "d", "c", "a"]  # LLM ties broken by the PPI value
    assert all(p.supported is None for p in r.pairs) and not r.conflicts


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 8).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0, 1), min_size=n, max_size=n),
    st.lists(st.floats(0, 1), min_size=n, max_size=n),
    st.lists(st.floats(0, 0.2), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))))
def test_the_reported_ranking_keeps_every_supported_order(case):
    """Supported orders from true scores (so no cycle), the LLM order anything: the reported
    ranking keeps each supported order, lists it under above/below, and where two runs'
    order is not supported either way... the topological sort only moves what it must:
    with no supported order it is the LLM order."""
    llm, true, p = case
    n = len(llm)
    names = [f"r{i}" for i in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    diffs = [(true[i] - true[j], 0.0, 0.0, q) for (i, j), q in zip(pairs, p, strict=True)]
    r = rank_pairs(names, "DCG@10", llm, [(v, v, v) for v in true], pairs, diffs, 0.05)
    at = {x.run: x.rank for x in r.runs}
    adjusted = holm(np.array(p))
    for (i, j), (d, *_), q in zip(pairs, diffs, adjusted, strict=True):
        if q <= 0.05 and d != 0:
            hi, lo = (names[i], names[j]) if d > 0 else (names[j], names[i])
            assert at[hi] < at[lo]
            assert lo in r.runs[at[hi] - 1].above and hi in r.runs[at[lo] - 1].below
    assert not r.conflicts
    if not any(q <= 0.05 for q in adjusted):
        assert [x.run for x in r.runs] == [names[i] for i in reported_order(llm, np.zeros(
            (n, n), bool), true)]


def test_a_cycle_of_supported_orders_is_reported_not_hidden():
    better = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=bool)  # a > b > c > a
    order = reported_order([0.3, 0.2, 0.1], better)
    assert sorted(order) == [0, 1, 2]
    pairs = [(0, 1), (0, 2), (1, 2)]
    r = rank_pairs(["a", "b", "c"], "P@5", [0.3, 0.2, 0.1], [(0, 0, 0)] * 3, pairs,
                   [(0.1, 0, 0, 0.001), (-0.1, 0, 0, 0.001), (0.1, 0, 0, 0.001)], 0.05)
    assert len(r.conflicts) == 1


@pytest.mark.slow
def test_the_false_order_rate_stays_at_most_alpha():
    """Eight runs, six of close quality, 200 fixed-seed samples of 15 % of the pairs: the
    share of samples with any supported order the all-human scores contradict stays <= alpha
    = 0.05, inside the Monte-Carlo bound (3 binomial standard errors). Uncorrected p-values
    (no Holm) gave 0.145 on these draws."""
    from reljudge.metrics import evaluate

    rng = np.random.default_rng(7)
    truth = {(f"q{q}", f"d{d}"): int(rng.integers(0, 4)) for q in range(15)
             for d in range(20)}
    judge = {p: int(np.clip(g + rng.integers(-1, 2), 0, 3)) for p, g in truth.items()}
    pairs = list(truth)
    grades = np.array([truth[p] for p in pairs], dtype=np.float64)
    runs = [Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs],
                            grades + noise * rng.normal(size=len(pairs)), name=f"s{i}")
            for i, noise in enumerate((1.5,) * 6 + (1.0, 2.5))]
    true = {r.name: evaluate(_qrels(truth), r, ["DCG@10"]).mean()["DCG@10"] for r in runs}
    draws, wrong, supported = 200, 0, 0
    for seed in range(draws):
        s = draw(sorted(truth), "stratified-pairs", 45, seed, grades=judge)
        rankings: list = []
        estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                      ["DCG@10"], rankings=rankings, bootstrap=10)
        said = [p.supported.split(" > ") for p in rankings[0].pairs if p.supported]
        supported += len(said)
        wrong += any(true[hi] < true[lo] for hi, lo in said)
        assert not rankings[0].conflicts
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / draws)
    assert supported > draws / 2  # the tests do support orders: the rate is not vacuous
    assert wrong / draws <= bound, (wrong, draws)


def _tied_runs_world(queries=20, runs=4, own=5, miss=0.08, seed=0):
    """``runs`` runs of exactly equal P@10 (1 - 1/40): in each query they share 10 - ``own``
    relevant pairs and each has ``own`` of its own, one of them irrelevant in every fourth
    query; a judge right on every pair but a share ``miss`` of the relevant ones it grades 0
    (so the pairs of two runs' difference that the judge put in stratum grade=0 are few, and
    each is worth +1/k or -1/k)."""
    rng = np.random.default_rng(seed)
    shared = 10 - own
    truth, judge, score = {}, {}, np.zeros((runs, 0)).tolist()
    for q in range(queries):
        for i in range(shared + runs * own + 10):  # 10 pairs in no run's top 10
            p = (f"q{q:02d}", f"d{i:02d}")
            mine = i - shared
            top = i < shared + runs * own
            rel = top and not (mine >= 0 and mine % own == 0 and q % 4 == (mine // own) % 4)
            truth[p] = 2 if rel else 0
            judge[p] = (0 if rng.random() < miss else 2) if rel else (2 if top else 0)
            for r in range(runs):
                ranked = i < shared or shared + r * own <= i < shared + (r + 1) * own
                score[r].append((2.0 if ranked else 0.0) + rng.random())
    pairs = list(truth)
    return truth, judge, [Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs],
                                          np.array(s), name=f"r{r}")
                          for r, s in enumerate(score)]


@pytest.mark.slow
def test_p_at_k_orders_between_tied_runs_stay_unsupported_at_rate_alpha():
    """Four runs of exactly equal P@10, 200 fixed-seed stratified samples of 20 % of the
    pairs: the share of samples supporting any order (every one is wrong) stays <= alpha =
    0.05 inside the Monte-Carlo bound. A difference's pairs in stratum grade=0 (relevant
    pairs the judge missed, each +1/k or -1/k) were often two sampled pairs of one sign: a
    post-stratum of zero variance that decided the sign (0.245 of the samples before)."""
    from reljudge.metrics import evaluate

    truth, judge, runs = _tied_runs_world()
    true = {round(evaluate(_qrels(truth), r, ["P@10"]).mean()["P@10"], 9) for r in runs}
    assert true == {0.975}
    draws, wrong = 200, 0
    for seed in range(draws):
        s = draw(sorted(truth), "stratified-pairs", round(0.2 * len(truth)), seed,
                 grades=judge)
        rankings: list = []
        estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                      ["P@10"], rankings=rankings, bootstrap=10)
        wrong += any(p.supported for p in rankings[0].pairs)
    assert wrong / draws <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / draws), (wrong, draws)


def test_a_p_at_k_difference_with_a_flat_post_stratum_says_so_and_covers_the_truth():
    """Two runs of equal P@10, one sample whose pairs of stratum grade=0 in their difference
    are all of one sign: the row was [-0.1592, -0.0391] p 0.0019 (the truth, 0, outside);
    the flat post-stratum now gets FLAT_RULE's variance, the interval holds 0, the p-value
    is no longer significant and the warning says why."""
    truth, judge, runs = _tied_runs_world()
    s = draw(sorted(truth), "stratified-pairs", round(0.2 * len(truth)), 3, grades=judge)
    _, (diff,) = estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}),
                               runs[:2], ["P@10"], bootstrap=10)
    assert diff.ppi_low < 0 < diff.ppi_high and diff.p is not None and diff.p > 0.05
    assert diff.warning is not None and "all sampled values equal" in diff.warning


def test_a_ranking_as_plain_data_is_its_asdict():
    """``Ranking.to_json`` is ``dataclasses.asdict`` of it, built without the deep copy."""
    from dataclasses import asdict

    truth, judge, runs = _many_runs(4, count=5)
    s = draw(sorted(truth), "stratified-pairs", 90, 4, grades=judge)
    rankings: list = []
    estimate_runs(s, _qrels(judge), _qrels({p: truth[p] for p in s.pairs()}), runs,
                  ["DCG@5"], rankings=rankings)
    (r,) = rankings
    plain = r.to_json()
    assert plain == asdict(r) and list(plain) == list(asdict(r))
    assert plain["runs"][0]["above"] is not r.runs[0].above  # a list of its own
