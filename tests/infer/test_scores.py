"""infer.scores: pair-sample estimates post-stratified by each run's top k, the count of
sampled units each interval rests on, and the small-sample warning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.infer import ppi
from reljudge.infer.sample import RELIABLE_TOP_PAIRS, draw
from reljudge.infer.scores import estimate_runs
from reljudge.trec_data import Qrels, Run

NQ, ND = 20, 30


def _world(seed=0, queries=NQ, docs=ND, relevant=None):
    """True grades, a judge's grades one higher half the time, and two runs (less and more
    noisy) over ``queries`` x ``docs`` pooled pairs; ``relevant``: the queries whose pairs
    may be relevant at all (the others are all grade 0)."""
    rng = np.random.default_rng(seed)
    truth = {(f"q{q}", f"d{d}"): int(rng.integers(0, 4)) if relevant is None or q in relevant
             else 0 for q in range(queries) for d in range(docs)}
    judge = {p: int(min(3, g + rng.binomial(1, 0.5))) for p, g in truth.items()}
    runs = []
    for i, noise in enumerate((0.5, 2.0)):
        pairs = list(truth)
        score = np.array([truth[p] for p in pairs]) + noise * rng.normal(size=len(pairs))
        runs.append(Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs], score,
                                    name=f"r{i}"))
    return truth, judge, runs


def _qrels(grades):
    return Qrels.from_arrays([p[0] for p in grades], [p[1] for p in grades],
                             np.array(list(grades.values()), dtype=np.int64))


def _top(run, k):
    from reljudge.pool import top_k

    q, d, r = top_k(run, k)
    return dict(zip(zip(q.tolist(), d.tolist(), strict=True), r.tolist(), strict=True))


@pytest.mark.parametrize("budget", [40, 400])
def test_pair_estimate_is_post_stratified_by_the_run_top_k_and_warns_when_small(budget):
    truth, judge, runs = _world()
    s = draw(sorted(truth), "stratified-pairs", budget, 3, grades=judge)
    human = _qrels({p: truth[p] for p in s.pairs()})
    rows, diffs = estimate_runs(s, _qrels(judge), human, runs, ["DCG@10"])
    labels = list(s.params["strata"])
    pool = sorted(truth)
    for row, run in zip(rows, runs, strict=True):
        rank = _top(run, 10)
        items = [p for p in s.pairs() if p in rank]
        w = {p: 1 / np.log2(rank[p] + 1) for p in rank}
        a = np.array([w[p] * truth[p] for p in items])
        b = np.array([w[p] * judge[p] for p in items])
        strata = np.array([labels.index(f"grade={judge[p]}") for p in items])
        sizes = np.bincount([labels.index(f"grade={judge[p]}") for p in pool if p in rank],
                            minlength=len(labels))
        b_total = sum(w[p] * judge[p] for p in rank)
        e, usable = ppi.post_stratified(ppi.moments(a, b, strata, len(labels)), sizes, b_total,
                                        float(NQ))
        assert bool(usable)
        assert row.ppi == pytest.approx(float(e.value))
        assert (row.ppi_low, row.ppi_high) == (pytest.approx(float(e.low)),
                                               pytest.approx(float(e.high)))
        assert row.informative == len(items) and row.human_labels == budget
        assert (row.warning is not None) == (len(items) < RELIABLE_TOP_PAIRS)
        if row.warning:
            assert f"from {len(items)} sampled pairs in the run's top 10" in row.warning
    both = set(_top(runs[0], 10)) | set(_top(runs[1], 10))
    assert diffs[0].informative == sum(p in both for p in s.pairs())
    if diffs[0].warning:
        assert "sampled pairs in either run's top 10" in diffs[0].warning


def test_small_and_large_pair_samples_on_either_side_of_the_threshold():
    truth, judge, runs = _world()
    small = draw(sorted(truth), "stratified-pairs", 40, 3, grades=judge)
    large = draw(sorted(truth), "stratified-pairs", 400, 3, grades=judge)
    rows_s, _ = estimate_runs(small, _qrels(judge), _qrels(truth), runs, ["DCG@10"])
    rows_l, _ = estimate_runs(large, _qrels(judge), _qrels(truth), runs, ["DCG@10"])
    assert all(r.warning for r in rows_s) and not any(r.warning for r in rows_l)


def test_changed_judge_grades_fall_back_to_the_design_based_estimate():
    truth, judge, runs = _world()
    s = draw(sorted(truth), "stratified-pairs", 300, 3, grades=judge)
    relabelled = dict(judge)
    moved = next(p for p in sorted(truth) if p not in set(s.pairs()) and judge[p] < 3)
    relabelled[moved] = judge[moved] + 1  # stratum sizes no longer match the record
    rows, _ = estimate_runs(s, _qrels(relabelled), _qrels(truth), runs[:1], ["P@10"])
    labels = list(s.params["strata"])
    pool = sorted(truth)
    rank = _top(runs[0], 10)
    a = np.array([0.1 * (truth[p] >= 1) * (p in rank) for p in s.pairs()])
    b = np.array([0.1 * (relabelled[p] >= 1) * (p in rank) for p in s.pairs()])
    strata = np.array([labels.index(i.stratum) for i in s.items])
    sizes = np.array([s.params["strata"][lab]["population"] for lab in labels])
    b_total = sum(0.1 * (relabelled[p] >= 1) for p in pool if p in rank)
    design = ppi.estimate(a, b, b_total, strata, sizes, float(NQ))
    assert rows[0].ppi == pytest.approx(float(design.value))
    assert rows[0].ppi_high == pytest.approx(float(design.high))


def test_query_sample_counts_queries_and_warns_unless_every_query_is_graded():
    truth, judge, runs = _world()
    for n_q in (5, 12, NQ):
        s = draw(sorted(truth), "srs-queries", 0, 1, queries=n_q)
        rows, diffs = estimate_runs(s, _qrels(judge), _qrels(truth), runs, ["nDCG@10"])
        for r in rows + diffs:
            assert r.informative == n_q
            assert (r.warning is not None) == (n_q < NQ)
        if n_q == 12:  # fewer than 30 queries: widened to the range bound, and says so
            assert "from 12 sampled queries, widened to +-" in rows[0].warning
            assert "Hoeffding-Serfling" in rows[0].warning


@pytest.mark.parametrize("measure", ["RBP(p=0.8)@10", "RBP(p=0.5,rel=2)@5", "DCG@10", "P@5"])
def test_a_pair_sample_of_every_pooled_pair_gives_the_exact_human_score(measure):
    from reljudge.metrics import evaluate

    truth, judge, runs = _world(seed=4)
    everything = draw(sorted(truth), "srs-pairs", len(truth), 1)
    rows, _ = estimate_runs(everything, _qrels(judge), _qrels(truth), runs, [measure])
    for row, run in zip(rows, runs, strict=True):
        exact = evaluate(_qrels(truth), run, measure, all_queries=True).mean()
        llm = evaluate(_qrels(judge), run, measure, all_queries=True).mean()
        (exact,), (llm,) = exact.values(), llm.values()
        assert row.human == pytest.approx(exact, abs=1e-12)
        assert row.ppi == pytest.approx(exact, abs=1e-12)
        assert row.llm == pytest.approx(llm, abs=1e-12)


def test_rbp_residual_is_refused_for_a_pair_sample():
    from reljudge.errors import InputError

    truth, judge, runs = _world()
    s = draw(sorted(truth), "srs-pairs", 100, 1)
    with pytest.raises(InputError, match="RBP@k are linear"):
        estimate_runs(s, _qrels(judge), _qrels(truth), runs, ["RBP(residual=True)@10"])


def _small_world(seed=0):
    """Four queries of eight pooled pairs: a sample of eight pairs puts few in a top 5."""
    return _world(seed, queries=4, docs=8)


@pytest.mark.parametrize("design", ["srs-pairs", "stratified-pairs"])
def test_intervals_never_leave_the_measure_range(design):
    """P@5 printed [-0.3695, 1.6361]: every interval end now lies in [0, 1] for P@k
    and RBP@k, in [0, the largest DCG@k] for DCG@k, and a difference in the range's mirror."""
    from reljudge.infer.ranges import measure_range
    from reljudge.metrics import parse_measure

    truth, judge, runs = _small_world()
    s = draw(sorted(truth), design, 8, 0, grades=judge)
    measures = ["P@5", "DCG@5", "RBP(p=0.8)@5"]
    rows, diffs = estimate_runs(s, _qrels(judge), _qrels(truth), runs, measures)
    for r in rows + diffs:
        low, high = measure_range(parse_measure(r.measure))
        if " - " in r.run:
            low, high = low - high, high - low
        for v in (r.human_low, r.human, r.human_high, r.ppi_low, r.ppi, r.ppi_high):
            assert low <= v <= high, (r.run, r.measure, v)
    assert measure_range(parse_measure("DCG@5")) == pytest.approx(
        (0.0, 3 * sum(1 / np.log2(r + 1) for r in range(1, 6))))


