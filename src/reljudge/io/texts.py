"""Read the inputs of the labeller: queries, passages and pairs (TSV or JSONL), strictly."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, TypeVar

from reljudge.errors import InputError
from reljudge.io import irds
from reljudge.io.files import content_suffix, read_text, text_lines

_QID_KEYS = ("qid", "query_id", "id", "_id")
_QTEXT_KEYS = ("query", "text", "title")
_DOCID_KEYS = ("docid", "doc_id", "pid", "id", "_id")
_DTEXT_KEYS = ("text", "passage", "contents", "body")
_T = TypeVar("_T")


def _pick(obj: dict, keys: tuple[str, ...], what: str, path: str | Path, lineno: int) -> str:
    for k in keys:
        if k in obj and obj[k] is not None:
            return str(obj[k])
    raise InputError(f"expected a JSON object with {what} (one of {', '.join(keys)}), "
                     f"found keys {sorted(obj)}", path, lineno)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL file; strict."""
    for lineno, line in enumerate(text_lines(read_text(path)), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"expected a JSON object, found invalid JSON ({e.msg})",
                             path, lineno) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, found {type(obj).__name__}", path, lineno)
        yield lineno, obj


def _not_empty(found: _T, path: str | Path, form: str) -> _T:
    """What a reader found; nothing at all is an InputError (an empty file is a mistake)."""
    if not found:
        raise InputError(f"empty file, expected {form}", path)
    return found


def _is_jsonl(path: str | Path) -> bool:
    return content_suffix(path) in (".jsonl", ".json", ".ndjson")


def _add_unique(out: dict, key: str, value: object, what: str, path: str | Path, lineno: int,
                first: dict) -> None:
    if key in out:
        raise InputError(f"duplicate {what} {key!r} (first on line {first[key]})", path, lineno)
    out[key] = value
    first[key] = lineno


def _tsv(path: str | Path, form: str, text_required: bool) -> Iterator[tuple[int, str, str]]:
    """(line number, id, text) of each non-blank ``ID<TAB>TEXT`` line; a line without a tab or
    an id (or, when ``text_required``, a text) is an InputError naming ``form``."""
    for lineno, line in enumerate(text_lines(read_text(path)), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t", 1)
        if len(parts) != 2 or not parts[0].strip() or (text_required and not parts[1].strip()):
            raise InputError(f"expected {form}, found {line.strip()!r}", path, lineno)
        yield lineno, parts[0].strip(), parts[1]


def read_queries(path: str | Path) -> dict[str, str]:
    """Queries from ``qid<TAB>text`` TSV or JSONL (``{"qid": ..., "query": ...}``), or from
    ``irds:DATASET_ID`` (ir_datasets)."""
    if irds.is_irds(path):
        return irds.read_queries(path)
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    if _is_jsonl(path):
        for lineno, obj in iter_jsonl(path):
            qid = _pick(obj, _QID_KEYS, "a query id", path, lineno)
            text = _pick(obj, _QTEXT_KEYS, "the query text", path, lineno)
            _add_unique(out, qid, text, "query id", path, lineno, first)
        return _not_empty(out, path, "JSONL query objects")
    for lineno, key, text in _tsv(path, "'QID<TAB>QUERY TEXT'", text_required=True):
        _add_unique(out, key, text.strip(), "query id", path, lineno, first)
    return _not_empty(out, path, "'QID<TAB>QUERY TEXT' lines")


def read_passages(path: str | Path, ids: Collection[str] | None = None
                  ) -> dict[str, dict[str, str]]:
    """Passages from JSONL (``{"docid": ..., "text": ..., "title"?: ...}``) or ``docid<TAB>text``,
    or from ``irds:DATASET_ID`` (ir_datasets: the ``ids`` the caller needs, looked up in its
    docs_store; required there, since a corpus is never read whole; a file is read whole).

    Returns {docid: {"text": ..., "title": ...}} (title may be absent).
    """
    if irds.is_irds(path):
        return irds.read_passages(path, ids)
    out: dict[str, dict[str, str]] = {}
    first: dict[str, int] = {}
    if _is_jsonl(path):
        for lineno, obj in iter_jsonl(path):
            docid = _pick(obj, _DOCID_KEYS, "a document id", path, lineno)
            rec = {"text": _pick(obj, _DTEXT_KEYS, "the passage text", path, lineno)}
            if obj.get("title"):
                rec["title"] = str(obj["title"])
            _add_unique(out, docid, rec, "document id", path, lineno, first)
        return _not_empty(out, path, "JSONL passage objects")
    for lineno, key, text in _tsv(path, "'DOCID<TAB>TEXT'", text_required=False):
        _add_unique(out, key, {"text": text}, "document id", path, lineno, first)
    return _not_empty(out, path, "'DOCID<TAB>TEXT' lines")


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """(qid, docid) pairs from ``QID DOCID``, ``QID 0 DOCID`` or a qrels file (grade ignored),
    or JSONL with qid and docid keys, or the qrels of ``irds:DATASET_ID``. Order is kept; a
    repeated pair is an error."""
    pairs: list[tuple[str, str]] = []
    first: dict[tuple[str, str], int] = {}
    if irds.is_irds(path):
        q, d, _ = irds.qrels_columns(path)
        for i, pair in enumerate(zip(q, d, strict=True), 1):
            _add_pair(pairs, first, pair, path, i)
        return pairs
    if _is_jsonl(path):
        for lineno, obj in iter_jsonl(path):
            pair = (_pick(obj, _QID_KEYS, "a query id", path, lineno),
                    _pick(obj, _DOCID_KEYS, "a document id", path, lineno))
            _add_pair(pairs, first, pair, path, lineno)
        return _not_empty(pairs, path, "JSONL pair objects")
    for lineno, line in enumerate(text_lines(read_text(path)), 1):
        # not whitespace to str.split: it would hide inside an id
        if "\0" in line:
            raise InputError("NUL byte (a binary or corrupt file?)", path, lineno)
        fields = line.split()
        if not fields:
            continue
        if len(fields) == 2:
            pair = (fields[0], fields[1])
        elif len(fields) in (3, 4) and _iteration(fields[1]) and (
                len(fields) == 3 or _integer(fields[3])):
            pair = (fields[0], fields[2])
        else:
            raise InputError(f"expected {PAIRS_FORMS}, found {len(fields)} fields: "
                             f"{line.strip()!r}", path, lineno)
        _add_pair(pairs, first, pair, path, lineno)
    return _not_empty(pairs, path, "'QID DOCID' lines")


PAIRS_FORMS = ("'QID DOCID', 'QID 0 DOCID' or 'QID 0 DOCID GRADE' (the second field of the "
               "longer forms an iteration number or Q0, the grade an integer)")


def _integer(field: str) -> bool:
    return field.lstrip("+-").isdigit()


def _iteration(field: str) -> bool:
    """Whether a field can be a qrels or run file's iteration column (``0``, ``Q0``)."""
    return _integer(field) or field.upper() == "Q0"


def _add_pair(pairs: list[tuple[str, str]], first: dict[tuple[str, str], int],
              pair: tuple[str, str], path: str | Path, lineno: int) -> None:
    if pair in first:
        raise InputError(f"duplicate pair {pair[0]} {pair[1]} (first on line {first[pair]})",
                         path, lineno)
    first[pair] = lineno
    pairs.append(pair)
