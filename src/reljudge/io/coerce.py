"""The one front door for inputs held in memory: whatever shape a user has, Qrels and Runs.

Accepted for qrels and runs alike:

- ``Qrels`` / ``Run`` objects, as they are;
- ``{qid: {docid: value}}`` (pytrec_eval's and ranx's shape) with any hashable ids, converted
  with ``str`` as ``Qrels.from_dict`` does (``1``, ``np.int64(1)`` and ``"1"`` are one id);
- iterables of records: namedtuples such as ir_measures' ``Qrel(query_id, doc_id, relevance)``
  and ``ScoredDoc(query_id, doc_id, score)`` or ir_datasets' ``TrecQrel``, or dicts;
- pandas DataFrames.

Records and DataFrames name their columns with any of ``*_NAMES`` below (the label CSV and
JSONL readers accept the same names). pandas and ir_measures are never imported here: their
objects are recognised by their attributes. Values that are not ids, integer grades or
numeric scores are an InputError naming the first one.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from itertools import chain
from pathlib import Path

import numpy as np

from reljudge.errors import InputError
from reljudge.types import Qrels, Run, distinct_runs

QID_NAMES = ("query_id", "qid")
DOCID_NAMES = ("doc_id", "docid", "docno")
GRADE_NAMES = ("relevance", "grade", "label")
SCORE_NAMES = ("score",)


def pick_column(names: Iterable[str], choices: tuple[str, ...], what: str,
                path: str | Path | None = None, line: int | None = None) -> str:
    """The one name among ``names`` that is one of ``choices`` (compared in lower case)."""
    names = list(names)
    found = [n for n in names if str(n).strip().lower() in choices]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"expected a {what} column (one of {', '.join(choices)}), found "
                         f"{[str(n) for n in names]}", path, line)
    raise InputError(f"columns {' and '.join(repr(str(n)) for n in found)} both name the {what}; "
                     f"keep one", path, line)


def _is_dataframe(obj) -> bool:
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "columns")


def _ids(values, what: str, kind: str) -> list[str]:
    """Ids as str; a missing id (None, NaN) is an error rather than the text 'None'."""
    values = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if all(type(v) is str for v in values):
        return values
    for row, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v) or _is_pandas_missing(v):
            raise InputError(f"{what}: {kind} of row {row} is missing ({v!r})")
    return [v if type(v) is str else str(v) for v in values]


def _is_pandas_missing(v) -> bool:
    return type(v).__name__ in ("NAType", "NaTType") and type(v).__module__.startswith("pandas")


def integer_grades(values, what: str) -> np.ndarray:
    """Integer grades (integral floats accepted) as int64; anything else is an InputError."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if len(bad):
            raise InputError(f"{what}: expected integer grades, found {arr[bad[0]]!r} "
                             f"(row {bad[0]})")
        return arr.astype(np.int64)
    out = np.empty(len(arr), dtype=np.int64)
    for row, g in enumerate(arr.tolist()):
        out[row] = _grade(g, what, f"row {row}")
    return out


def _grade(g, what: str, where: str) -> int:
    if isinstance(g, numbers.Integral):
        return int(g)
    if isinstance(g, numbers.Real) and float(g).is_integer():
        return int(g)
    raise InputError(f"{what}: expected an integer grade, found {g!r} ({where})")


