"""The one front door for inputs held in memory: whatever shape a user has, Qrels and Runs.

Accepted for qrels and runs alike:

- ``Qrels`` / ``Run`` objects, as they are;
- ``{qid: {docid: value}}`` (pytrec_eval's and ranx's shape) with any hashable ids, converted
  with ``str`` as ``Qrels.from_dict`` does (``1``, ``np.int64(1)`` and ``"1"`` are one id);
- iterables of records: namedtuples such as ir_measures' ``Qrel(query_id, doc_id, relevance)``
  and ``ScoredDoc(query_id, doc_id, score)`` or ir_datasets' ``TrecQrel``, or dicts;
- pandas DataFrames.

Records and DataFrames name their columns with any of ``*_COLUMNS`` below. pandas and
ir_measures are never imported here (their objects are recognised by attributes). A
value that is not an id, an integer grade or a numeric score is an InputError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from reljudge.errors import InputError
from reljudge.trec_data import Qrels, Run, distinct_runs
from reljudge.values import ids as _ids
from reljudge.values import integer_grades, numeric_scores, qrels_dict, run_dict

QID_COLUMNS = ("query_id", "qid")
DOCID_COLUMNS = ("doc_id", "docid", "docno")
GRADE_COLUMNS = ("relevance", "grade", "label")
SCORE_COLUMNS = ("score",)


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


def _is_dataframe(obj: object) -> bool:
    return type(obj).__module__.startswith("pandas") and hasattr(obj, "columns")


def _columns(obj: Any, value_names: tuple[str, ...], value_what: str, what: str) -> tuple:
    """(qid, docid, value) columns of a DataFrame or an iterable of records."""
    try:
        return _columns_of(obj, value_names, value_what, what)
    except InputError as e:
        if e.detail.startswith(what + ": "):
            raise
        raise InputError(f"{what}: {e.detail}") from None


def _columns_of(obj: Any, value_names: tuple[str, ...], value_what: str, what: str) -> tuple:
    if _is_dataframe(obj):
        cols = [str(c) for c in obj.columns]
        by_name = dict(zip(cols, obj.columns, strict=True))
        picked = [by_name[pick_column(cols, names, kind)] for names, kind in
                  ((QID_COLUMNS, "query id"), (DOCID_COLUMNS, "document id"),
                   (value_names, value_what))]
        return tuple(obj[c].to_numpy() for c in picked)
    rows = list(obj)
    if not rows:
        return [], [], []
    first = rows[0]
    get: Callable[..., Any]
    if isinstance(first, Mapping):
        keys = list(first)
        get = _get_item
    elif hasattr(first, "_fields"):
        keys = list(first._fields)
        get = getattr
    else:
        raise InputError(f"{what}: expected records with named fields ({QID_COLUMNS[0]}, "
                         f"{DOCID_COLUMNS[0]}, {value_names[0]}), found {type(first).__name__} "
                         f"{first!r}")
    names = [pick_column(keys, QID_COLUMNS, "query id"), pick_column(keys, DOCID_COLUMNS, "document id"),
             pick_column(keys, value_names, value_what)]
    try:
        return tuple([get(r, n) for r in rows] for n in names)
    except (AttributeError, KeyError, TypeError):
        raise InputError(f"{what}: records differ in shape; every one needs the fields "
                         f"{', '.join(names)}") from None


def _get_item(record: Any, key: str) -> Any:
    return record[key]


def _refuse(obj: object, what: str, shape: str) -> InputError:
    if isinstance(obj, (str, Path)):
        reader = "reljudge.read_qrels" if what == "qrels" else "reljudge.read_run"
        return InputError(f"expected {what} in memory, found a path {str(obj)!r}; read the "
                          f"file with {reader}")
    return InputError(f"expected {what} as {shape}, a DataFrame, records or a "
                      f"{'Qrels' if what == 'qrels' else 'Run'}, found {type(obj).__name__}")


def as_qrels(obj: Any, what: str = "qrels") -> Qrels:
    """A Qrels from any accepted in-memory form (see the module docstring)."""
    if isinstance(obj, Qrels):
        return obj
    if isinstance(obj, Run):
        raise InputError(f"expected {what}, found a Run ({obj.name!r})")
    if isinstance(obj, Mapping):
        return Qrels.from_dict(qrels_dict(obj, what))
    if not (_is_dataframe(obj) or isinstance(obj, Iterable)) or isinstance(obj, (str, bytes)):
        raise _refuse(obj, "qrels", "{qid: {docid: grade}}")
    q, d, g = _columns(obj, GRADE_COLUMNS, "grade", what)
    return Qrels.from_arrays(_ids(q, what, "query id"), _ids(d, what, "document id"),
                             integer_grades(g, what))


def as_run(obj: Any, name: str | None = None, what: str = "run") -> Run:
    """A Run from any accepted in-memory form, named ``name`` (default: its own, or "run")."""
    if isinstance(obj, Run):
        return obj if name is None or name == obj.name else obj.with_name(name)
    if isinstance(obj, Qrels):
        raise InputError(f"expected a {what}, found Qrels")
    if isinstance(obj, Mapping):
        return Run.from_dict(run_dict(obj, what), name=name or "run")
    if not (_is_dataframe(obj) or isinstance(obj, Iterable)) or isinstance(obj, (str, bytes)):
        raise _refuse(obj, "run", "{qid: {docid: score}}")
    q, d, s = _columns(obj, SCORE_COLUMNS, "score", what)
    return Run.from_arrays(_ids(q, what, "query id"), _ids(d, what, "document id"),
                           numeric_scores(s, what), name=name or "run")


def as_runs(runs: Any) -> list[Run]:
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


def qrels_like(obj: Any, what: str = "qrels") -> Qrels | dict[str, dict[str, int]]:
    """For evaluation: a Qrels as it is, a dict cleaned (``qrels_dict``), anything else
    converted (``as_qrels``). Keeps dicts on the dict path."""
    if isinstance(obj, Mapping):
        return qrels_dict(obj, what)
    return as_qrels(obj, what)


def run_like(obj: Any, what: str = "run") -> Run | dict[str, dict[str, float]]:
    """For evaluation: a Run as it is, a dict cleaned (``run_dict``), anything else a Run."""
    if isinstance(obj, Mapping):
        return run_dict(obj, what)
    return as_run(obj, what=what)


def measure_list(measures: Any) -> list:
    """One measure (text or object) or an iterable of them, as a list (not yet parsed)."""
    if isinstance(measures, str) or not isinstance(measures, Iterable):
        return [measures]
    return list(measures)
