"""What humans should label: random samples of queries or pairs with known inclusion
probabilities, so that ``infer.ppi`` can weight each human label correctly.

Designs (the ``design`` column of the store's ``samples`` table):
  srs-queries       a simple random sample of whole queries; every pooled pair of a drawn
                    query is labelled; valid for every measure (query-level PPI)
  srs-pairs         a simple random sample of pooled pairs
  stratified-pairs  pairs stratified by the judge's grade, a simple random sample in each
                    stratum (proportional allocation, at least 2 per stratum)
  active            pairs drawn with unequal probabilities, from the judge's uncertainty and
                    each pair's weight in the runs (``infer.active``)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from reljudge.choices import DESIGNS, Design
from reljudge.errors import InputError
from reljudge.labels import Sample, SampleItem
from reljudge.pool import Pool

MIN_PER_STRATUM = 2
#: infer.ppi.query_level needs 3: two for a variance, one for lambda
MIN_QUERIES = 3
# From bench/ppi.py (33 LLMJudge judges, 32 systems, 500 draws; docs/ppi-validation.md). Pair samples:
# the DCG@10 intervals from at least this many sampled pairs in the system's top 10 covered
# >= 93 % for every judge at every pair budget (with >= 100 such intervals), and 10 % of the
# pairs, about this many per system's top 10, was the smallest budget at which every judge
# reached 93 %; below it an interval carries a warning.
RELIABLE_TOP_PAIRS = 25
# Query samples: no budget up to 20 of the 25 queries reached 93 % for every judge; the
# lowest coverage (over judges, nDCG@10 and AP) at each number of sampled queries.
QUERY_COVERAGE = ((5, 0.831), (10, 0.867), (15, 0.904), (20, 0.917))


def small_sample_warning(unit: str, informative: int, cutoff: float | None = None,
                         population: int | None = None, pair_of_runs: bool = False
                         ) -> str | None:
    """A warning when an interval rests on a sample the benchmark found too small for
    honest coverage (``informative``: sampled pairs in the run's top k, or in either run's
    for a difference, or sampled queries of ``population``); None otherwise."""
    if unit == "query":
        if population is not None and informative >= population:
            # every query graded: no sampling error
            return None
        size, low = next(((q, c) for q, c in reversed(QUERY_COVERAGE) if q <= informative),
                         QUERY_COVERAGE[0])
        return (f"from {informative} sampled queries; in the benchmark no query sample up to "
                f"{QUERY_COVERAGE[-1][0]} of 25 queries covered >= 93 % for every judge "
                f"(lowest {low:.0%} at {size}): likely too narrow")
    if informative >= RELIABLE_TOP_PAIRS:
        return None
    top = f"top {cutoff}" if cutoff else "top k"
    whose = "either run's" if pair_of_runs else "the run's"
    return (f"from {informative} sampled pairs in {whose} {top}, fewer than the "
            f"{RELIABLE_TOP_PAIRS} from which the benchmark's 95 % intervals covered >= 93 %: "
            f"likely too narrow")


def recommended_budget(sample: Sample, run_top_strata: Sequence[Sequence[str]],
                       population: int) -> tuple[float, int] | None:
    """For a pair sample: the expected number of sampled pairs in the worst run's top k
    (``run_top_strata``: per run, the stratum label of each pooled pair in its top k) and
    the budget that would bring it to RELIABLE_TOP_PAIRS (capped at the population), or
    None when the sample already reaches it."""
    rate = {lab: v["sampled"] / v["population"]
            for lab, v in sample.params.get("strata", {}).items() if v["population"]}
    if not run_top_strata:
        return None
    expected = min(sum(rate.get(lab, 0.0) for lab in labels) for labels in run_top_strata)
    if expected >= RELIABLE_TOP_PAIRS:
        return None
    scale = RELIABLE_TOP_PAIRS / expected if expected > 0 else float("inf")
    return expected, int(min(np.ceil(len(sample.items) * scale), population))


def allocate(budget: int, sizes: np.ndarray) -> np.ndarray:
    """Units to draw per stratum: proportional to the stratum sizes (largest remainders),
    at least 2 per non-empty stratum (all of a smaller one), summing to the budget."""
    sizes = np.asarray(sizes, np.int64)
    floor = np.minimum(sizes, MIN_PER_STRATUM)
    if budget < floor.sum():
        raise InputError(f"a budget of {budget} pairs cannot give every stratum "
                         f"{MIN_PER_STRATUM} labels; it needs at least {int(floor.sum())}")
    if budget > sizes.sum():
        raise InputError(f"a budget of {budget} pairs exceeds the {int(sizes.sum())} pairs "
                         f"in the pool")
    take = floor.copy()
    # proportional share of what is left, by largest remainder
    while take.sum() < budget:
        left = budget - take.sum()
        room = sizes - take
        want = left * room / room.sum()
        add = np.minimum(np.floor(want).astype(np.int64), room)
        if add.sum() == 0:
            add[np.argmax(want - np.floor(want) + (room > 0))] = 1
        take += add
    return take


def _distinct_pairs(pool: Sequence[tuple[str, str]] | Pool) -> list[tuple[str, str]]:
    """The distinct (qid, docid) pairs of a Pool or a sequence of pairs, in order; an
    InputError for anything else."""
    items = pool.pairs if isinstance(pool, Pool) else pool
    try:
        pairs = list(dict.fromkeys((q, d) for q, d in items))
    # not iterable, not hashable, or not two values each
    except (TypeError, ValueError):
        raise InputError(f"expected the pooled pairs: a Pool (build_pool) or (qid, docid) "
                         f"tuples, found {type(pool).__name__}") from None
    return pairs


def draw(pairs: Sequence[tuple[str, str]] | Pool, design: Design, budget: int, seed: int, *,
         name: str = "sample", grades: Mapping[tuple[str, str], int] | None = None,
         queries: int | None = None, params: dict | None = None,
         pair_sizes: Mapping[tuple[str, str], float] | None = None) -> Sample:
    """Draw a sample of the pooled ``pairs`` (or of a Pool's pairs) under a design (see
    DESIGNS).

    ``budget``: pairs to label (for srs-queries, the number of queries is ``queries`` or
    the budget divided by the mean pairs per query); ``grades``: the judge's grade of each
    pair, required for stratified-pairs; ``pair_sizes``: each pair's size, required for active
    (inclusion probabilities proportional to it: ``infer.active.sizes``).
    """
    if design not in DESIGNS:
        raise InputError(f"unknown sampling design {design!r}; expected one of "
                         f"{', '.join(DESIGNS)}")
    pairs = _distinct_pairs(pairs)
    if not pairs:
        raise InputError("the pool is empty: nothing to sample")
    rng = np.random.default_rng(seed)
    params = dict(params or {})
    if design == "srs-queries":
        qids = list(dict.fromkeys(q for q, _ in pairs))
        n_q = queries if queries is not None else round(budget * len(qids) / len(pairs))
        if n_q > len(qids):
            raise InputError(f"cannot draw {n_q} queries: the pool has {len(qids)}")
        if n_q < MIN_QUERIES:
            raise InputError(f"a query-level sample needs at least {MIN_QUERIES} queries for "
                             f"an interval (asked for {n_q}); give --query-count or a budget of "
                             f"at least {MIN_QUERIES * len(pairs) / len(qids):.0f} pairs")
        chosen = [qids[i] for i in rng.permutation(len(qids))[:n_q]]
        by_query: dict[str, list[str]] = {}
        for q, d in pairs:
            by_query.setdefault(q, []).append(d)
        prob = n_q / len(qids)
        items: list[tuple[str, str, float, str | None]] = [
            (q, d, prob, None) for q in chosen for d in by_query[q]]
        params.update(queries=n_q, population_queries=len(qids))
        unit = "query"
    elif design == "active":
        from reljudge.infer import active

        if pair_sizes is None:
            raise InputError("the active design needs each pooled pair's size "
                             "(infer.active.sizes)")
        items = active.draw(pairs, pair_sizes, budget, rng)
        params.update(mix=active.MIX)
        unit = "pair"
    else:
        if design == "srs-pairs":
            strata = np.zeros(len(pairs), dtype=np.int64)
            labels = ["all"]
        else:
            if grades is None:
                raise InputError("stratified-pairs needs the judge's grades of the pool")
            missing = [p for p in pairs if p not in grades]
            if missing:
                raise InputError(f"{len(missing)} pooled pairs have no judge grade to "
                                 f"stratify by, e.g. {missing[0][0]} {missing[0][1]}")
            values = np.array([grades[p] for p in pairs], dtype=np.int64)
            levels, strata = np.unique(values, return_inverse=True)
            labels = [f"grade={g}" for g in levels.tolist()]
        sizes = np.bincount(strata, minlength=len(labels))
        take = allocate(budget, sizes)
        chosen_idx = []
        for h, n_h in enumerate(take.tolist()):
            members = np.flatnonzero(strata == h)
            chosen_idx += rng.choice(members, n_h, replace=False).tolist()
        chosen_idx = [chosen_idx[i] for i in rng.permutation(len(chosen_idx))]
        items = [(*pairs[i], float(take[strata[i]] / sizes[strata[i]]),
                  None if design == "srs-pairs" else labels[strata[i]]) for i in chosen_idx]
        params.update(strata={lab: {"population": int(s), "sampled": int(t)}
                              for lab, s, t in zip(labels, sizes, take, strict=True)})
        unit = "pair"
    params.setdefault("population_pairs", len(pairs))
    return Sample(name, unit, design, seed, budget,
                  [SampleItem(q, d, i, float(p), s) for i, (q, d, p, s) in enumerate(items)],
                  params)


def export(sample: Sample, queries: Mapping[str, str | None], passages: Mapping[str, str | None],
           path: str) -> tuple[str, int]:
    """The annotators' file text (.tsv or .jsonl by name) and how many pairs lack a text."""
    import json

    rows = [(i.position, i.qid, i.docid, queries.get(i.qid) or "",
             passages.get(i.docid) or "") for i in sample.items]
    lacking = sum(1 for r in rows if not r[3] or not r[4])
    if path.endswith(".jsonl"):
        text = "".join(json.dumps({"sample": sample.name, "position": p, "qid": q, "docid": d,
                                   "query": qt, "passage": pt}, ensure_ascii=False) + "\n"
                       for p, q, d, qt, pt in rows)
    else:
        def clean(s: str) -> str:
            return s.replace("\t", " ").replace("\r", " ").replace("\n", " ")

        text = "position\tqid\tdocid\tquery\tpassage\n" + "".join(
            f"{p}\t{q}\t{d}\t{clean(qt)}\t{clean(pt)}\n" for p, q, d, qt, pt in rows)
    return text, lacking