def test_a_run_with_no_sampled_pair_in_its_top_k_says_so():
    truth, judge, runs = _world()
    s = draw(sorted(truth), "srs-pairs", 10, 3)
    rows, diffs = estimate_runs(s, _qrels(judge), _qrels(truth), runs, ["P@1"])
    for r in rows + diffs:
        assert r.informative == 0
        assert r.warning is not None and r.warning.startswith("from no sampled pair in")
        assert r.ppi_high > r.ppi_low  # no zero-width interval from nothing
    assert "the run's top 1" in rows[0].warning and "either run's top 1" in diffs[0].warning


def test_a_census_row_is_exact_and_says_so():
    from reljudge.infer.scores import EXACT, estimate_table

    truth, judge, runs = _world(seed=4)
    everything = draw(sorted(truth), "srs-pairs", len(truth), 1)
    rows, diffs = estimate_runs(everything, _qrels(judge), _qrels(truth), runs, ["P@5"])
    assert all(r.exact and r.ppi_low == r.ppi_high for r in rows + diffs)
    _, table = estimate_table(rows + diffs)
    assert all(row[5] == EXACT and row[7] == EXACT for row in table)
    partial = draw(sorted(truth), "srs-pairs", len(truth) - 1, 1)
    rows, _ = estimate_runs(partial, _qrels(judge), _qrels(truth), runs, ["P@5"])
    missed = (set(truth) - set(partial.pairs())).pop()
    for r, run in zip(rows, runs, strict=True):  # exact where the missed pair is not in its top 5
        assert r.exact == (missed not in _top(run, 5))
        assert r.exact or r.ppi_high > r.ppi_low


