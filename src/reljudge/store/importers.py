"""Import labels from TREC qrels, CSV or JSONL files into the store, validated against the scale."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from reljudge.io.label_files import check_scale, label_name, read_labels
from reljudge.store.store import LabelStore


@dataclass
class ImportReport:
    """What an import did."""

    path: str
    kind: str
    name: str
    events: int = 0
    #: the same file was already imported into this source
    skipped: bool = False
    #: (line, was, now)
    clipped: list[tuple[int, int, int]] = field(default_factory=list)
    unknown_queries: list[str] = field(default_factory=list)
    unknown_passages: list[str] = field(default_factory=list)


def import_labels(store: LabelStore, path: str | Path, kind: str, name: str | None = None, *,
                  fmt: str | None = None, clip: bool = False, force: bool = False) -> ImportReport:
    """Import one label file as one source, in one transaction.

    Importing the same file (same bytes) into the same source again does nothing unless
    ``force``; unknown query or passage ids are reported when the store knows texts.
    """
    from reljudge.io import irds

    #: irds:DATASET_ID: named by the id, hashed by its labels
    dataset = irds.is_irds(path)
    name = name or label_name(path)
    report = ImportReport(str(path), kind, name)
    labels = read_labels(path, fmt)
    rows, report.clipped = check_scale(labels, clip)
    digest = hashlib.sha256("".join(f"{q} {d} {g}\n" for q, d, g in rows).encode()
                            if dataset else Path(path).read_bytes()).hexdigest()
    # the check and the write at once: another process
    with store.db.transaction():
        # importing the same file waits, then finds it imported
        store.db.lock("import")
        if not force and store.find_import(digest, kind, name) is not None:
            report.skipped = True
            return report
        known_q = {q for q, t in store.queries().items() if t is not None}
        known_d = store.passages_with_text()
        if known_q:
            report.unknown_queries = sorted({q for q, _, _ in rows} - known_q)
        if known_d:
            report.unknown_passages = sorted({d for _, d, _ in rows} - known_d)
        report.events = store.add_grades(rows, kind, name, batch_info={
            "path": str(path), "sha256": digest, "clipped": len(report.clipped)})
    return report
