"""Read judgments in trec_eval's other forms (its ``-R``): preference files, qrels read as
preferences, and qrels with judgment groups (the forms are described in docs/measures.md):

- ``prefs``: ``QID JG JSG DOCID LEVEL``, a judgment group (JG) of sub-groups (JSG);
- ``qrels_prefs``: a qrels file ``QID JG DOCID GRADE`` read as preferences, the second column
  naming the judgment group (one sub-group each);
- ``qrels_jg``: the same four columns read as one set of graded judgments per judgment group.

Lines are read as trec_eval reads them (``#`` in the first column starts a comment line,
refused with ``strict``), but a level that is not a number is an error naming the line
where trec_eval reads 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reljudge.choices import KINDS, Kind
from reljudge.errors import InputError
from reljudge.io.files import Content
from reljudge.io.trec import first_duplicate, is_float, is_int, line_of, parse_columns

PREFS_FORM = "'QID JG JSG DOCID LEVEL' (5 fields)"
GROUPS_FORM = "'QID JG DOCID GRADE' (4 fields)"


@dataclass(frozen=True)
class Prefs:
    """Judgments with groups, one row per line: query, judgment group, sub-group ("0" where
    the form has none), document and level (a float for preferences, a whole grade for
    ``qrels_jg``). ``kind`` says which form they were read from."""

    qid: np.ndarray
    jg: np.ndarray
    jsg: np.ndarray
    docid: np.ndarray
    level: np.ndarray
    kind: Kind = "prefs"

    def query_ids(self) -> list[str]:
        """The queries, in trec_eval's order (byte order of their ids)."""
        return sorted(set(self.qid.tolist()), key=str.encode)

    def rows(self, qid: str) -> np.ndarray:
        """Indexes of one query's rows."""
        return np.flatnonzero(self.qid == qid)

    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[object]], kind: Kind = "prefs") -> Prefs:
        """From (qid, jg, jsg, docid, level) tuples."""
        rows = list(rows)
        if not rows:
            raise InputError("no judgments: expected (qid, jg, jsg, docid, level) rows")
        q, g, s, d, v = (list(c) for c in zip(*rows, strict=True))
        qid, jg, jsg, docid = (np.array([str(x) for x in c], dtype=str) for c in (q, g, s, d))
        return cls(qid, jg, jsg, docid, np.array(v, dtype=np.float64), kind)


def read_prefs(path: str | Path, kind: Kind = "prefs", *, strict: bool = False) -> Prefs:
    """Read judgments in one of trec_eval's ``-R`` forms (``KINDS``); see the module's text."""
    if kind not in KINDS:
        raise InputError(f"unknown judgment form {kind!r}; expected one of {', '.join(KINDS)}")
    text = Content(path).text()
    if kind == "prefs":
        q, g, s, d, v = parse_columns(text, path, 5, PREFS_FORM,
                                      {4: (is_float, "a numeric level")}, strict)
    else:
        check = (is_int, "an integer grade") if kind == "qrels_jg" else \
            (is_float, "a numeric grade")
        q, g, d, v = parse_columns(text, path, 4, GROUPS_FORM, {3: check}, strict)
        s = ["0"] * len(q)
        # one qrels per group: a document judged twice in one is wrong
        if kind == "qrels_jg":
            dup = first_duplicate([a + "\x00" + b for a, b in zip(q, g, strict=True)], d)
            if dup is not None:
                first, again = (line_of(text, 4, row) for row in dup)
                raise InputError(f"duplicate judgment for query {q[dup[1]]!r}, group "
                                 f"{g[dup[1]]!r}, document {d[dup[1]]!r} (first on line "
                                 f"{first})", path, again)
    qid, jg, jsg, docid = (np.array(c, dtype=str) for c in (q, g, s, d))
    return Prefs(qid, jg, jsg, docid, np.array(v, dtype=np.float64), kind)
