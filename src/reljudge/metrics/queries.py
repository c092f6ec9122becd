"""Which queries a mean is over: one rule for every scoring command, stated in every output.

trec_eval's default averages over the run's queries that have qrels; ``-c`` (our
``all_queries``) averages over every qrels query, one the run lacks scoring 0. Paired
comparisons (compare, report) use, for each run against the baseline, the queries both runs
are averaged over: all qrels queries with ``all_queries``, else those the two runs share.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reljudge.errors import InputError
from reljudge.trec_data import Qrels, Run

RUN_QUERIES = "run-queries"
ALL_QUERIES = "all-queries"


def rule_name(all_queries: bool) -> str:
    """The rule's short name, as JSON outputs carry it."""
    return ALL_QUERIES if all_queries else RUN_QUERIES


def rule_text(all_queries: bool) -> str:
    """One sentence saying which queries a mean is over."""
    if all_queries:
        return ("means over every qrels query; a query a run lacks scores 0 "
                "(--all-queries, trec_eval -c)")
    return ("means over each run's queries that have qrels (trec_eval's default; "
            "--all-queries counts every qrels query, missing ones as 0)")


@dataclass(frozen=True)
class Coverage:
    """How a run's queries meet the qrels' queries."""

    run: str
    qrels_queries: int
    #: run queries that have qrels
    scored: int
    #: qrels queries the run lacks
    missing: int
    #: the judged queries' name in messages: "qrels", or "judged" for judgments in another
    #: form (preferences, judgment groups)
    what: str = "qrels"

    def warning(self, all_queries: bool) -> str | None:
        """A one-line warning when the run lacks qrels queries, else None."""
        if not self.missing:
            return None
        then = ("they score 0 (--all-queries)" if all_queries else
                f"its means are over its {self.scored} (--all-queries counts the missing as 0)")
        return (f"warning: run {self.run} has no results for {self.missing} of the "
                f"{self.qrels_queries} {self.what} queries; {then}")


def coverage(qrels: Qrels | Collection[str], runs: Sequence[Run], all_queries: bool = False,
             what: str = "qrels") -> list[Coverage]:
    """Each run's coverage of the judged queries (of qrels, or the ids of judgments in
    another form, named by ``what``); a run with no judged query (and not ``all_queries``)
    is an InputError, since its mean would be over nothing."""
    have = set(qrels.query_ids() if isinstance(qrels, Qrels) else qrels)
    out = []
    for run in runs:
        scored = len(have.intersection(run.query_ids()))
        if not scored and not all_queries:
            file = "qrels" if what == "qrels" else "judgments"
            raise InputError(f"run {run.name} has no query that the {file} have (wrong "
                             f"{file} file?); nothing to average")
        out.append(Coverage(run.name, len(have), scored, len(have) - scored, what))
    return out


def coverage_warnings(qrels: Qrels | Collection[str], runs: Sequence[Run],
                      all_queries: bool = False, what: str = "qrels") -> list[str]:
    """The warning lines of ``coverage`` (one per run that lacks judged queries)."""
    return [w for c in coverage(qrels, runs, all_queries, what)
            if (w := c.warning(all_queries)) is not None]


#: the measure of how much of each run's top 10 has labels, and the mean below which a run's
#: scores get a note (they rest partly on unjudged documents, counted as not relevant)
JUDGED_MEASURE = "Judged@10"
JUDGED_WARN = 0.9


def unjudged_notes(results: Mapping[str, Any]) -> list[str]:
    """One note per run (name -> its evaluation, holding JUDGED_MEASURE) whose mean
    Judged@10 is below JUDGED_WARN."""
    notes = []
    for name, ev in results.items():
        share = ev.mean()[JUDGED_MEASURE]
        if ev.query_ids and share < JUDGED_WARN:
            notes.append(f"{name}: {JUDGED_MEASURE} = {share:.2f}, its scores rest partly on "
                         "unjudged documents (counted as not relevant); see reljudge eval "
                         "--judged, Bpref, 'nDCG(judged_only=True)@10'")
    return notes
