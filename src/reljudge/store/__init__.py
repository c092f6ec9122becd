"""The label store: every label with its provenance, in a SQLite file or a PostgreSQL schema,
merged by rule."""

from reljudge.grades import AGGREGATES
from reljudge.store.importers import ImportReport, import_labels
from reljudge.store.merge import (
           POLICIES,
           Conflict,
           FinalLabel,
           Merged,
           conflicts,
           coverage,
           coverage_summary,
           merge_rows,
)
from reljudge.store.names import resolve_source, short_names
from reljudge.store.store import LabelStore, SourceStats

__all__ = ["AGGREGATES", "POLICIES", "Conflict", "FinalLabel", "ImportReport", "LabelStore",
           "Merged", "SourceStats", "conflicts", "coverage", "coverage_summary", "import_labels", "merge_rows",
           "resolve_source", "short_names"]
