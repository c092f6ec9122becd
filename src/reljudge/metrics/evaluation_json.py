"""The JSON record of an evaluation, one builder for ``reljudge eval --format json`` and the
pipeline's ``scores.json``: what was measured, over which queries, by which conventions, and
each run's mean (and per-query values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reljudge.metrics.evaluate import Evaluation
from reljudge.metrics.queries import rule_name, rule_text

CONVENTIONS = ("trec_eval's unless a measure says otherwise: gain = grade, ideal ranking from "
               "the qrels, unjudged documents count as irrelevant")


def evaluation_json(results: Mapping[str, Evaluation], measures: Sequence[str], *,
                 all_queries: bool, per_query: bool = True, warnings: Sequence[str] = (),
                 labelling: Mapping | None = None) -> dict:
    """The evaluation of several runs as one JSON-ready dict; ``labelling`` (a pipeline's
    record of its label stage) adds ``complete`` and ``labelling``: what the qrels rest on."""
    said = {} if labelling is None else {"complete": bool(labelling["complete"]),
                                         "labelling": dict(labelling)}
    return {
        **said, "measures": list(measures), "all_queries": all_queries,
        "conventions": CONVENTIONS,
        "compat": next((ev.compat for ev in results.values()), "trec_eval-10"),
        "rule": rule_name(all_queries),
        "rule_text": rule_text(all_queries), "warnings": list(warnings),
        "runs": {name: {"queries": len(ev.query_ids), "mean": ev.mean(),
                        **({"per_query": ev.per_query()} if per_query else {})}
                 for name, ev in results.items()},
    }
