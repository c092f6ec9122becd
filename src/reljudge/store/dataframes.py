"""A label store's contents as pandas DataFrames (pandas optional: without it a ReljudgeError
names `pip install pandas`)."""

from __future__ import annotations

from reljudge.choices import Aggregate, DerivedVote
from reljudge.frames import DataFrame, dataframe
from reljudge.store import views
from reljudge.store.events import EventLog


class Frames(EventLog):
    """DataFrame views of a store's events (a part of ``LabelStore``)."""

    def labels_dataframe(self) -> DataFrame:
        """Every event (grades, failures, undos) as a pandas DataFrame, LabelEvent's fields as
        columns, in the order they were added."""
        return views.events_frame(self)

    def provenance_dataframe(self, policy: str = "human-first", aggregate: Aggregate = "majority",
                             fractional: bool = False, derived: DerivedVote = "recorded"
                             ) -> DataFrame:
        """The merged labels with provenance as a pandas DataFrame: the records
        ``labels merge --provenance`` writes (sources and votes as lists)."""
        rows = self.merge(policy, aggregate, fractional, derived).provenance_rows()
        columns = views.PROVENANCE_COLUMNS
        return dataframe(columns, [[r[c] for c in columns] for r in rows])

    def failures_dataframe(self, history: bool = False) -> DataFrame:
        """Failed judgments as a pandas DataFrame: those still without a grade (qid, docid,
        source, repeat, kind, detail; kind None for a failure written without one), or
        with ``history`` every failed event (qid, docid, source, failure, raw)."""
        if history:
            return dataframe(views.FAILURE_HISTORY_COLUMNS, self.failures())
        return dataframe(views.CURRENT_FAILURE_COLUMNS, self.current_failures())

    def conflicts_dataframe(self, aggregate: Aggregate = "majority", min_diff: float = 1.0
                            ) -> DataFrame:
        """Human/LLM conflicts with query and passage text and the judge's raw answers, as a
        pandas DataFrame (the rows of ``labels conflicts --with-text``)."""
        return views.conflicts_frame(views.conflicts_with_text(self, aggregate, min_diff))
