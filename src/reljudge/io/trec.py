"""Read and write TREC qrels and run files as trec_eval 10 reads them, or strictly.

trec_eval 10 skips comment lines (in qrels a line whose first character is ``#``; in runs a
line whose first non-blank character is ``#``) and ignores whatever follows a run line's tag.
So do we by default; ``strict=True`` refuses both, naming the line. A ``#`` inside a field (a
document id such as ``CR#93E-1860``) is data. Blank lines are skipped.

Every problem is reported as ``path:line: what was expected, what was found``. Large files take
a fast path (one split over the whole file, column-wise conversion); any irregularity sends the
parser down a line-by-line path that finds and names the first bad line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from reljudge import columns
from reljudge.errors import InputError
from reljudge.io import arrow
from reljudge.io.arrow import Col
from reljudge.io.fields import fits_int64, integers_ok, numbers, numbers_ok, split_fields
from reljudge.io.files import BOM, Content, atomic_write, content_stem, text_lines
from reljudge.trec_data import Qrels, Run

QRELS_FORM = "'QID ITER DOCID GRADE' (4 fields)"
RUN_FORM = "'QID Q0 DOCID RANK SCORE TAG' (6 fields)"
#: what the Arrow path returns for each column of a qrels and a run file
QRELS_COLUMNS = (Col.CODES, Col.FIRST, Col.BYTES, Col.INT)
RUN_COLUMNS = (Col.CODES, Col.FIRST, Col.BYTES, Col.CHECK_INT, Col.FLOAT, Col.FIRST)


def is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def is_float(token: str) -> bool:
    try:
        value = float(token)
    except ValueError:
        return False
    return value == value and value not in (float("inf"), float("-inf"))


def _qrels_comment(line: str) -> bool:
    """trec_eval's qrels comment: ``#`` in the first column."""
    return line.startswith("#")


def _run_comment(line: str) -> bool:
    """trec_eval's run comment: ``#`` as the first non-blank character."""
    return line.lstrip().startswith("#")


def _commented(ids: Iterable[str | bytes]) -> bool:
    """Whether a fast path's query ids include one that starts with ``#`` (a comment line taken
    for data: the line-by-line path decides)."""
    return any(q[:1] in ("#", b"#") for q in ids)


def _columns(text: str, ncols: int) -> list[list[str]] | None:
    """Fast path: the columns when every physical line has exactly ncols fields and none is a
    comment, else None."""
    tokens = text.split()
    nlines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    if len(tokens) != ncols * nlines or _commented(set(tokens[0::ncols])):
        return None
    return [tokens[i::ncols] for i in range(ncols)]


def _data_lines(text: str, ncols: int, path: str | Path | None = None, strict: bool = False
                ) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, line, fields) of each data line: blank lines and comments skipped (refused when
    ``strict``); a run line's fields after its tag dropped (refused when ``strict``)."""
    comment = _run_comment if ncols == 6 else _qrels_comment
    for lineno, line in enumerate(text_lines(text), 1):
        if comment(line):
            if strict:
                raise InputError(f"a comment line (trec_eval skips it; strict reading refuses "
                                 f"it): {line.strip()!r}", path, lineno)
            continue
        fields = line.split()
        if not fields:
            continue
        # trec_eval ignores what follows the tag
        if ncols == 6 and len(fields) > ncols:
            if strict:
                raise InputError(f"expected {RUN_FORM}, found {len(fields)} fields (trec_eval "
                                 f"ignores text after the tag; strict reading refuses it): "
                                 f"{line.strip()!r}", path, lineno)
            fields = fields[:ncols]
        yield lineno, line, fields


def _slow_columns(
    text: str, ncols: int, path: str | Path, form: str, checks: dict[int, tuple[Callable, str]],
    strict: bool = False,
) -> list[list[str]]:
    """Line-by-line path: skips blank and comment lines, raises on the first malformed line."""
    cols: list[list[str]] = [[] for _ in range(ncols)]
    for lineno, line, fields in _data_lines(text, ncols, path, strict):
        if len(fields) != ncols:
            raise InputError(f"expected {form}, found {len(fields)} field(s): {line.strip()!r}",
                             path, lineno)
        for i, (ok, expected) in checks.items():
            if not ok(fields[i]):
                raise InputError(f"expected {expected}, found {fields[i]!r}", path, lineno)
        for i, f in enumerate(fields):
            cols[i].append(f)
    if not cols[0]:
        raise InputError(f"no data lines, only comments: expected lines of {form}", path)
    return cols


