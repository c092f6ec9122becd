"""What estimates are made of: each pooled pair's weight and gain in a linear measure, the
sampled population, the cells of values a design estimates from (and the difference of two),
the design protocol, the human grades taken as truth, and one row of estimates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import GRADE_MAX
from reljudge.infer import ppi
from reljudge.labels import Sample
from reljudge.metrics import gain_kernels, kernels
from reljudge.metrics.measures import Measure
from reljudge.pool import PairIndex, top_k
from reljudge.trec_data import Qrels, Run

if TYPE_CHECKING:
    from reljudge.store import LabelStore

PAIR_MEASURES = ("DCG", "P", "RBP")


@dataclass(frozen=True)
class RunEstimate:
    """One run (or a difference of two runs) on one measure."""

    run: str
    measure: str
    llm: float
    llm_low: float
    llm_high: float
    human: float
    human_low: float
    human_high: float
    ppi: float
    ppi_low: float
    ppi_high: float
    lam: float
    human_labels: int
    effective_labels: float
    # for differences: two-sided p-value of no difference
    p: float | None = None
    # sampled units carrying the measure: queries, or pairs in the top k
    informative: int = 0
    # set when the sample is below the benchmark's reliable size
    warning: str | None = None
    # the sample is a census of every unit the row depends on
    exact: bool = False


def grades_of(qrels: Qrels) -> dict[tuple[str, str], int]:
    """{(qid, docid): grade} of the labels."""
    return {(q, d): g for q, d, g in qrels}


def pair_weights(run: Run, pairs: Sequence[tuple[str, str]] | PairIndex, measure: Measure,
                 top: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Weight of each pair in a linear measure of the run (0 outside its top k), divided
    later by the number of queries: DCG@k 1/log2(rank+1), P@k 1/k, RBP@k (1-p) p^(rank-1).
    Many runs against one list of pairs: pass it as a ``PairIndex``, indexed once; ``top``:
    the run's ``top_k`` at the measure's cutoff, where found already."""
    k = measure.cutoff
    if measure.name not in PAIR_MEASURES or k is None or measure.param("judged_only") is True \
            or (measure.name == "RBP" and measure.param("residual")):
        raise InputError(f"{measure} cannot be estimated from a pair-level sample (only "
                         f"DCG@k, P@k and RBP@k are linear in the gains with a fixed "
                         f"normaliser, and nDCG@k is a ratio of estimates); draw a "
                         f"query-level sample (--design srs-queries) for it")
    index = pairs if isinstance(pairs, PairIndex) else PairIndex(pairs)
    ranks = index.ranks(*(top if top is not None else top_k(run, int(k))))
    if measure.name == "DCG":
        at = ranks.astype(np.int64)
        return np.where(at > 0, kernels.discount(int(k))[np.maximum(at, 1) - 1], 0.0)
    if measure.name == "RBP":
        p = float(measure.param("p"))
        return np.where(ranks > 0, (1.0 - p) * p ** np.maximum(ranks - 1.0, 0.0), 0.0)
    return np.where(ranks > 0, 1.0 / int(k), 0.0)


def gain(grades: np.ndarray, measure: Measure) -> np.ndarray:
    """The gain a linear measure gives each grade (the metrics kernels' own gains)."""
    g = np.asarray(grades)
    if measure.name in ("P", "RBP"):
        return kernels.relevant(g, measure.param("rel")).astype(np.float64)
    return gain_kernels.gains(g, measure.param("dcg"))


# (run, measure) -> the per-query or per-pair values
Cells = dict[tuple[str, str], dict]


class Design(Protocol):
    """How a sample design turns one cell (a run's, or a difference of two runs') into a
    PPI estimate and the number of sampled units that carry the measure."""

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]: ...


