"""Retrieval measures with trec_eval semantics, vectorised over queries."""

from reljudge.metrics.evaluate import Evaluation, evaluate, evaluate_many, rank
from reljudge.metrics.measures import SPECS, Measure
from reljudge.metrics.trec_names import read_measure as parse_measure

__all__ = ["SPECS", "Evaluation", "Measure", "evaluate", "evaluate_many", "parse_measure", "rank"]
