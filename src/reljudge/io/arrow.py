"""The Arrow path for large, regular whitespace-separated files (TREC qrels and runs).

pyarrow's multi-threaded CSV reader tokenises a file of millions of lines at C speed, and each
column comes back as numpy arrays without copying. A file takes this path only where the
result equals the line-by-line reader's (see :func:`read_columns`); otherwise
:func:`read_columns` returns None and the caller reads the file line by line.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from reljudge import columns
from reljudge.io.files import Content


class Col(enum.Enum):
    """What :func:`read_columns` returns for one column of the file."""

    CODES = "distinct values as bytes in order of first appearance, and the code of each row"
    BYTES = "a fixed-width bytes (``S``) array"
    FIRST = "text, only checked; its first value is returned, as bytes"
    INT = "an int64 array"
    CHECK_INT = "an integer, only checked (None is returned)"
    FLOAT = "a float64 array of finite values"


def _arrow_type(pa: Any, kind: Col) -> Any:
    """The Arrow type a column of ``kind`` is read as."""
    if kind in (Col.INT, Col.CHECK_INT):
        return pa.int64()
    if kind in (Col.CODES, Col.FIRST):
        # few distinct values (query ids, Q0, a run's tag): each kept once, rows as codes
        return pa.dictionary(pa.int32(), pa.binary())
    return pa.float64() if kind is Col.FLOAT else pa.binary()


def read_columns(content: Content, spec: Sequence[Col]) -> list | None:
    """Fast path for large, regular files: the columns, or None to take the Python path.

    Pyarrow's multi-threaded C++ reader splits on single spaces; a file qualifies only when
    every line has exactly ``len(kinds)`` non-empty fields and every text field is printable
    ASCII, which is exactly when splitting on any whitespace (the Python path) gives the same
    fields. A plain file is read by pyarrow itself, a compressed one from its decompressed
    bytes (pyarrow skips a byte order mark in both). ``spec`` gives each column's :class:`Col`,
    which says what is returned for it.
    """
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency; stay correct without it
        return None
    names = [f"c{i}" for i in range(len(spec))]
    try:
        source = content.source()
        table = pcsv.read_csv(
            pa.BufferReader(source) if isinstance(source, bytes) else source,
            read_options=pcsv.ReadOptions(column_names=names, block_size=4 << 20),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                            double_quote=False, escape_char=False),
            convert_options=pcsv.ConvertOptions(
                column_types={n: _arrow_type(pa, k) for n, k in zip(names, spec, strict=True)},
                null_values=[], strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None
    try:
        return _columns_of(table, names, spec)
    finally:
        # the table's memory back to the system: pyarrow's pool keeps it otherwise, and
        # evaluation's peak would stack on it (measured: 357 -> 290 MB peak, 1M rows)
        del table
        pa.default_memory_pool().release_unused()


def _columns_of(table: Any, names: list[str], spec: Sequence[Col]) -> list | None:
    """``read_columns``' result from the table pyarrow read (copies: no Arrow buffer kept)."""
    if table.num_rows == 0:
        return None
    out: list = []
    for name, kind in zip(names, spec, strict=True):
        column = table.column(name)
        if column.null_count:
            return None
        if kind is Col.CHECK_INT:
            out.append(None)
        elif kind in (Col.INT, Col.FLOAT):
            col = np.concatenate([_numbers(c) for c in column.chunks])
            if kind is Col.FLOAT and not np.isfinite(col).all():
                return None
            out.append(col)
        else:
            encoded = kind in (Col.CODES, Col.FIRST)
            parts = [_arrow_bytes(c.dictionary if encoded else c) for c in column.chunks]
            lengths = [np.diff(offsets) for offsets, _ in parts if len(offsets) > 1]
            # an empty field (two spaces in a row, a trailing space), other whitespace or
            # non-ASCII: the Python path decides
            if min(x.min() for x in lengths) == 0:
                return None
            if any(len(d) and (d.min() < 0x21 or d.max() > 0x7E) for _, d in parts):
                return None
            if kind is Col.FIRST:
                first = column.chunks[0]
                out.append(first.dictionary[first.indices[0].as_py()].as_py())
            elif kind is Col.CODES:
                out.append(_segments(column))
            else:
                out.append(_fixed(parts, table.num_rows, int(max(x.max() for x in lengths))))
    return out


def _arrow_bytes(chunk: Any) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, data) of one Arrow binary chunk, without copying."""
    offsets = np.frombuffer(chunk.buffers()[1], np.int32)[chunk.offset: chunk.offset + len(chunk) + 1]
    data = np.frombuffer(chunk.buffers()[2], np.uint8)[offsets[0]: offsets[-1]]
    return offsets - offsets[0], data


def _numbers(chunk: Any) -> np.ndarray:
    """The values of a null-free Arrow int or float chunk, without copying (``to_numpy``
    would import pandas, a quarter of a second on a fresh process)."""
    dtype = np.dtype(str(chunk.type))
    return np.frombuffer(chunk.buffers()[1], dtype)[chunk.offset: chunk.offset + len(chunk)]


def _fixed(parts: list[tuple[np.ndarray, np.ndarray]], n: int, width: int) -> np.ndarray:
    col = np.zeros(n, dtype=f"S{width}")
    row = 0
    for offsets, data in parts:
        m = len(offsets) - 1
        columns.fixed_width(offsets, data, width, out=col[row: row + m])
        row += m
    return col


def _segments(column: Any) -> tuple[list[bytes], np.ndarray]:
    """(distinct values in order of first appearance, code of each row) of a
    dictionary-encoded text column, one dict lookup per distinct value and chunk (each
    chunk's dictionary lists its values as they first come)."""
    table: dict[bytes, int] = {}
    codes = []
    for chunk in column.chunks:
        known = np.fromiter((table.setdefault(v, len(table))
                             for v in chunk.dictionary.to_pylist()), np.int64)
        codes.append(known[_numbers(chunk.indices)])
    return list(table), np.concatenate(codes)
