"""Read and write TREC qrels and run files, strictly.

Every problem is reported as ``path:line: what was expected, what was found``. Large files take
a fast path (one split over the whole file, column-wise conversion); any irregularity sends the
parser down a line-by-line path that finds and names the first bad line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from reljudge import columns
from reljudge.errors import InputError
from reljudge.io.files import Content, atomic_write, content_stem
from reljudge.types import Qrels, Run

QRELS_FORM = "'QID ITER DOCID GRADE' (4 fields)"
RUN_FORM = "'QID Q0 DOCID RANK SCORE TAG' (6 fields)"


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def _is_float(token: str) -> bool:
    try:
        value = float(token)
    except ValueError:
        return False
    return value == value and value not in (float("inf"), float("-inf"))


def _columns(text: str, ncols: int) -> list[list[str]] | None:
    """Fast path: the columns when every physical line has exactly ncols fields, else None."""
    tokens = text.split()
    nlines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    if len(tokens) != ncols * nlines:
        return None
    return [tokens[i::ncols] for i in range(ncols)]


def _slow_columns(
    text: str, ncols: int, path: str | Path, form: str, checks: dict[int, tuple[Callable, str]]
) -> list[list[str]]:
    """Line-by-line path: skips blank lines, raises on the first malformed line."""
    cols: list[list[str]] = [[] for _ in range(ncols)]
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != ncols:
            raise InputError(f"expected {form}, found {len(fields)} field(s): {line.strip()!r}",
                             path, lineno)
        for i, (ok, expected) in checks.items():
            if not ok(fields[i]):
                raise InputError(f"expected {expected}, found {fields[i]!r}", path, lineno)
        for i, f in enumerate(fields):
            cols[i].append(f)
    return cols


def _line_of(text: str, ncols: int, row: int) -> int:
    """1-based line number of the row-th non-blank line (for errors found after parsing)."""
    seen = -1
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            seen += 1
            if seen == row:
                return lineno
    return row + 1


def _first_duplicate(qid: list[str], docid: list[str]) -> tuple[int, int] | None:
    """(first row, repeated row) of the first repeated (qid, docid) pair, or None."""
    keys = [q + "\x00" + d for q, d in zip(qid, docid, strict=False)]
    if len(set(keys)) == len(keys):
        return None
    first: dict[str, int] = {}
    for row, k in enumerate(keys):
        if k in first:
            return first[k], row
        first[k] = row
    return None  # pragma: no cover - unreachable when the set is smaller


def _parse(text: str, path, ncols: int, form: str, checks) -> list[list[str]]:
    if not text.strip():  # nothing to score is a mistake, never a mean over 0 queries
        raise InputError(f"empty file, expected lines of {form}", path)
    nul = text.find("\0")
    if nul >= 0:  # not whitespace to str.split: it would hide inside an id
        raise InputError("NUL byte (a binary or corrupt file?)", path,
                         text.count("\n", 0, nul) + 1)
    cols = _columns(text, ncols)
    if cols is not None and not all(_column_ok(cols[i], ok) for i, (ok, _) in checks.items()):
        cols = None
    if cols is None:
        cols = _slow_columns(text, ncols, path, form, checks)
    return cols


def _column_ok(tokens: list[str], ok: Callable) -> bool:
    """Whole-column check of a numeric column, vectorised for large files."""
    if len(tokens) < 10_000:
        return all(map(ok, tokens))
    try:
        if ok is _is_float:
            return bool(np.isfinite(np.array(tokens, dtype=np.float64)).all())
        np.array(tokens, dtype=np.int64)
        return True
    except (ValueError, OverflowError):
        return False


def _arrow_columns(content: Content, kinds: str) -> list | None:
    """Fast path for large, regular files: the columns, or None to take the Python path.

    Pyarrow's multi-threaded C++ reader splits on single spaces; a file qualifies only when
    every line has exactly ``len(kinds)`` non-empty fields and every text field is printable
    ASCII, which is exactly when splitting on any whitespace (the Python path) gives the same
    fields. A plain file is read by pyarrow itself, a compressed one from its decompressed
    bytes (pyarrow skips a byte order mark in both). One letter per column says what to return:
    ``q`` (distinct values as bytes in order of first appearance, code of each row),
    ``s`` an ``S`` array, ``v`` text only checked (its first value returned, as bytes),
    ``n`` an int64 array, ``i`` an integer only checked (None), ``f`` a finite float64 array.
    """
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency; stay correct without it
        return None
    types = {"q": pa.binary(), "s": pa.binary(), "v": pa.binary(), "n": pa.int64(),
             "i": pa.int64(), "f": pa.float64()}
    names = [f"c{i}" for i in range(len(kinds))]
    try:
        source = content.source()
        table = pcsv.read_csv(
            pa.BufferReader(source) if isinstance(source, bytes) else source,
            read_options=pcsv.ReadOptions(column_names=names, block_size=16 << 20),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False,
                                            double_quote=False, escape_char=False),
            convert_options=pcsv.ConvertOptions(
                column_types={n: types[k] for n, k in zip(names, kinds, strict=True)},
                null_values=[], strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None
    if table.num_rows == 0:
        return None
    out: list = []
    for name, kind in zip(names, kinds, strict=True):
        column = table.column(name)
        if column.null_count:
            return None  # cannot happen with these options; stay on the safe side
        if kind == "i":
            out.append(None)
        elif kind in "nf":
            col = np.concatenate([_numbers(c) for c in column.chunks])
            if kind == "f" and not np.isfinite(col).all():
                return None
            out.append(col)
        else:
            parts = [_arrow_bytes(c) for c in column.chunks]
            lengths = [np.diff(offsets) for offsets, _ in parts if len(offsets) > 1]
            if min(x.min() for x in lengths) == 0:
                return None  # an empty field: two spaces in a row, or a trailing space
            if any(len(d) and (d.min() < 0x21 or d.max() > 0x7E) for _, d in parts):
                return None  # other whitespace or non-ASCII: the Python path decides
            if kind == "v":
                out.append(parts[0][1][: parts[0][0][1]].tobytes())
            elif kind == "q":
                out.append(_segments(column))
            else:
                out.append(_fixed(parts, table.num_rows, int(max(x.max() for x in lengths))))
    return out


def _arrow_bytes(chunk) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, data) of one Arrow binary chunk, without copying."""
    offsets = np.frombuffer(chunk.buffers()[1], np.int32)[chunk.offset: chunk.offset + len(chunk) + 1]
    data = np.frombuffer(chunk.buffers()[2], np.uint8)[offsets[0]: offsets[-1]]
    return offsets - offsets[0], data


