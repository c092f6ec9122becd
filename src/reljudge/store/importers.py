"""Import labels from TREC qrels, CSV or JSONL files into the store, validated against the scale."""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import SCALE_TEXT, out_of_scale
from reljudge.grades import clip as clip_grade
from reljudge.io import iter_jsonl
from reljudge.io.coerce import DOCID_COLUMNS, GRADE_COLUMNS, QID_COLUMNS, pick_column
from reljudge.io.files import content_stem, content_suffix, read_text, text_lines
from reljudge.io.trec import read_qrels
from reljudge.store.store import LabelStore

FORMATS = ("qrels", "csv", "jsonl")


@dataclass
class Labels:
    """Labels read from one file, with the file line of each (found when first needed)."""

    path: str
    rows: list[tuple[str, str, int]]
    _lines: list[int] | None = None

    @property
    def lines(self) -> list[int]:
        """The file line of each row."""
        if self._lines is None:
            self._lines = _line_numbers(read_text(self.path), len(self.rows))
        return self._lines


@dataclass
class ImportReport:
    """What an import did."""

    path: str
    kind: str
    name: str
    events: int = 0
    skipped: bool = False  # the same file was already imported into this source
    clipped: list[tuple[int, int, int]] = field(default_factory=list)  # (line, was, now)
    unknown_queries: list[str] = field(default_factory=list)
    unknown_passages: list[str] = field(default_factory=list)


def detect_format(path: str | Path) -> str:
    """qrels, csv or jsonl, from the file name (``labels.csv.gz`` is csv)."""
    suffix = content_suffix(path)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    return "qrels"


def _line_numbers(text: str, count: int) -> list[int]:
    """Line number of each non-blank line, in order."""
    out = [n for n, line in enumerate(text_lines(text), 1) if line.strip()]
    return out[:count]


def read_labels(path: str | Path, fmt: str | None = None) -> Labels:
    """Read (qid, docid, grade) labels with their line numbers; grades must be integers."""
    fmt = fmt or detect_format(path)
    if fmt == "qrels":
        return Labels(str(path), list(read_qrels(path)))
    text = read_text(path)
    rows, lines = [], []
    if fmt == "jsonl":
        for n, obj in iter_jsonl(path):
            keys = [pick_column(obj, names, what, path, n) for names, what in _FIELDS]
            rows.append((_id(obj[keys[0]], "query id", path, n),
                         _id(obj[keys[1]], "document id", path, n), _grade(obj[keys[2]], path, n)))
            lines.append(n)
    elif fmt == "csv":
        reader = csv.reader(io.StringIO(text))
        header = [h.strip().lower() for h in next(reader, [])]
        if not header:
            raise InputError("expected a header with query id, document id and grade columns "
                             "(e.g. qid,docid,grade), found an empty file", path, 1)
        iq, idoc, ig = (header.index(pick_column(header, names, what, path, 1))
                        for names, what in _FIELDS)
        for n, rec in enumerate(reader, 2):
            if not rec or not any(x.strip() for x in rec):
                continue
            if len(rec) < len(header):
                raise InputError(f"expected {len(header)} columns, found {len(rec)}", path, n)
            rows.append((rec[iq].strip(), rec[idoc].strip(), _grade(rec[ig].strip(), path, n)))
            lines.append(n)
    else:
        raise InputError(f"unknown label format {fmt!r}; expected one of {', '.join(FORMATS)}")
    seen: dict[tuple[str, str], int] = {}
    for (q, d, _), n in zip(rows, lines, strict=False):
        if (q, d) in seen:
            raise InputError(f"duplicate label for query {q!r}, document {d!r} (first on line "
                             f"{seen[(q, d)]})", path, n)
        seen[(q, d)] = n
    if not rows:  # a CSV with only its header, or blank JSONL: nothing to import is a mistake
        raise InputError(f"no labels, expected {fmt} lines of qid, docid and grade", path)
    return Labels(str(path), rows, lines)


_FIELDS = ((QID_COLUMNS, "query id"), (DOCID_COLUMNS, "document id"), (GRADE_COLUMNS, "grade"))


def _id(value, what: str, path, line: int) -> str:
    if value is None or isinstance(value, (dict, list, bool)) or value == "":
        raise InputError(f"expected a {what} (text or number), found {value!r}", path, line)
    return str(value)


def _grade(value, path, line: int) -> int:
    try:
        g = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (TypeError, ValueError):
        g = None
    if g is None or isinstance(value, bool):
        raise InputError(f"expected an integer grade, found {value!r}", path, line)
    return g


def check_scale(labels: Labels, clip: bool) -> tuple[list[tuple[str, str, int]],
                                                     list[tuple[int, int, int]]]:
    """Reject (default) or clip grades outside 0..3; returns rows and (line, was, now) clips."""
    grades = np.fromiter((g for _, _, g in labels.rows), np.int64, len(labels.rows))
    bad = out_of_scale(grades)
    if len(bad) and not clip:
        first = int(bad[0])
        more = f" ({len(bad) - 1} more)" if len(bad) > 1 else ""
        raise InputError(f"grade {int(grades[first])} is outside the scale {SCALE_TEXT}"
                         f"{more}; pass --clip to clip out-of-range grades", labels.path,
                         labels.lines[first])
    rows = list(labels.rows)
    clipped = []
    for i in bad.tolist():
        q, d, g = rows[i]
        new = clip_grade(g)
        rows[i] = (q, d, new)
        clipped.append((labels.lines[i], g, new))
    return rows, clipped


def import_labels(store: LabelStore, path: str | Path, kind: str, name: str | None = None, *,
                  fmt: str | None = None, clip: bool = False, force: bool = False) -> ImportReport:
    """Import one label file as one source, in one transaction.

    Importing the same file (same bytes) into the same source again does nothing unless
    ``force``; unknown query or passage ids are reported when the store knows texts.
    """
    from reljudge.io import irds

    dataset = irds.is_irds(path)  # irds:DATASET_ID: named by the id, hashed by its labels
    name = name or (irds.dataset_id(path) if dataset else content_stem(path))
    report = ImportReport(str(path), kind, name)
    labels = read_labels(path, fmt)
    rows, report.clipped = check_scale(labels, clip)
    digest = hashlib.sha256("".join(f"{q} {d} {g}\n" for q, d, g in rows).encode()
                            if dataset else Path(path).read_bytes()).hexdigest()
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