def line_of(text: str, ncols: int, row: int) -> int:
    """1-based line number of the row-th data line (for errors found after parsing)."""
    for seen, (lineno, _, _) in enumerate(_data_lines(text, ncols)):
        if seen == row:
            return lineno
    return row + 1


def first_duplicate(qid: list[str], docid: list[str]) -> tuple[int, int] | None:
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


def parse_columns(text: str, path: str | Path, ncols: int, form: str,
                  checks: dict[int, tuple[Callable, str]], strict: bool = False
                  ) -> list[list[str]]:
    """The columns of a whitespace-separated TREC-style file of ``ncols`` fields: comment and
    blank lines skipped as trec_eval skips them (refused when ``strict``); ``checks`` maps a
    column to (test, what it should hold); the first bad line raises, named."""
    if not text.strip():
        raise InputError(f"empty file, expected lines of {form}", path)
    nul = text.find("\0")
    # not whitespace to str.split: it would hide inside an id
    if nul >= 0:
        raise InputError("NUL byte (a binary or corrupt file?)", path,
                         text.count("\n", 0, nul) + 1)
    cols = _columns(text, ncols)
    if cols is not None and not all(_column_ok(cols[i], ok) for i, (ok, _) in checks.items()):
        cols = None
    if cols is None:
        cols = _slow_columns(text, ncols, path, form, checks, strict)
    return cols


def _column_ok(tokens: list[str], ok: Callable) -> bool:
    """Whole-column check of a numeric column, vectorised for large files."""
    if len(tokens) < 10_000:
        return all(map(ok, tokens))
    try:
        if ok is is_float:
            return bool(np.isfinite(np.array(tokens, dtype=np.float64)).all())
        np.array(tokens, dtype=np.int64)
        return True
    except (ValueError, OverflowError):
        return False


def _duplicate_error(path: str | Path, text: str, kind: str, first: int, row: int, q: str,
                     d: str) -> InputError:
    """The error for a (query, document) pair repeated at data row ``row`` (first at
    ``first``), naming both lines of ``text``."""
    ncols = 4 if kind == "qrels" else 6
    first_line, again = line_of(text, ncols, first), line_of(text, ncols, row)
    what = (f"duplicate judgment for query {q!r}, document {d!r}" if kind == "qrels"
            else f"duplicate document {d!r} for query {q!r}")
    return InputError(f"{what} (first on line {first_line})", path, again)


def _read_qrels_fast(content: Content) -> Qrels | None:
    path = content.path
    cols = arrow.read_columns(content, QRELS_COLUMNS)
    if cols is None:
        return None
    (uniq, codes), _, d, g = cols
    if _commented(uniq):
        return None
    qrels = Qrels.from_codes((uniq, codes), d, g)
    dup = qrels.key_index().first_duplicate()
    if dup is not None:
        raise _duplicate_error(path, content.text(), "qrels", *dup,
                               uniq[codes[dup[1]]].decode(), d[dup[1]].decode())
    return qrels


def read_qrels(path: str | Path, *, strict: bool = False) -> Qrels:
    """Read a TREC qrels file ``QID ITER DOCID GRADE``; grades must be integers. The qrels of
    an ir_datasets dataset when ``path`` is ``irds:DATASET_ID``. Comment lines are skipped as
    trec_eval skips them; ``strict`` refuses them, naming the line."""
    from reljudge.io import irds

    if irds.is_irds(path):
        return irds.read_qrels(path)
    content = Content(path)
    fast = _read_qrels_fast(content) if _big(content) else None
    if fast is not None:
        return fast
    text = content.text()
    checks = {3: (is_int, "an integer grade")}
    q, _, d, g = parse_columns(text, path, 4, QRELS_FORM, checks, strict)
    dup = first_duplicate(q, d)
    if dup is not None:
        raise _duplicate_error(path, text, "qrels", *dup, q[dup[1]], d[dup[1]])
    return Qrels.from_arrays(q, d, _grades(g, text, path), check=False)


