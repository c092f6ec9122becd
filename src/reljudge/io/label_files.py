"""Label files, one reader for any format and one naming rule for a set of them.

A label file is TREC qrels, CSV (a header naming the query id, document id and grade columns)
or JSONL (the same keys), compressed or not; grades are integers checked against the scale.
The reference labels and every judge's labels are read here, by the audit, calibration, the
report and the store's import alike, and a set of label files is named by ``label_names``.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from reljudge.errors import ConfigError, InputError
from reljudge.grades import SCALE_TEXT, out_of_scale
from reljudge.grades import clip as clip_grade
from reljudge.io.coerce import DOCID_COLUMNS, GRADE_COLUMNS, QID_COLUMNS, pick_column
from reljudge.io.fields import fits_int64
from reljudge.io.files import content_stem, content_suffix, read_text, text_lines
from reljudge.io.texts import iter_jsonl
from reljudge.io.trec import read_qrels
from reljudge.trec_data import Qrels

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
        q = read_qrels(path)
        rows = list(zip(q.qid.tolist(), q.docid.tolist(), q.grade.tolist(), strict=False))
        return Labels(str(path), rows)
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
    # a CSV with only its header, or blank JSONL: nothing to import is a mistake
    if not rows:
        raise InputError(f"no labels, expected {fmt} lines of qid, docid and grade", path)
    return Labels(str(path), rows, lines)


_FIELDS = ((QID_COLUMNS, "query id"), (DOCID_COLUMNS, "document id"), (GRADE_COLUMNS, "grade"))


def _id(value: object, what: str, path: str | Path, line: int) -> str:
    if value is None or isinstance(value, (dict, list, bool)) or value == "":
        raise InputError(f"expected a {what} (text or number), found {value!r}", path, line)
    return str(value)


def _grade(value: Any, path: str | Path, line: int) -> int:
    try:
        g = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (TypeError, ValueError):
        g = None
    if g is None or isinstance(value, bool):
        raise InputError(f"expected an integer grade, found {value!r}", path, line)
    if not fits_int64(g):
        raise InputError(f"grade {g} is beyond 64 bits; expected an integer grade such as "
                         "0-3", path, line)
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


def read_judge(path: str | Path, clip: bool = False) -> tuple[Qrels, int]:
    """One label file of any format (a reference's or a judge's) as qrels, with the count of
    grades clipped: out-of-scale grades are rejected with file:line, or clipped when ``clip``."""
    rows, clipped = check_scale(read_labels(path), clip)
    return (Qrels.from_arrays([r[0] for r in rows], [r[1] for r in rows],
                              np.array([r[2] for r in rows], dtype=np.int64), check=False),
            len(clipped))


def read_judges(paths: Sequence[str | Path], clip: bool = False
                ) -> tuple[dict[str, Qrels], dict[str, int]]:
    """Several label files as ({name: qrels}, {name: grades clipped}), in the order given and
    named by ``label_names`` (so no file is ever dropped for sharing another's name)."""
    judges: dict[str, Qrels] = {}
    clipped: dict[str, int] = {}
    for name, path in zip(label_names(paths), paths, strict=True):
        judges[name], clipped[name] = read_judge(path, clip)
    return judges, clipped


def label_name(path: str | Path) -> str:
    """A label file's own name: its stem without format and compression suffixes
    (``a/x.qrels.gz`` -> ``x``); an ``irds:DATASET_ID`` input is named by the dataset id."""
    from reljudge.io import irds

    return irds.dataset_id(path) if irds.is_irds(path) else content_stem(path)


def label_names(paths: Sequence[str | Path]) -> list[str]:
    """The one naming rule for a set of label files: each file's ``label_name``; where names
    clash, each clashing name is prefixed by the fewest parent folders that tell those files
    apart (``a/x.qrels``, ``b/x.qrels`` -> ``a/x``, ``b/x``), and files that folders cannot
    tell apart (``d/x.txt``, ``d/x.qrels``) keep their paths as given. A file given twice is
    a ConfigError."""
    names = [label_name(p) for p in paths]
    clashes: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(names):
        clashes[name].append(i)
    for name, where in clashes.items():
        if len(where) > 1:
            for i, longer in zip(where, _told_apart(name, [paths[i] for i in where]),
                                 strict=True):
                names[i] = longer
    return names


def _told_apart(name: str, paths: Sequence[str | Path]) -> list[str]:
    """Distinct names for files sharing ``name``: under their last k parent folders, k the
    fewest that suffices, else their paths."""
    folders = [_folders(p) for p in paths]
    for k in range(1, max(len(f) for f in folders) + 1):
        longer = ["/".join((*f[-k:], name)) for f in folders]
        if len(set(longer)) == len(longer):
            return longer
    given = [PurePath(p).as_posix() for p in paths]
    for i, path in enumerate(given):
        if path in given[:i]:
            raise ConfigError(f"{path}: given twice; give each label file once")
    return given


def _folders(path: str | Path) -> tuple[str, ...]:
    """The parent folders of a label file as written (no root; none for irds: inputs)."""
    from reljudge.io import irds

    if irds.is_irds(path):
        return ()
    p = PurePath(path)
    return tuple(part for part in p.parent.parts if part not in (p.anchor, "."))
