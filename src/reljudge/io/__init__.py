"""The front door for files and in-memory inputs: opening and atomic writing (``files``),
TREC qrels and runs (``reljudge.io.trec``), label files of any format and their names
(``label_files``), queries, passages, pairs (``texts``), in-memory shapes (``coerce``),
ir_datasets (``irds``) and the checksums of what a job read (``checksums``)."""

from reljudge.io.label_files import label_names, read_judge, read_judges
from reljudge.io.texts import iter_jsonl, read_pairs, read_passages, read_queries

__all__ = ["iter_jsonl", "label_names", "read_judge", "read_judges", "read_pairs",
           "read_passages", "read_queries"]
