"""A reference and judges' labels read from a store by their source names as users type them
(the full name, the model alone, a prefix: ``names.resolve_source``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from reljudge.trec_data import Qrels


class StoreLabels(NamedTuple):
    """A reference's and judges' labels from a store, by their full source names."""

    reference: str
    reference_qrels: Qrels
    judges: dict[str, Qrels]
    #: {judge: grade distributions, or None when it has none}; None when not asked for
    distributions: dict[str, dict[tuple[str, str], tuple[float, ...]] | None] | None


def labels_from_store(path: str | Path, reference: str, judges: Sequence[str] | None, *,
                      reference_kind: str | None = None, probs: bool = False,
                      readonly: bool = True, reference_option: str = "",
                      judge_option: str = "") -> StoreLabels:
    """The labels of ``reference`` (of ``reference_kind`` when given) and of each of
    ``judges`` (None: every LLM source but the reference) in the store at ``path``, read in
    one go, with the judges' grade distributions when ``probs``; an unknown name's error
    names ``reference_option`` / ``judge_option`` when given."""
    from reljudge.errors import InputError
    from reljudge.store import LabelStore
    from reljudge.store.names import resolve_source

    where = str(path)
    with LabelStore(path, create=False, readonly=readonly) as store:
        known = store.source_list()
        ref = resolve_source(known, reference, kind=reference_kind, where=where,
                             option=reference_option).name
        if judges is None:
            names = [s.name for s in known if s.kind == "llm" and s.name != ref]
            if not names:
                raise InputError(f"{where}: no LLM source besides {ref!r} to audit; label "
                                 "with reljudge label --store first")
        else:
            names = [resolve_source(known, n, where=where, option=judge_option).name
                     for n in judges]
        read = store.source_qrels([ref, *names])
        ref_qrels, judged = read[ref], {n: read[n] for n in names}
        dists = {n: store.distributions(n) or None for n in names} if probs else None
    return StoreLabels(ref, ref_qrels, judged, dists)