def _grades(grades: list[str], text: str, path: str | Path) -> np.ndarray:
    """The grades (integers, checked) as int64; one beyond 64 bits is an InputError naming
    its line."""
    try:
        return np.array(grades, dtype=np.int64) if grades else np.zeros(0, dtype=np.int64)
    except OverflowError:
        row = next(i for i, g in enumerate(grades) if not fits_int64(int(g)))
        raise InputError(f"grade {grades[row]} is beyond 64 bits; expected an integer grade "
                         "such as 0-3", path, line_of(text, 4, row)) from None


# bytes of run file tokenised at a time: bounds memory on huge runs
_CHUNK = 8 << 20


def _run_fast(text: str) -> tuple | None:
    """Fast path for a well-formed run, a chunk of lines at a time, or None.

    Columns are converted at C speed; query ids are interned so that a million lines of one
    query hold one string.
    """
    # the line-by-line path names the problem
    if not text or "\0" in text:
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
            # ranks must be integers: plain ones pass in one C-level check
            if not "".join(ranks).isdigit():
                deque(map(int, ranks), maxlen=0)
        except ValueError:
            return None
        qcol.extend(map(intern.setdefault, tokens[0::6], tokens[0::6]))
        dcol.extend(tokens[2::6])
        first_tag = first_tag or tokens[5]
    score = np.concatenate(scores)
    if not np.isfinite(score).all() or _commented(intern):
        return None
    return qcol, dcol, score, first_tag


def _duplicate_in_groups(qid: np.ndarray, docid: list[str]) -> tuple[int, int] | None:
    """(first row, repeated row) of a repeated (qid, docid), checking query by query."""
    if not len(qid):
        return None
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    firsts = qid[starts].tolist()
    if len(set(firsts)) != len(firsts):
        return first_duplicate(qid.tolist(), docid)
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(qid)].tolist(), strict=False):
        chunk = docid[a:b]
        if len(set(chunk)) != b - a:
            seen: dict[str, int] = {}
            for row, d in enumerate(chunk, a):
                if d in seen:
                    return seen[d], row
                seen[d] = row
    return None


def read_run(path: str | Path, name: str | None = None, *, strict: bool = False,
             queries: Collection[str] | None = None) -> Run:
    """Read a TREC run file ``QID Q0 DOCID RANK SCORE TAG``; the rank column is ignored.

    The run's name is ``name``, else the tag of its first line, else the file's stem. Comment
    lines and text after the tag are skipped as trec_eval skips them; ``strict`` refuses them,
    naming the line. With ``queries`` (those of the qrels, say) the run holds only their
    lines, the others checked as ever but their scores not converted; a run holding none of
    them is kept whole.
    """
    content = Content(path)
    wanted = None if queries is None else frozenset(q.encode() for q in queries)
    if not _big(content):
        fast_run = _read_run_bytes(content, name, wanted)
        if fast_run is not None:
            return fast_run
    elif (fast_run := _read_run_fast(content, name)) is not None:
        return _of_queries(fast_run, wanted)
    text = content.text()
    fast = _run_fast(text)
    if fast is not None:
        q, d, score, first_tag = fast
    else:
        checks = {3: (is_int, "an integer rank"), 4: (is_float, "a numeric score")}
        q, _, d, _, s, tags = parse_columns(text, path, 6, RUN_FORM, checks, strict)
        score = np.array(s, dtype=np.float64) if s else np.zeros(0)
        first_tag = tags[0] if tags else None
    del text
    qid = np.array(q, dtype=object)
    dup = _duplicate_in_groups(qid, d)
    if dup is not None:
        raise _duplicate_error(path, content.text(), "run", *dup, q[dup[1]], d[dup[1]])
    run_name = name or first_tag or content_stem(path)
    return _of_queries(Run.from_arrays(qid, np.array(d, dtype=object), score, name=run_name,
                                       check=False), wanted)


def _wanted(ids: list[bytes], queries: frozenset[bytes] | None) -> np.ndarray | None:
    """Which of a run's query ids are ``queries``, or None when all or none are (the run is
    kept whole)."""
    if queries is None:
        return None
    keep = np.fromiter((q in queries for q in ids), bool, len(ids))
    return None if keep.all() or not keep.any() else keep


def _of_queries(run: Run, queries: frozenset[bytes] | None) -> Run:
    """``run``'s rows of ``queries`` (``read_run``'s rule: whole unless it holds some of them
    and others)."""
    keep = _wanted(run.query_codes()[0], queries)
    if keep is None:
        return run
    qcodes, rows = columns.kept_codes(run.query_codes(), keep)
    return Run.from_codes(qcodes, run.docid_bytes()[rows], run.score[rows], name=run.name)


