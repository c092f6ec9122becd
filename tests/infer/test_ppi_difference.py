"""A run-minus-baseline difference from a pair sample: estimated over the
pairs the two runs weigh differently, where the difference lives, not over their top k's
union, whose pairs ranked alike add exactly 0; and its degenerate cases (identical runs, runs
differing on one pair)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reljudge.infer import scores
from reljudge.infer.cells import difference_cell
from reljudge.infer.sample import draw
from reljudge.metrics import parse_measure
from reljudge.trec_data import Qrels, Run

Q, D = 25, 40


def _world(seed: int, moved: float):
    """Human and judge grades of Q x D pooled pairs, and two runs ranking them by one noisy
    grade: "other" is "base" with a share ``moved`` of the pairs moved up by their human
    grade, so the two top 10s share most pairs and the difference lives on few, skewed ones
    (a moved pair's large gain, the small shifts of the pairs it passed)."""
    rng = np.random.default_rng(seed)
    pairs = [(f"q{q:02d}", f"d{d:02d}") for q in range(Q) for d in range(D)]
    human = rng.choice(4, size=len(pairs), p=[0.5, 0.25, 0.15, 0.1])
    judge = np.clip(human + rng.integers(-1, 2, size=len(pairs)), 0, 3)
    base = np.clip(human + rng.integers(-1, 2, size=len(pairs)), 0, 3) + 0.9 * rng.random(
        len(pairs))
    other = base + (rng.random(len(pairs)) < moved) * (human + 0.5)
    qs, ds = [p[0] for p in pairs], [p[1] for p in pairs]
    runs = [Run.from_arrays(qs, ds, s, name=n) for s, n in ((base, "base"), (other, "other"))]
    return pairs, human, judge, runs


def _qrels(pairs, grades) -> Qrels:
    return Qrels.from_arrays([p[0] for p in pairs], [p[1] for p in pairs],
                             np.asarray(grades, np.int64))


def _difference_coverage(seed: int, moved: float, frac: float, draws: int
                         ) -> tuple[float, float]:
    """Coverage of other - base's DCG@10 by the 95 % PPI interval over ``draws`` srs-pairs
    samples, through the pair design's own estimate vectorised over the draws (as
    bench/ppi.py does): as estimated, and over the union of the two top 10s (main's domain,
    before difference fix)."""
    pairs, human, judge, runs = _world(seed, moved)
    m = parse_measure("DCG@10")
    census = draw(pairs, "srs-pairs", len(pairs), 0)
    queries = sorted({q for q, _ in pairs})
    cells = {(r.name, str(m)): {"llm": np.zeros(Q)} for r in runs}
    design = scores._pair_design(census, _qrels(pairs, judge), _qrels(pairs, human), runs, [m],
                                 queries, cells, 0.95)
    rng = np.random.default_rng(1)
    idx = np.sort(np.argsort(rng.random((draws, len(pairs))), axis=1)[
        :, :round(frac * len(pairs))], axis=1)
    drawn = replace(design, item_strata=design.item_strata[idx[0]],
                    in_top={k: (v[0][idx], v[1]) for k, v in design.in_top.items()})

    def cut(c):
        return {**c, **{k: c[k][idx] for k in ("a", "b", "w") if k in c}}

    dcell = difference_cell(cut(cells[("other", str(m))]), cut(cells[("base", str(m))]))
    union = {k: v for k, v in dcell.items() if k not in ("w", "w_pop")}  # no weights: union
    hq = _qrels(pairs, human)
    truth = (scores._per_query(hq, runs[1], m, queries).mean()
             - scores._per_query(hq, runs[0], m, queries).mean())
    covered = []
    for cell in (dcell, union):
        e, _ = drawn.estimate(cell, "other", m, "base")
        covered.append(float(np.mean((e.low <= truth) & (truth <= e.high))))
    return covered[0], covered[1]


@pytest.mark.parametrize("seed", [1, 3])
def test_a_difference_living_on_few_pairs_covers_when_estimated_where_the_runs_differ(seed):
    """2 % of the pairs moved up, 10 % of the pool sampled: the union of the two top 10s
    (main) covered 0.891 and 0.898 of 1,000 draws, its pairs ranked alike (values exactly 0)
    diluting the variance of a few skewed ones; over the pairs weighed differently 0.961 and
    0.979. Monte-Carlo error of 0.95 over 1,000 draws: 0.007."""
    ours, union = _difference_coverage(seed, 0.02, 0.10, 1000)
    assert union < 0.90  # the shortfall this pins (see it fail: drop the weights' domain)
    assert ours >= 0.93


def _estimate_pair(runs, frac=0.2, seed=4):
    """The srs-pairs sample of the _world pool, and its rows and difference rows of two runs
    (DCG@10 and P@10)."""
    pairs, human, judge, _ = _world(0, 0.0)
    s = draw(pairs, "srs-pairs", round(frac * len(pairs)), seed)
    grade = dict(zip(pairs, human.tolist(), strict=True))
    hq = _qrels(s.pairs(), [grade[p] for p in s.pairs()])
    return s, scores.estimate_runs(s, _qrels(pairs, judge), hq, runs, ["DCG@10", "P@10"])


def _copy(run: Run, name: str, keep: np.ndarray | None = None) -> Run:
    """The run under another name, only its rows ``keep`` (default: all)."""
    keep = np.ones(len(run.score), dtype=bool) if keep is None else keep
    return Run.from_arrays(np.asarray(run.qid)[keep], np.asarray(run.docid)[keep],
                           run.score[keep], name=name)


def test_identical_runs_differ_by_exactly_zero_as_a_census_of_nothing():
    """Two runs that rank every pair alike: the difference is 0 on every pooled pair, so it
    is known without sampling: exact 0, p-value 1, no warning (main gave an interval of
    FLAT_RULE's width around 0 with a flat-strata warning)."""
    base = _world(0, 0.0)[3][0]
    _, (_, diffs) = _estimate_pair([_copy(base, "twin"), base])
    assert len(diffs) == 2
    for diff in diffs:
        assert diff.exact and diff.ppi == diff.ppi_low == diff.ppi_high == 0.0
        assert diff.human_low == diff.human_high == 0.0 and diff.p == 1.0
        assert diff.warning is None
    headers, table = scores.estimate_table(diffs, with_p=True)
    assert all(str(r[headers.index("ppi 95% CI")]) == scores.EXACT for r in table)


def test_runs_differing_on_one_pair_are_exact_when_it_is_sampled_and_wide_when_not():
    """"short" keeps only base's top 9 of one query: the difference is the 10th pair's
    DCG@10 contribution, -g / log2(11) / Q, and 0 on every other pair. Sampled, that pair
    makes the difference known exactly; not sampled, the estimate falls back to the
    design-based one over the pool: an interval with a width, around the truth."""
    from reljudge.pool import top_k

    pairs, human, _, runs = _world(0, 0.0)
    base = runs[0]
    grade = dict(zip(pairs, human.tolist(), strict=True))
    q, d, r = top_k(base, 10)
    tenth = [(qq, dd) for qq, dd, rr in zip(q, d, r, strict=True)
             if rr == 10 and grade[(qq, dd)] > 0][0]
    ranked = dict(zip(zip(q.tolist(), d.tolist(), strict=True), r.tolist(), strict=True))
    keep = np.array([qq != tenth[0] or ranked.get((qq, dd), 11) < 10
                     for qq, dd in zip(np.asarray(base.qid).tolist(),
                                       np.asarray(base.docid).tolist(), strict=True)])
    short = _copy(base, "short", keep)
    truth = -grade[tenth] / np.log2(11) / Q
    seen = set()
    for seed in range(12):
        sample, (_, diffs) = _estimate_pair([base, short], frac=0.1, seed=seed)
        diff = next(x for x in diffs if x.measure == "DCG@10")
        sampled = tenth in set(sample.pairs())
        seen.add(sampled)
        if sampled:
            assert diff.exact and diff.ppi == pytest.approx(truth)
            assert diff.ppi_low == diff.ppi_high
        else:
            assert not diff.exact and diff.ppi_high > diff.ppi_low
            assert diff.ppi_low <= truth <= diff.ppi_high
    assert seen == {True, False}