def numeric_scores(values, what: str) -> np.ndarray:
    """Numeric scores as float64 (text is refused, not parsed)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float64)
    out = np.empty(len(arr), dtype=np.float64)
    for row, s in enumerate(arr.tolist()):
        out[row] = _score(s, what, f"row {row}")
    return out


def _score(s, what: str, where: str) -> float:
    if isinstance(s, numbers.Real) and not isinstance(s, bool):
        return float(s)
    raise InputError(f"{what}: expected a numeric score, found {s!r} ({where})")


def _columns(obj, value_names: tuple[str, ...], value_what: str, what: str) -> tuple:
    """(qid, docid, value) columns of a DataFrame or an iterable of records."""
    try:
        return _columns_of(obj, value_names, value_what, what)
    except InputError as e:
        if e.detail.startswith(what + ": "):
            raise
        raise InputError(f"{what}: {e.detail}") from None


def _columns_of(obj, value_names: tuple[str, ...], value_what: str, what: str) -> tuple:
    if _is_dataframe(obj):
        cols = [str(c) for c in obj.columns]
        by_name = dict(zip(cols, obj.columns, strict=True))
        picked = [by_name[pick_column(cols, names, kind)] for names, kind in
                  ((QID_NAMES, "query id"), (DOCID_NAMES, "document id"),
                   (value_names, value_what))]
        return tuple(obj[c].to_numpy() for c in picked)
    rows = list(obj)
    if not rows:
        return [], [], []
    first = rows[0]
    if isinstance(first, Mapping):
        keys = list(first)
        get = _get_item
    elif hasattr(first, "_fields"):  # a namedtuple (ir_measures, ir_datasets)
        keys = list(first._fields)
        get = getattr
    else:
        raise InputError(f"{what}: expected records with named fields ({QID_NAMES[0]}, "
                         f"{DOCID_NAMES[0]}, {value_names[0]}), found {type(first).__name__} "
                         f"{first!r}")
    names = [pick_column(keys, QID_NAMES, "query id"), pick_column(keys, DOCID_NAMES, "document id"),
             pick_column(keys, value_names, value_what)]
    try:
        return tuple([get(r, n) for r in rows] for n in names)
    except (AttributeError, KeyError, TypeError):
        raise InputError(f"{what}: records differ in shape; every one needs the fields "
                         f"{', '.join(names)}") from None


def _get_item(record, key):
    return record[key]


def _refuse(obj, what: str, shape: str) -> InputError:
    if isinstance(obj, (str, Path)):
        reader = "reljudge.trec.read_qrels" if what == "qrels" else "reljudge.trec.read_run"
        return InputError(f"expected {what} in memory, found a path {str(obj)!r}; read the "
                          f"file with {reader}")
    return InputError(f"expected {what} as {shape}, a DataFrame, records or a "
                      f"{'Qrels' if what == 'qrels' else 'Run'}, found {type(obj).__name__}")


def _clean_dict(data: Mapping, what: str, value_what: str, ok_types: set,
                convert) -> dict[str, dict]:
    """{str: {str: value}} from a dict of dicts, shared untouched where already so."""
    if _already_clean(data, ok_types):
        return data  # type: ignore[return-value]
    out: dict[str, dict] = {}
    for q, docs in data.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{what}: expected {{query id: {{document id: {value_what}}}}}, "
                             f"found a {type(docs).__name__} for query {q!r}")
        if type(q) is str and set(map(type, docs)) <= {str} \
                and set(map(type, docs.values())) <= ok_types:
            key, inner = q, docs
        else:
            key = _ids([q], what, "query id")[0]
            inner = {}
            for d, v in docs.items():
                k = _ids([d], what, "document id")[0]
                if k in inner:
                    raise InputError(f"{what}: document id {k!r} appears twice in query {key!r} "
                                     f"(as different keys with the same text)")
                inner[k] = convert(v, what, f"query {key!r}, document {k!r}")
        if key in out:
            raise InputError(f"{what}: query id {key!r} appears twice (as different keys with "
                             f"the same text)")
        out[key] = inner
    return out


def _already_clean(data: Mapping, ok_types: set) -> bool:
    """True when every id is a str and every value of an accepted type: checked in a few
    C-level passes over the whole dict (the common case costs no Python loop per query)."""
    if not isinstance(data, dict) or not set(map(type, data)) <= {str} \
            or not set(map(type, data.values())) <= {dict}:
        return False
    inner = data.values()
    return (set(map(type, chain.from_iterable(inner))) <= {str}
            and set(map(type, chain.from_iterable(map(dict.values, inner)))) <= ok_types)


def qrels_dict(data: Mapping, what: str = "qrels") -> dict[str, dict[str, int]]:
    """{qid: {docid: grade}} with str ids and int grades (the same dict when it already is)."""
    return _clean_dict(data, what, "grade", {int}, _grade)


def run_dict(data: Mapping, what: str = "run") -> dict[str, dict[str, float]]:
    """{qid: {docid: score}} with str ids and float or int scores."""
    return _clean_dict(data, what, "score", {float, int}, _score)


def as_qrels(obj, what: str = "qrels") -> Qrels:
    """A Qrels from any accepted in-memory form (see the module docstring)."""
    if isinstance(obj, Qrels):
        return obj
    if isinstance(obj, Run):
        raise InputError(f"expected {what}, found a Run ({obj.name!r})")
    if isinstance(obj, Mapping):
        return Qrels.from_dict(qrels_dict(obj, what))  # the second clean finds nothing to do
    if not (_is_dataframe(obj) or isinstance(obj, Iterable)) or isinstance(obj, (str, bytes)):
        raise _refuse(obj, "qrels", "{qid: {docid: grade}}")
    q, d, g = _columns(obj, GRADE_NAMES, "grade", what)
    return Qrels.from_arrays(_ids(q, what, "query id"), _ids(d, what, "document id"),
                             integer_grades(g, what))


def as_run(obj, name: str | None = None, what: str = "run") -> Run:
    """A Run from any accepted in-memory form, named ``name`` (default: its own, or "run")."""
    if isinstance(obj, Run):
        return obj if name is None or name == obj.name else obj.with_name(name)
    if isinstance(obj, Qrels):
        raise InputError(f"expected a {what}, found Qrels")
    if isinstance(obj, Mapping):
        return Run.from_dict(run_dict(obj, what), name=name or "run")
    if not (_is_dataframe(obj) or isinstance(obj, Iterable)) or isinstance(obj, (str, bytes)):
        raise _refuse(obj, "run", "{qid: {docid: score}}")
    q, d, s = _columns(obj, SCORE_NAMES, "score", what)
    return Run.from_arrays(_ids(q, what, "query id"), _ids(d, what, "document id"),
                           numeric_scores(s, what), name=name or "run")


def as_runs(runs) -> list[Run]:
    """Runs as a list of Run: a sequence of runs in any accepted form (named "run1", "run2",
    ... unless Run objects), or a mapping {name: run}; runs sharing a name are numbered
    (``name#1``, ``name#2``; ``trec.read_runs`` names them by file instead)."""
    if isinstance(runs, Run):
        return [runs]
    if isinstance(runs, Mapping):
        return [as_run(r, str(n)) for n, r in runs.items()]
    if isinstance(runs, (str, bytes, Path)) or not isinstance(runs, Iterable):
        raise InputError(f"expected runs as a list of runs or a {{name: run}} mapping, found "
                         f"{type(runs).__name__}")
    return distinct_runs([r if isinstance(r, Run) else as_run(r, f"run{i}")
                          for i, r in enumerate(runs, 1)])


def qrels_like(obj, what: str = "qrels") -> Qrels | dict[str, dict[str, int]]:
    """For evaluation: a Qrels as it is, a dict cleaned (``qrels_dict``), anything else
    converted (``as_qrels``). Keeps dicts on the dict path."""
    if isinstance(obj, Mapping):
        return qrels_dict(obj, what)
    return as_qrels(obj, what)


def run_like(obj, what: str = "run") -> Run | dict[str, dict[str, float]]:
    """For evaluation: a Run as it is, a dict cleaned (``run_dict``), anything else a Run."""
    if isinstance(obj, Mapping):
        return run_dict(obj, what)
    return as_run(obj, what=what)


def measure_list(measures) -> list:
    """One measure (text or object) or an iterable of them, as a list (not yet parsed)."""
    if isinstance(measures, str) or not isinstance(measures, Iterable):
        return [measures]
    return list(measures)