def _numbers(chunk) -> np.ndarray:
    """The values of a null-free Arrow int or float chunk, without copying (``to_numpy``
    would import pandas, a quarter of a second on a fresh process)."""
    dtype = np.dtype(str(chunk.type))  # 'int32', 'int64', 'double'
    return np.frombuffer(chunk.buffers()[1], dtype)[chunk.offset: chunk.offset + len(chunk)]


def _fixed(parts, n: int, width: int) -> np.ndarray:
    col = np.zeros(n, dtype=f"S{width}")
    row = 0
    for offsets, data in parts:
        m = len(offsets) - 1
        columns.fixed_width(offsets, data, width, out=col[row: row + m])
        row += m
    return col


def _segments(column) -> tuple[list[bytes], np.ndarray]:
    """(distinct values in order of first appearance, code of each row) of a text column,
    one dict lookup per run of equal values (query ids in a TREC file come in runs)."""
    import pyarrow.compute as pc

    table: dict[bytes, int] = {}
    codes, lengths = [], []
    for chunk in column.chunks:
        ree = pc.run_end_encode(chunk)
        ends = _numbers(ree.run_ends)
        codes.append(np.fromiter((table.setdefault(v, len(table)) for v in ree.values.to_pylist()),
                                 np.int64, len(ends)))
        lengths.append(np.diff(np.r_[0, ends]))
    return list(table), np.repeat(np.concatenate(codes), np.concatenate(lengths))


