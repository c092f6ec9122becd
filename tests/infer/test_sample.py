"""Sampling for humans: inclusion probabilities honoured, reproducible by seed, recorded in
the store with the agreed schema and read back."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from reljudge.errors import InputError, StoreError
from reljudge.infer.sample import allocate, draw, export
from reljudge.store import LabelStore, schema

PAIRS = [(f"q{q}", f"d{q}-{d}") for q in range(8) for d in range(5 + q)]  # 8 queries, 68 pairs
GRADES = {p: (i * 7) % 4 if i % 3 else 0 for i, p in enumerate(PAIRS)}


@pytest.mark.parametrize("design", ["srs-pairs", "stratified-pairs", "srs-queries"])
@pytest.mark.slow  # a sampling simulation
def test_empirical_inclusion_frequencies_match_the_recorded_probabilities(design):
    draws = 3000
    counts = dict.fromkeys(PAIRS, 0)
    recorded: dict = {}
    for seed in range(draws):
        s = draw(PAIRS, design, 20, seed, grades=GRADES, queries=3)
        for i in s.items:
            counts[(i.qid, i.docid)] += 1
            recorded.setdefault((i.qid, i.docid), []).append(i.prob)
    probs = {}
    for p, values in recorded.items():  # every draw of a pair records one probability
        assert values == pytest.approx([values[0]] * len(values)), p
        probs[p] = values[0]
    for p in PAIRS:
        expected = probs.get(p, 0.0)
        assert expected > 0  # every pair can be drawn
        sd = (expected * (1 - expected) / draws) ** 0.5
        assert abs(counts[p] / draws - expected) <= 4.5 * sd + 1e-9


def test_stratified_probabilities_are_sampled_over_stratum_sizes():
    s = draw(PAIRS, "stratified-pairs", 30, 1, grades=GRADES)
    strata = s.params["strata"]
    assert sum(v["sampled"] for v in strata.values()) == 30 == len(s.items)
    for i in s.items:
        info = strata[i.stratum]
        assert i.prob == pytest.approx(info["sampled"] / info["population"])
        assert i.stratum == f"grade={GRADES[(i.qid, i.docid)]}"


def test_query_sample_takes_every_pair_of_each_drawn_query():
    s = draw(PAIRS, "srs-queries", 0, 4, queries=3)
    drawn = {i.qid for i in s.items}
    assert len(drawn) == 3
    assert sorted(s.pairs()) == sorted(p for p in PAIRS if p[0] in drawn)
    assert all(i.prob == pytest.approx(3 / 8) for i in s.items)
    assert [i.position for i in s.items] == list(range(len(s.items)))


def test_same_seed_same_sample_other_seed_other_sample():
    a = draw(PAIRS, "stratified-pairs", 25, 11, grades=GRADES)
    b = draw(list(reversed(PAIRS)), "stratified-pairs", 25, 11, grades=GRADES)
    c = draw(PAIRS, "stratified-pairs", 25, 12, grades=GRADES)
    assert a.items == draw(PAIRS, "stratified-pairs", 25, 11, grades=GRADES).items
    assert a.pairs() != c.pairs()
    assert b.items  # input order matters only through the pool order the caller gives


def test_allocation_is_proportional_with_a_floor_and_refuses_impossible_budgets():
    assert allocate(10, np.array([50, 30, 20])).tolist() == [5, 3, 2]
    assert allocate(6, np.array([100, 1, 5])).tolist()[1] == 1  # a tiny stratum taken whole
    assert allocate(6, np.array([100, 1, 5])).sum() == 6
    with pytest.raises(InputError, match="needs at least 6"):
        allocate(5, np.array([10, 10, 10]))
    with pytest.raises(InputError, match="exceeds the 30 pairs"):
        allocate(31, np.array([10, 10, 10]))
    with pytest.raises(InputError, match="unknown sampling design"):
        draw(PAIRS, "cluster", 5, 0)


def test_too_small_query_samples_are_refused_before_anyone_grades():
    with pytest.raises(InputError, match=r"at least 3 queries for an interval \(asked for 2\)"):
        draw(PAIRS, "srs-queries", 0, 0, queries=2)
    with pytest.raises(InputError, match="at least 3 queries .* budget of at least 26 pairs"):
        draw(PAIRS, "srs-queries", 10, 0)
    with pytest.raises(InputError, match="the pool has 8"):
        draw(PAIRS, "srs-queries", 0, 0, queries=9)


def test_sample_recorded_in_the_store_with_the_agreed_schema(tmp_path):
    path = tmp_path / "s.sqlite"
    s = draw(PAIRS, "stratified-pairs", 20, 3, name="week1", grades=GRADES,
             params={"judge": "j"})
    with LabelStore(path) as store:
        store.add_sample(s)
        assert store.sample_names() == ["week1"]
        assert store.sample_pairs("week1") == s.pairs()
        back = store.sample("week1")
        assert back.items == s.items and back.params == s.params and back.unit == "pair"
        with pytest.raises(StoreError, match="known samples: week1"):
            store.sample_pairs("week2")
        with pytest.raises(StoreError, match="already recorded"):
            store.add_sample(s)
    conn = sqlite3.connect(path)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(sample_items)")]
    assert cols == ["sample", "q", "d", "position", "prob", "stratum"]
    cols = [r[1] for r in conn.execute("PRAGMA table_info(samples)")]
    assert cols == ["id", "name", "unit", "design", "seed", "budget", "params", "created_at"]
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] \
        == str(schema.SCHEMA_VERSION)


def test_export_has_texts_in_grading_order_and_counts_missing_texts():
    s = draw(PAIRS, "srs-pairs", 4, 0)
    q = {p[0]: f"query {p[0]}" for p in PAIRS}
    d = {p[1]: f"text\t{p[1]}" for p in PAIRS[:-1]}
    text, lacking = export(s, q, d, "x.tsv")
    lines = text.splitlines()
    assert lines[0] == "position\tqid\tdocid\tquery\tpassage"
    assert [ln.split("\t")[:3] for ln in lines[1:]] == [[str(i), a, b] for i, (a, b) in
                                                        enumerate(s.pairs())]
    assert all(len(ln.split("\t")) == 5 for ln in lines)
    assert lacking == sum(p == PAIRS[-1] for p in s.pairs())
    jtext, _ = export(s, q, d, "x.jsonl")
    assert len(jtext.splitlines()) == 4 and '"sample": "sample"' in jtext


def test_recommended_budget_reaches_the_reliable_number_of_top_k_pairs():
    from reljudge.infer.sample import RELIABLE_TOP_PAIRS, recommended_budget

    rng = np.random.default_rng(4)
    pool = [(f"q{q}", f"d{d}") for q in range(40) for d in range(50)]
    grades = {p: int(rng.integers(0, 4)) for p in pool}
    tops = [[f"grade={grades[p]}" for p in pool if int(p[1][1:]) < 10],
            [f"grade={grades[p]}" for p in pool if 5 <= int(p[1][1:]) < 15]]
    small = draw(pool, "stratified-pairs", 60, 1, grades=grades)
    rate = {lab: v["sampled"] / v["population"] for lab, v in small.params["strata"].items()}
    expected, budget = recommended_budget(small, tops, len(pool))
    assert expected == pytest.approx(min(sum(rate[lab] for lab in t) for t in tops))
    assert expected < RELIABLE_TOP_PAIRS < RELIABLE_TOP_PAIRS * budget / 60
    assert recommended_budget(draw(pool, "stratified-pairs", budget, 1, grades=grades), tops,
                              len(pool)) is None


def test_small_sample_warning_at_the_thresholds():
    from reljudge.infer.sample import QUERY_COVERAGE, RELIABLE_TOP_PAIRS, small_sample_warning

    assert small_sample_warning("pair", RELIABLE_TOP_PAIRS, 10) is None
    below = RELIABLE_TOP_PAIRS - 1
    assert f"from {below} sampled pairs in the run's top 10" in small_sample_warning("pair", below,
                                                                                      10)
    assert small_sample_warning("query", 25, population=25) is None
    size, low = QUERY_COVERAGE[0]
    assert f"lowest {low:.0%} at {size})" in small_sample_warning("query", 3, population=25)
    size, low = QUERY_COVERAGE[-1]
    assert f"lowest {low:.0%} at {size})" in small_sample_warning("query", 24, population=25)
