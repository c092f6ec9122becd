"""The runs a judge favours, audited: the reference labels as the human labels of
``infer.favours``, so that the audit and ``estimate`` give the same numbers where both apply."""

from __future__ import annotations

from collections.abc import Sequence

from reljudge.errors import InputError
from reljudge.infer.favours import TOP, Favours
from reljudge.infer.sample import MIN_QUERIES
from reljudge.labels import Sample, SampleItem
from reljudge.trec_data import Qrels, Run


def reference_favours(reference: Qrels, judge: Qrels, runs: Sequence[Run], measure: str, *,
                      level: float = 0.95, top: int = TOP, seed: int = 0) -> Favours:
    """Each run's judge-only score minus its score under the reference labels. Where the
    reference labels every query the judge labels, that score is exact (a census); where it
    labels some of them, the reference's queries are taken as a simple random sample of the
    judge's, and the score is the query-level PPI estimate ``reljudge estimate`` makes from
    such a sample, with its interval."""
    from reljudge.infer.scores import estimate_runs

    queries = sorted(set(judge.query_ids()))
    known = set(queries)
    labelled = {q: d for q, d in reference.to_dict().items() if q in known}
    if len(labelled) < min(len(queries), MIN_QUERIES):
        raise InputError(f"the reference labels {len(labelled)} of the judge's {len(queries)} "
                         f"queries: a run's bias needs all of them, or a sample of at least "
                         f"{MIN_QUERIES}")
    pairs = [(q, d) for q in sorted(labelled) for d in sorted(labelled[q])]
    share = len(labelled) / len(queries)
    sample = Sample("reference", "query", "srs-queries", seed, len(pairs),
                    [SampleItem(q, d, i, share) for i, (q, d) in enumerate(pairs)],
                    {"queries": len(labelled), "population_queries": len(queries)})
    found: list[Favours] = []
    estimate_runs(sample, judge, Qrels.from_dict(labelled), runs, [measure], level=level,
                  seed=seed, favours=found, top=top)
    return found[0]