def _duplicate_error(path, text: str, kind: str, first: int, row: int, q: str,
                     d: str) -> InputError:
    """The error for a (query, document) pair repeated at data row ``row`` (first at
    ``first``), naming both lines of ``text``."""
    ncols = 4 if kind == "qrels" else 6
    first_line, again = _line_of(text, ncols, first), _line_of(text, ncols, row)
    what = (f"duplicate judgment for query {q!r}, document {d!r}" if kind == "qrels"
            else f"duplicate document {d!r} for query {q!r}")
    return InputError(f"{what} (first on line {first_line})", path, again)


def _read_qrels_fast(content: Content) -> Qrels | None:
    path = content.path
    cols = _arrow_columns(content, "qvsn")
    if cols is None:
        return None
    (uniq, codes), _, d, g = cols
    qrels = Qrels.from_codes((uniq, codes), d, g)
    dup = qrels.key_index().first_duplicate()
    if dup is not None:
        raise _duplicate_error(path, content.text(), "qrels", *dup,
                               uniq[codes[dup[1]]].decode(), d[dup[1]].decode())
    return qrels


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file ``QID ITER DOCID GRADE``; grades must be integers. The qrels of
    an ir_datasets dataset when ``path`` is ``irds:DATASET_ID``."""
    from reljudge.io import irds

    if irds.is_irds(path):
        return irds.read_qrels(path)
    content = Content(path)
    fast = _read_qrels_fast(content) if _big(content) else None
    if fast is not None:
        return fast
    text = content.text()
    checks = {3: (_is_int, "an integer grade")}
    q, _, d, g = _parse(text, path, 4, QRELS_FORM, checks)
    dup = _first_duplicate(q, d)
    if dup is not None:
        raise _duplicate_error(path, text, "qrels", *dup, q[dup[1]], d[dup[1]])
    grades = np.array(g, dtype=np.int64) if g else np.zeros(0, dtype=np.int64)
    return Qrels.from_arrays(q, d, grades, check=False)


_CHUNK = 8 << 20  # bytes of run file tokenised at a time: bounds memory on huge runs


def _run_fast(text: str) -> tuple | None:
    """Fast path for a well-formed run, a chunk of lines at a time, or None.

    Columns are converted at C speed; query ids are interned so that a million lines of one
    query hold one string.
    """
    if not text or "\0" in text:  # the line-by-line path names the problem
        return None
    qcol: list[str] = []
    dcol: list[str] = []
    scores: list[np.ndarray] = []
    intern: dict[str, str] = {}
    first_tag = None
    pos = 0
    while pos < len(text):
        end = text.find("\n", min(pos + _CHUNK, len(text)) - 1)
        end = len(text) if end < 0 else end + 1
        chunk = text[pos:end]
        pos = end
        tokens = chunk.split()
        nlines = chunk.count("\n") + (0 if chunk.endswith("\n") else 1)
        if len(tokens) != 6 * nlines or not tokens:
            return None
        try:
            scores.append(np.fromiter(map(float, tokens[4::6]), np.float64, nlines))
            ranks = tokens[3::6]
            if not "".join(ranks).isdigit():  # plain ranks pass in one C-level check
                deque(map(int, ranks), maxlen=0)  # others must still be integers
        except ValueError:
            return None
        qcol.extend(map(intern.setdefault, tokens[0::6], tokens[0::6]))
        dcol.extend(tokens[2::6])
        first_tag = first_tag or tokens[5]
    score = np.concatenate(scores)
    if not np.isfinite(score).all():
        return None
    return qcol, dcol, score, first_tag


def _duplicate_in_groups(qid: np.ndarray, docid: list[str]) -> tuple[int, int] | None:
    """(first row, repeated row) of a repeated (qid, docid), checking query by query."""
    if not len(qid):
        return None
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    firsts = qid[starts].tolist()
    if len(set(firsts)) != len(firsts):  # a query's lines are not contiguous
        return _first_duplicate(qid.tolist(), docid)
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(qid)].tolist(), strict=False):
        chunk = docid[a:b]
        if len(set(chunk)) != b - a:
            seen: dict[str, int] = {}
            for row, d in enumerate(chunk, a):
                if d in seen:
                    return seen[d], row
                seen[d] = row
    return None


def read_run(path: str | Path, name: str | None = None) -> Run:
    """Read a TREC run file ``QID Q0 DOCID RANK SCORE TAG``; the rank column is ignored.

    The run's name is ``name``, else the tag of its first line, else the file's stem.
    """
    content = Content(path)
    fast_run = _read_run_fast(content, name) if _big(content) else None
    if fast_run is not None:
        return fast_run
    text = content.text()
    fast = _run_fast(text)
    if fast is not None:
        q, d, score, first_tag = fast
    else:
        checks = {3: (_is_int, "an integer rank"), 4: (_is_float, "a numeric score")}
        q, _, d, _, s, tags = _parse(text, path, 6, RUN_FORM, checks)
        score = np.array(s, dtype=np.float64) if s else np.zeros(0)
        first_tag = tags[0] if tags else None
    del text
    qid = np.array(q, dtype=object)
    dup = _duplicate_in_groups(qid, d)
    if dup is not None:
        raise _duplicate_error(path, content.text(), "run", *dup, q[dup[1]], d[dup[1]])
    run_name = name or first_tag or content_stem(path)
    return Run.from_arrays(qid, np.array(d, dtype=object), score, name=run_name, check=False)


def read_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Read several run files, named distinctly: by tag, or by file name when tags collide."""
    from reljudge.types import distinct_runs

    return distinct_runs([read_run(p) for p in paths], [str(p) for p in paths])