def estimates(design: Design, cells: Cells, names: Sequence[str], m: Measure,
              pairs: Sequence[tuple[int, int | None]]) -> tuple[ppi.Estimate, list[int]]:
    """The estimate of each (i, j) of ``pairs`` (at least one), run names[i] minus
    names[j] (j None: the run alone), vectorised over them, and each one's sampled units
    carrying the measure: in one call where the design has one (``batch``: the same
    numbers), else one ``estimate`` each. The pairs are all runs alone or all pairs of
    runs."""
    batch = getattr(design, "batch", None)
    if batch is not None:
        return batch(cells, names, m, pairs)
    key = str(m)
    each = [design.estimate(cells[(names[i], key)], names[i], m) if j is None else
            design.estimate(difference_cell(cells[(names[i], key)], cells[(names[j], key)]),
                            names[i], m, names[j]) for i, j in pairs]
    return ppi.concatenate([e for e, _ in each]), [k for _, k in each]


def difference_cell(cell: dict, other: dict) -> dict:
    """The cell of one run minus another: every value paired on the shared sample."""
    dcell = {k: cell[k] - other[k] for k in cell}
    # a difference ranges over both runs' values
    if "spread" in cell:
        dcell["spread"] = cell["spread"] + other["spread"]
    return dcell


def difference_domain(dcell: dict, mine: tuple[np.ndarray, np.ndarray],
                      theirs: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The sampled and pooled pairs a difference of two runs can be nonzero on: those the two
    runs weigh differently (``dcell["w"]``, ``dcell["w_pop"]``: the weights' differences),
    else, for a cell without weights, either run's top k (``mine``, ``theirs``: the runs'
    (sampled, pooled) pairs in the top k). A pair both runs rank alike adds exactly 0."""
    if "w" in dcell:
        return dcell["w"] != 0, dcell["w_pop"] != 0
    return mine[0] | theirs[0], mine[1] | theirs[1]


def population(sample: Sample, judge: Qrels
               ) -> tuple[list[tuple[str, str]], list[str], np.ndarray]:
    """The sampled population (the recorded pool, else every judge-labelled pair), strata
    labels and sizes."""
    graded = grades_of(judge)
    if "population" in sample.params:
        pop = [tuple(p) for p in sample.params["population"]]
        missing = [p for p in pop if p not in graded]
        if missing:
            raise InputError(f"{len(missing)} pairs of sample {sample.name!r}'s pool have no "
                             f"judge label (first: {missing[0][0]} {missing[0][1]})")
    else:
        pop = sorted(graded)
    strata_info: Mapping = sample.params.get("strata", {"all": {"population": len(pop)}})
    labels = list(strata_info)
    sizes = np.array([strata_info[lab]["population"] for lab in labels], dtype=np.float64)
    if int(sizes.sum()) != len(pop):
        raise InputError(f"sample {sample.name!r} was drawn from {int(sizes.sum())} pairs, "
                         f"but the judge labels {len(pop)}: estimate with the judge source "
                         f"the sample was drawn from")
    return pop, labels, sizes


def check_in_pool(sample: Sample, judge: Qrels, runs: Sequence[Run],
                  parsed: Sequence[Measure]) -> None:
    """Refuse a run whose top k (k the largest cutoff asked for) holds pairs of the
    population's queries outside the population the pair sample was drawn from: nothing in the sample speaks for them, and
    counting them as 0 would print a census's certainty for a score that is not the run's."""
    found = outside_pool(sample, judge, runs, parsed)
    if found:
        raise InputError(next(iter(found.values())))


def outside_pool(sample: Sample, judge: Qrels, runs: Sequence[Run],
                 parsed: Sequence[Measure]) -> dict[str, str]:
    """{run name: why} for each run ``check_in_pool`` refuses."""
    cutoffs = [int(m.cutoff) for m in parsed if m.cutoff is not None]
    if not cutoffs:
        return {}
    pop = population(sample, judge)[0]
    index = PairIndex(pop)
    # a run's other queries do not enter the estimate
    queries = {q for q, _ in pop}
    found = {}
    for run in runs:
        q, d, _ = top_k(run, max(cutoffs))
        asked = np.fromiter(map(queries.__contains__, q.tolist()), bool, len(q))
        outside = np.flatnonzero((index.rows(q, d) < 0) & asked)
        if len(outside):
            first = int(outside[0])
            found[run.name] = (
                f"run {run.name}: {len(outside)} of its top-{max(cutoffs)} pairs are outside "
                f"the pool sample {sample.name!r} was drawn from (first: {q[first]} "
                f"{d[first]}); estimate the runs that pool came from, at a cutoff within "
                f"its depth, or draw a sample with this run")
    return found


@dataclass(frozen=True)
class PairValues:
    """What a pair design's cells rest on: the sampled population, its strata, the judge's
    grades of the pooled pairs and each cell's items and pooled pairs in the run's top k."""

    pop: list[tuple[str, str]]
    labels: list[str]
    sizes: np.ndarray
    pop_grades: np.ndarray
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]


def pair_cells(sample: Sample, judge: Qrels, human: Qrels, runs: Sequence[Run],
               parsed: Sequence[Measure], cells: Cells) -> PairValues:
    """Add each cell's weighted gains of the sampled pairs under both labels (``a`` human,
    ``b`` judge), the judge's total over the pool, the values' spread and the rank weights
    of the sampled and pooled pairs (``w``, ``w_pop``)."""
    pop, labels, sizes = population(sample, judge)
    item_pairs = sample.pairs()
    hg, jg = grades_of(human), grades_of(judge)
    h_grades = np.array([hg[p] for p in item_pairs])
    j_grades = np.array([jg[p] for p in item_pairs])
    pop_grades = np.array([jg[p] for p in pop])
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    pop_index, item_index = PairIndex(pop), PairIndex(item_pairs)
    for m in parsed:
        top_gain = gain(np.array([GRADE_MAX]), m)[0]
        for run in runs:
            # the run's top k, found once for both lists (a measure without a cutoff is
            # refused by pair_weights)
            top = top_k(run, int(m.cutoff)) if m.cutoff and m.cutoff >= 1 else None
            w_pop = pair_weights(run, pop_index, m, top)
            w_items = pair_weights(run, item_index, m, top)
            cell = cells[(run.name, str(m))]
            cell["a"] = w_items * gain(h_grades, m)
            cell["b"] = w_items * gain(j_grades, m)
            cell["b_total"] = float((w_pop * gain(pop_grades, m)).sum())
            # a difference's domain: w_A != w_B
            cell["w"], cell["w_pop"] = w_items, w_pop
            # the most a pair's value can differ from another's: its largest weight
            # times the top grade's gain (a difference of two runs: twice that)
            cell["spread"] = float(max(w_pop.max(initial=0), w_items.max(initial=0))
                                   * top_gain)
            in_top[(run.name, str(m))] = (w_items > 0, w_pop > 0)
    return PairValues(pop, labels, sizes, pop_grades, in_top)


def human_truth(store: LabelStore, pairs: Set[tuple[str, str]], human_source: str | None = None
                ) -> dict[tuple[str, str], int]:
    """{pair: human grade} of ``pairs``: the standing human grades (a grade its annotator
    undid does not count), merged as ``labels merge --policy adjudicated-first`` merges them:
    an adjudicated grade where there is one, else the annotators' majority (a tie to the
    lower grade); with ``human_source``, that one source's grade."""
    from reljudge.store.merge import merge_rows

    rows = [(g.qid, g.docid, "human", g.source, g.repeat, g.grade, g.event)
            for g in store.standing("human")
            if (g.qid, g.docid) in pairs and (human_source is None or g.source == human_source)]
    return {(lab.qid, lab.docid): int(lab.grade)
            for lab in merge_rows(rows, "adjudicated-first", "majority").labels}
