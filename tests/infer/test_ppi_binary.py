"""P@k from a pair sample: a run's pooled pairs in its top k are each worth 0 or 1/k, so its
score is a proportion, and its intervals are Wilson's at the effective sample size
(ppi.proportion_interval), through the path `reljudge estimate` takes (infer.scores),
vectorised over draws as bench/ppi.py runs it."""

import numpy as np
from bench.ppi import World, census, clipped, draw_estimates, draws_of, library_cells, qrels
from scipy import special

from reljudge.infer.scores import _per_query
from reljudge.metrics import parse_measure
from reljudge.trec_data import Run

P10 = parse_measure("P@10")


def _world(relevant: np.ndarray, judge_flips: float, seed: int = 7):
    """20 queries x 20 pooled pairs, human grade 2 where ``relevant`` else 0, a judge that
    flips a share of them, and 4 runs ranking each query's pool at random."""
    rng = np.random.default_rng(seed)
    pairs = [(f"q{q:02d}", f"d{d:02d}") for q in range(20) for d in range(20)]
    human = np.where(relevant, 2, 0).astype(np.int64)
    judge = np.where(rng.random(len(pairs)) < judge_flips, 2 - human, human)
    w = World(pairs, sorted({q for q, _ in pairs}), human, {"j": judge})
    q = np.array([p[0] for p in pairs], dtype=object)
    d = np.array([p[1] for p in pairs], dtype=object)
    runs = [Run.from_arrays(q, d, rng.random(len(pairs)), name=f"r{s}", check=False)
            for s in range(4)]
    return w, runs


def _draws(w: World, runs, design: str, frac: float, draws: int, seed: int = 1):
    """Every run's estimates on ``draws`` samples, and the runs' true P@10."""
    sample = census(w, design, w.judges["j"])
    human_q = qrels(w.pairs, w.human)
    cells, design_ = library_cells(w, sample, qrels(w.pairs, w.judges["j"]), human_q, runs,
                                   P10)
    idx = draws_of(sample, frac, len(w.pairs), draws, np.random.default_rng(seed))
    est, _ = draw_estimates(cells, design_, runs, P10, idx)
    truth = np.array([_per_query(human_q, r, P10, w.queries).mean() for r in runs])
    return est, truth


def _cover(low, high, truth) -> float:
    lo, hi = clipped(np.stack(low, -1), np.stack(high, -1), (0.0, 1.0))
    return float(((lo <= truth) & (truth <= hi)).mean())


def test_p_at_k_near_one_covers_where_the_t_interval_did_not():
    # 90 % relevant, ~40 sampled pairs in a run's top 10: the t interval (main's) misses on
    # the side where the sampled share nears 1 and its variance shrinks
    rng = np.random.default_rng(3)
    w, runs = _world(rng.random(400) < 0.9, judge_flips=0.3)
    draws = 2000
    est, truth = _draws(w, runs, "srs-pairs", 0.2, draws)
    mc = 3 * (0.95 * 0.05 / draws) ** 0.5  # runs share draws: bound as if one run's
    for value, se, low, high in (("value", "se", "low", "high"),
                                 ("classical", "classical_se", "classical_low",
                                  "classical_high")):
        half = [special.stdtrit(e.df, 0.975) * getattr(e, se) for e in est]  # main's: t se
        t_cover = _cover([getattr(e, value) - h for e, h in zip(est, half, strict=True)],
                         [getattr(e, value) + h for e, h in zip(est, half, strict=True)], truth)
        cover = _cover([getattr(e, low) for e in est], [getattr(e, high) for e in est], truth)
        assert t_cover < 0.93, (value, t_cover)
        assert 0.95 - mc <= cover <= 0.99, (value, cover, t_cover)


def test_p_at_k_wilson_interval_never_leaves_the_range():
    rng = np.random.default_rng(3)
    w, runs = _world(rng.random(400) < 0.9, judge_flips=0.3)
    est, _ = _draws(w, runs, "stratified-pairs", 0.1, 300)
    for e in est:
        assert np.all(e.low >= 0) and np.all(e.high <= 1) and np.all(e.low < e.high)
        assert np.all(e.classical_low >= 0) and np.all(e.classical_high <= 1)


def test_p_at_k_all_sampled_zero_short_of_a_census_has_width_and_lower_end_zero():
    w, runs = _world(np.zeros(400, bool), judge_flips=0.1)
    est, truth = _draws(w, runs, "srs-pairs", 0.2, 50)
    assert np.all(truth == 0)
    for e in est:
        assert np.all(e.value == 0) and np.all(e.low == 0) and np.all(e.classical_low == 0)
        assert np.all(e.high > 0) and np.all(e.classical_high > 0) and not np.any(e.exact)


def test_p_at_k_all_sampled_relevant_short_of_a_census_has_width_and_upper_end_one():
    w, runs = _world(np.ones(400, bool), judge_flips=0.1)
    est, truth = _draws(w, runs, "stratified-pairs", 0.2, 50)
    assert np.all(truth == 1)
    for e in est:
        assert np.all(e.high == 1) and np.all(e.classical_high == 1)
        assert np.all(e.low < 1) and np.all(e.classical_low < 1) and not np.any(e.exact)


def test_p_at_k_census_is_exact():
    rng = np.random.default_rng(3)
    w, runs = _world(rng.random(400) < 0.5, judge_flips=0.3)
    est, truth = _draws(w, runs, "stratified-pairs", 1.0, 2)
    for e, t in zip(est, truth, strict=True):
        assert np.all(e.exact)
        assert np.allclose(e.low, t) and np.allclose(e.high, t) and np.allclose(e.value, t)