def test_equal_human_grades_within_each_stratum_give_no_zero_width_interval():
    """90 of 140 pairs whose sampled human grades are equal within each
    stratum (here the judge's grades are the truth). The south run's human interval was
    [0.98571428, 0.98571429]: rounding left its variance at 1e-18, above the test for 0. Every
    row short of a census now has a width, a difference's p-value is not 0, and each row
    carries the warning."""
    rng = np.random.default_rng(1)
    judge = {(f"q{q}", f"d{d}"): int(rng.integers(0, 4)) for q in range(14) for d in range(10)}
    runs = []
    for name, noise in (("north", 0.5), ("south", 1.5)):
        pairs = list(judge)
        score = np.array([judge[p] for p in pairs]) + noise * rng.normal(size=len(pairs))
        runs.append(Run.from_arrays([p[0] for p in pairs], [p[1] for p in pairs], score,
                                    name=name))
    s = draw(sorted(judge), "stratified-pairs", 90, 0, grades=judge)
    rows, diffs = estimate_runs(s, _qrels(judge), _qrels(judge), runs, ["P@5"])
    for r in rows + diffs:
        assert not r.exact
        assert r.human_high - r.human_low > 0.01 and r.ppi_high - r.ppi_low > 0.01, r
        assert "had all sampled values equal" in r.warning
    assert diffs[0].p is not None and diffs[0].p > 0.05


def test_a_query_sample_whose_sampled_values_are_all_equal_has_a_width():
    """Every sampled query's human P@5 is 1 (the sampled queries' pairs are all relevant),
    though the other queries' are not: the interval had no width; now it has FLAT_RULE's
    (spread: the measure's range) and says so. With every query sampled it is exact."""
    truth, judge, runs = _world()
    s = draw(sorted(truth), "srs-queries", 0, 1, queries=5)
    sampled = {i.qid for i in s.items}
    full = {p: (3 if p[0] in sampled else g) for p, g in truth.items()}
    rows, diffs = estimate_runs(s, _qrels(judge), _qrels(full), runs, ["P@5"])
    for r in rows + diffs:
        assert r.human_high - r.human_low > 0.05 and r.ppi_high - r.ppi_low > 0.05, r
        assert "had all sampled values equal" in r.warning
    everything = draw(sorted(truth), "srs-queries", 0, 1, queries=NQ)
    rows, _ = estimate_runs(everything, _qrels(judge), _qrels(full), runs, ["P@5"])
    assert all(r.exact and r.ppi_low == r.ppi_high for r in rows)