def read_runs(paths: Sequence[str | Path], *, strict: bool = False,
              queries: Collection[str] | None = None) -> list[Run]:
    """Read several run files, named distinctly: by tag, or by file name when tags collide;
    ``queries`` as in ``read_run``."""
    from reljudge.trec_data import distinct_runs

    # a str is a sequence too: of one-letter paths
    if isinstance(paths, (str, Path)):
        raise InputError(f"read_runs takes a list of paths, found one path {str(paths)!r}; "
                         "use read_run(path) or read_runs([path])")
    return distinct_runs([read_run(p, strict=strict, queries=queries) for p in paths],
                         [str(p) for p in paths])


def _read_run_fast(content: Content, name: str | None) -> Run | None:
    cols = arrow.read_columns(content, RUN_COLUMNS)
    if cols is None:
        return None
    (uniq, codes), _, d, _, score, tag = cols
    if _commented(uniq):
        return None
    return _compact_run(content, (uniq, codes), d, score, name or tag.decode())


def _read_run_bytes(content: Content, name: str | None,
                    queries: frozenset[bytes] | None = None) -> Run | None:
    """Small-file fast path: the file's fields found and converted with numpy, straight into
    compact columns (no Python object per field), or None to read it as text. Taken only by
    printable-ASCII files of six fields a line, where the text path gives the same fields.
    Only the scores of ``queries`` are converted (``read_run``); the others are checked."""
    data = content.data()
    if data.startswith(BOM):
        data = data[len(BOM):]
    cols = split_fields(data, 6, (0, 2, 3, 4))
    if cols is None:
        return None
    qid, docid, rank, score_text = cols
    tag = data.split(b"\n", 1)[0].split()[5]
    qcodes = columns.segment_codes(qid)
    keep = _wanted(qcodes[0], queries)
    rows = None if keep is None else keep[qcodes[1]]
    try:
        score = numbers(score_text if rows is None else score_text[rows])
    except ValueError:
        return None
    if (not np.isfinite(score).all() or not integers_ok(rank)
            or (rows is not None and not numbers_ok(score_text[~rows]))
            or _commented(qcodes[0])):
        return None
    return _compact_run(content, qcodes, docid, score, name or tag.decode(), keep)


def _compact_run(content: Content, qcodes: tuple[list[bytes], np.ndarray], docid: np.ndarray,
                 score: np.ndarray, name: str, keep: np.ndarray | None = None) -> Run:
    """The compact Run of a fast path's columns, of the queries whose ``keep`` is true when
    given (``score`` then holds their rows' scores only); a repeated (query, document) pair
    anywhere is an error naming both lines."""
    uniq, codes = qcodes
    whole = Run.from_codes(qcodes, docid, score, name=name) if keep is None else None
    if whole is not None and not np.any(codes[1:] < codes[:-1]):
        # its rows are the file's: kept for the evaluation
        keys = whole.key_index()
    else:
        keys = columns.KeyIndex(codes, docid, columns.hash_bytes(docid))
    dup = keys.first_duplicate()
    if dup is not None:
        raise _duplicate_error(content.path, content.text(), "run", *dup,
                               uniq[codes[dup[1]]].decode(), docid[dup[1]].decode())
    if whole is not None:
        return whole
    assert keep is not None
    kept, rows = columns.kept_codes(qcodes, keep)
    return Run.from_codes(kept, docid[rows], score, name=name)


# smaller contents take the Python path (no pyarrow start-up cost)
FAST_MIN_BYTES = 1 << 20


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


def read_zscores(path: str | Path) -> dict[tuple[str, str], tuple[float, float]]:
    """trec_eval's -Z file: ``QID MEASURE MEAN STDDEV`` per line (MEASURE as trec_eval prints
    it, e.g. P_10) -> {(qid, measure): (mean, stddev)}; blank lines skipped."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for number, line in enumerate(text_lines(Content(path).text()), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4 or not is_float(fields[2]) or not is_float(fields[3]):
            raise InputError(f"expected QID MEASURE MEAN STDDEV (two numbers last), found "
                             f"{line.strip()[:80]!r}", path, number)
        out[(fields[0], fields[1])] = (float(fields[2]), float(fields[3]))
    return out
