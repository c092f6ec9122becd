"""The front door for files and in-memory inputs: opening and atomic writing (``files``),
TREC qrels and runs (``reljudge.io.trec``), queries, passages, pairs (``texts``), in-memory shapes
(``coerce``), ir_datasets (``irds``) and the checksums of what a job read (``checksums``)."""

from reljudge.io.texts import iter_jsonl, read_pairs, read_passages, read_queries

__all__ = ["iter_jsonl", "read_pairs", "read_passages", "read_queries"]