def _read_run_fast(content: Content, name: str | None) -> Run | None:
    path = content.path
    cols = _arrow_columns(content, "qvsifv")
    if cols is None:
        return None
    (uniq, codes), _, d, _, score, tag = cols
    run = Run.from_codes((uniq, codes), d, score, name=name or tag.decode())
    grouped = not np.any(codes[1:] < codes[:-1])  # else rows were regrouped: check file rows
    keys = run.key_index() if grouped else columns.KeyIndex(codes, d, columns.hash_bytes(d))
    dup = keys.first_duplicate()
    if dup is not None:
        raise _duplicate_error(path, content.text(), "run", *dup,
                               uniq[codes[dup[1]]].decode(), d[dup[1]].decode())
    return run


FAST_MIN_BYTES = 1 << 20  # smaller contents take the Python path (no pyarrow start-up cost)


def _big(content: Content) -> bool:
    """Whether the content (decompressed) is large enough for the Arrow path."""
    return content.size >= FAST_MIN_BYTES


def format_qrels(qrels: Qrels) -> str:
    """TREC qrels text, one ``QID 0 DOCID GRADE`` line per judgment, in stored order."""
    lines = [f"{q} 0 {d} {g}\n" for q, d, g in qrels]
    return "".join(lines)


def format_run(run: Run, tag: str | None = None) -> str:
    """TREC run text, each query's documents in trec_eval order with ranks from 1."""
    tag = tag or run.name
    out: list[str] = []
    for q in run.query_ids():
        for rank, (d, s) in enumerate(run.ranked(q), 1):
            out.append(f"{q} Q0 {d} {rank} {s!r} {tag}\n")
    return "".join(out)


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    """Write a TREC qrels file atomically."""
    atomic_write(path, format_qrels(qrels))


def write_run(run: Run, path: str | Path, tag: str | None = None) -> None:
    """Write a TREC run file atomically."""
    atomic_write(path, format_run(run, tag))