def test_an_interval_wholly_outside_the_range_becomes_the_whole_range_and_says_so():
    """Three sampled pairs in r1's top 5 put its human-only DCG@5 interval wholly above the
    largest DCG@5 (8.8454): clipped, it would be the point [8.8454, 8.8454]; it is the whole
    range instead (it missed), and the warning says so."""
    truth, judge, runs = _world(seed=36, queries=3, docs=10)
    s = draw(sorted(truth), "stratified-pairs", 8, 36, grades=judge)
    rows, _ = estimate_runs(s, _qrels(judge), _qrels(truth), runs, ["DCG@5"])
    top = 3 * sum(1 / np.log2(r + 1) for r in range(1, 6))
    assert (rows[1].human_low, rows[1].human_high) == (0.0, pytest.approx(top))
    assert "the human interval [" in rows[1].warning
    assert "wholly outside the measure's range" in rows[1].warning


def test_a_run_whose_top_k_leaves_the_sampled_pool_is_refused_not_scored_as_a_census():
    """A run's top-k pairs outside the population the sample was drawn from used to count as
    0: a run wholly outside printed 0 as "exact (census)". Now one line names the run."""
    from reljudge.errors import InputError

    truth, judge, runs = _world(seed=6)
    pool = {p: g for p, g in judge.items() if int(p[1][1:]) < 20}  # d20..d29 left out
    s = draw(sorted(pool), "srs-pairs", 60, 0)
    inside = [Run.from_arrays([p[0] for p in pool], [p[1] for p in pool],
                              np.arange(len(pool), dtype=np.float64), name="inside")]
    rows, _ = estimate_runs(s, _qrels(pool), _qrels(truth), inside, ["DCG@10"])
    assert not rows[0].exact
    with pytest.raises(InputError, match=r"run r0: \d+ of its top-10 pairs are outside the "
                                         r"pool sample .* was drawn from"):
        estimate_runs(s, _qrels(pool), _qrels(truth), runs, ["DCG@10"])


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["DCG@10", "nDCG@5", "P@5", "AP"]),
       st.integers(3, 25))
def test_per_query_values_of_the_runs_together_are_each_run_alone_to_the_bit(seed, measure,
                                                                            queries):
    """The cells' per-query values come from the runs evaluated together: each run's are bit
    for bit its own (``_per_query``, one ``evaluate``), 0 for a query it lacks, and of runs
    sharing a name the last one's (as when each run was evaluated in turn into the cells)."""
    from reljudge.infer.scores import _per_query, _per_query_many
    from reljudge.metrics import parse_measure

    truth, judge, runs = _world(seed, queries=queries, docs=12)
    shared = runs[0].with_name(runs[1].name)
    # a query none of the runs has
    asked = sorted({q for q, _ in judge} | {"q-none"})
    m = parse_measure(measure)
    got = _per_query_many(_qrels(judge), [*runs, shared], m, asked)
    assert list(got) == [r.name for r in runs]
    for run in (runs[0], shared):
        want = _per_query(_qrels(judge), run, m, asked)
        assert got[run.name].tobytes() == want.tobytes() and want[asked.index("q-none")] == 0


BOUNDS = st.one_of(st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 1.0]))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1.0])), BOUNDS, BOUNDS)
def test_clip_of_one_number_is_numpys_clip_to_the_bit(x, low, high):
    """The rows' clip to the measure's range is ``np.clip`` of the number, bit for bit (the
    sign of a zero and nan included)."""
    from reljudge.infer.scores import clip

    want, got = float(np.clip(x, low, high)), clip(x, low, high)
    assert type(got) is float
    assert np.array(want).view(np.int64) == np.array(got).view(np.int64) or (
        np.isnan(want) and np.isnan(got)), (x, low, high, want, got)
