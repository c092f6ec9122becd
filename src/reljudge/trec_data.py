"""Plain data: qrels and runs. No I/O, no network.

Qrels and runs are stored column-wise (one numpy array per column) so that large inputs stay
compact and the metric kernels can work on whole arrays; dict views are built on demand.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePath

import numpy as np
from numpy.typing import ArrayLike

from reljudge import columns
from reljudge.errors import InputError
from reljudge.frames import DataFrame
from reljudge.values import int64_grades, integer_grades, numeric_scores, qrels_dict, run_dict


def _as_str_array(values: ArrayLike) -> np.ndarray:
    """An object array of Python str (accepts lists, tuples and numpy arrays of str or bytes)."""
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.dtype != object:
        if arr.dtype.kind == "S":
            return np.array([v.decode() for v in arr.tolist()], dtype=object)
        arr = arr.astype(object)
    return arr


def _check_unique_pairs(qid: np.ndarray, docid: np.ndarray, what: str) -> None:
    seen: set[tuple[str, str]] = set()
    for q, d in zip(qid.tolist(), docid.tolist(), strict=False):
        if (q, d) in seen:
            raise InputError(f"duplicate {what} entry for query {q!r}, document {d!r}")
        seen.add((q, d))


def _group_rows(qid: np.ndarray, docid: np.ndarray, score: np.ndarray
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(qids, bounds, docid, score) with rows reordered so each query's rows are contiguous."""
    n = len(qid)
    if n == 0:
        return [], np.zeros(1, dtype=np.int64), docid, score
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    firsts = qid[starts].tolist()
    if len(set(firsts)) != len(firsts):  # a query's rows are split: group them (stable)
        codes: dict[str, int] = {}
        qcode = np.fromiter(map(codes.setdefault, qid.tolist(), range(n)), np.int64, n)
        order = np.argsort(qcode, kind="stable")
        qid, docid, score = qid[order], docid[order], score[order]
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        firsts = qid[starts].tolist()
    return firsts, np.r_[starts, n].astype(np.int64), docid, score


class _IdColumns:
    """The (qid, docid) columns shared by qrels and runs.

    Held as object arrays of Python str, or, for large files, compactly: query ids as codes
    into a short list of distinct ids, document ids as an ``S`` array of UTF-8 bytes. Compact
    columns are decoded to str only when a caller asks for ``qid`` / ``docid``.
    """

    def __init__(self, qid: np.ndarray | None, docid: np.ndarray | None) -> None:
        self._qid: np.ndarray | None = qid
        self._docid: np.ndarray | None = docid
        self._qcodes: tuple[list[bytes], np.ndarray] | None = None
        self._docid_b: np.ndarray | None = None
        self._hashes: dict[int, np.ndarray] = {}
        self._keys: columns.KeyIndex | None = None
        self._dict: dict | None = None
        self._compact = False

    def _set_compact(self, qcodes: tuple[list[bytes], np.ndarray], docid_b: np.ndarray) -> None:
        self._qid, self._docid = None, None
        self._qcodes, self._docid_b = qcodes, docid_b
        self._compact = True

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("qid", "docid", "grade", "score", "name"):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)

    @property
    def qid(self) -> np.ndarray:
        """Query id of each row (object array of str)."""
        if self._qid is None:  # held compactly: the query codes are set
            uniq, codes = self.query_codes()
            self._qid = np.array([u.decode() for u in uniq], dtype=object)[codes]
        return self._qid

    @property
    def docid(self) -> np.ndarray:
        """Document id of each row (object array of str)."""
        if self._docid is None:  # held compactly: the docid bytes are set
            self._docid = columns.decode(self.docid_bytes())
        return self._docid

    @property
    def compact(self) -> bool:
        """True when read compactly from a large file (then evaluation joins, not dicts)."""
        return self._compact

    def query_codes(self) -> tuple[list[bytes], np.ndarray]:
        """(distinct query ids as UTF-8 bytes in order of first appearance, code of each row)."""
        if self._qcodes is None:
            uniq, codes = columns.segment_codes(self.qid)  # held as str: qid is set
            self._qcodes = ([str(u).encode() for u in uniq], codes)
        return self._qcodes

    def query_ids(self) -> list[str]:
        """Query ids in order of first appearance."""
        if self._qcodes is not None:
            return [q.decode() for q in self._qcodes[0]]
        return list(dict.fromkeys(self.qid.tolist()))

    def docid_bytes(self) -> np.ndarray:
        """Document ids as an ``S`` array of UTF-8 bytes (encoded once when held as str)."""
        if self._docid_b is None:
            self._docid_b = columns.as_bytes(self.docid)  # held as str: docid is set
        return self._docid_b

    def doc_hash(self, nwords: int) -> np.ndarray:
        """64-bit hash of each docid over ``nwords`` words (see ``columns.hash_bytes``)."""
        h = self._hashes.get(nwords)
        if h is None:
            h = columns.hash_bytes(self.docid_bytes(), nwords)
            self._hashes[nwords] = h
        return h

    def key_index(self) -> columns.KeyIndex:
        """The sorted (query code, docid) keys of the rows (built once)."""
        if self._keys is None:
            docs = self.docid_bytes()
            self._keys = columns.KeyIndex(self.query_codes()[1], docs,
                                          self.doc_hash(columns.words(docs)))
        return self._keys


class Qrels(_IdColumns):
    """Graded relevance judgments: one (qid, docid, grade) row per judged pair, pairs unique."""

    def __init__(self, qid: np.ndarray | None, docid: np.ndarray | None,
                 grade: np.ndarray) -> None:
        super().__init__(qid, docid)
        self._grade = grade

    @property
    def grade(self) -> np.ndarray:
        """Grade of each row (int64)."""
        return self._grade

    def __repr__(self) -> str:
        return f"Qrels({len(self)} judgments)"

    @classmethod
    def from_arrays(cls, qid: ArrayLike, docid: ArrayLike, grade: ArrayLike, *,
                    check: bool = True) -> Qrels:
        """Build from three equal-length columns; grades must be integers."""
        q, d = _as_str_array(qid), _as_str_array(docid)
        g = np.asarray(grade)
        if g.dtype.kind not in "iu":
            g = integer_grades(g, "qrels")
        g = g.astype(np.int64, copy=False)
        if not (len(q) == len(d) == len(g)):
            raise InputError("qrels columns differ in length")
        if check:
            _check_unique_pairs(q, d, "qrels")
        return cls(q, d, g)

    @classmethod
    def from_codes(cls, qcodes: tuple[list[bytes], np.ndarray], docid: np.ndarray,
                   grade: np.ndarray) -> Qrels:
        """Build from compact columns: (distinct query ids as bytes, code of each row) and an
        ``S`` array of UTF-8 docids (pairs already known to be unique)."""
        out = cls(None, None, np.asarray(grade, dtype=np.int64))
        out._set_compact(qcodes, docid)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, int]]) -> Qrels:
        """Build from {qid: {docid: grade}} (the pytrec_eval / ranx shape); ids of any type
        are converted with ``str``, grades must be integers."""
        data = qrels_dict(data)
        qs, ds, gs = [], [], []
        for q, docs in data.items():
            for d, g in docs.items():
                qs.append(str(q))
                ds.append(str(d))
                gs.append(g)
        return cls.from_arrays(qs, ds, int64_grades(gs, len(gs)), check=False)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """The {qid: {docid: grade}} view (built once, then shared: do not mutate it)."""
        if self._dict is None:
            out: dict[str, dict[str, int]] = {}
            for q, d, g in zip(self.qid.tolist(), self.docid.tolist(), self.grade.tolist(), strict=False):
                out.setdefault(q, {})[d] = g
            self._dict = out
        return self._dict


    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame with columns qid, docid, grade (``io.coerce.as_qrels`` reads it
        back); a ReljudgeError naming ``pip install pandas`` when pandas is absent."""
        from reljudge.frames import import_pandas

        return import_pandas().DataFrame({"qid": self.qid, "docid": self.docid,
                                          "grade": self.grade})

    def get(self, qid: str, docid: str, default: int | None = None) -> int | None:
        """The grade of one pair, or default when unjudged."""
        return self.to_dict().get(qid, {}).get(docid, default)

    def __len__(self) -> int:
        return len(self.grade)

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        return zip(self.qid.tolist(), self.docid.tolist(), self.grade.tolist(), strict=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Qrels) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


class Run(_IdColumns):
    """A ranked list of scored documents per query: one (qid, docid, score) row, pairs unique.

    The rank column of TREC files is not kept: as in trec_eval, order comes from the score
    (descending), ties broken by docid descending.
    """

    def __init__(self, qid: np.ndarray | None, docid: np.ndarray | None, score: np.ndarray,
                 name: str = "run") -> None:
        super().__init__(qid, docid)
        self._score = score
        self._name = name
        self._groups: tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None = None
        self._bounds: np.ndarray | None = None
        self._compacted: Run | None = None

    @property
    def score(self) -> np.ndarray:
        """Score of each row (float64)."""
        return self._score

    @property
    def name(self) -> str:
        """The run's name (its tag, or the name it was given)."""
        return self._name

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self)} rows)"

    @classmethod
    def from_arrays(cls, qid: ArrayLike, docid: ArrayLike, score: ArrayLike, *,
                    name: str = "run", check: bool = True) -> Run:
        """Build from three equal-length columns."""
        q, d = _as_str_array(qid), _as_str_array(docid)
        s = np.asarray(score)
        if s.dtype.kind not in "iuf":  # text is refused, not parsed
            s = numeric_scores(s, "run")
        s = s.astype(np.float64, copy=False)
        if not (len(q) == len(d) == len(s)):
            raise InputError("run columns differ in length")
        if check:
            _check_unique_pairs(q, d, "run")
        return cls(q, d, s, name)

    @classmethod
    def from_codes(cls, qcodes: tuple[list[bytes], np.ndarray], docid: np.ndarray,
                   score: np.ndarray, *, name: str = "run") -> Run:
        """Build from compact columns (see ``Qrels.from_codes``).

        Rows are regrouped (stably) so that each query's rows are contiguous.
        """
        uniq, codes = qcodes
        score = np.asarray(score, dtype=np.float64)
        if len(codes) and np.any(codes[1:] < codes[:-1]):  # a query's rows are split
            order = np.argsort(codes, kind="stable")
            docid, score, codes = docid[order], score[order], codes[order]
        out = cls(None, None, score, name)
        out._set_compact((uniq, codes), docid)
        counts = np.bincount(codes, minlength=len(uniq)) if len(codes) else np.zeros(0, np.int64)
        out._bounds = np.r_[0, np.cumsum(counts)].astype(np.int64)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, float]], *, name: str = "run") -> Run:
        """Build from {qid: {docid: score}} (the pytrec_eval / ranx shape); ids of any type
        are converted with ``str``, scores must be numbers."""
        data = run_dict(data)
        qs: list[str] = []
        ds: list[str] = []
        ss: list[float] = []
        for q, docs in data.items():
            qs.extend([str(q)] * len(docs))
            ds.extend(str(d) for d in docs)
            ss.extend(docs.values())
        return cls.from_arrays(qs, ds, np.array(ss, dtype=np.float64), name=name, check=False)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """The {qid: {docid: score}} view (built once, then shared: do not mutate it)."""
        if self._dict is None:
            out: dict[str, dict[str, float]] = {}
            for q, d, s in zip(self.qid.tolist(), self.docid.tolist(), self.score.tolist(), strict=False):
                out.setdefault(q, {})[d] = s
            self._dict = out
        return self._dict


    def query_bounds(self) -> np.ndarray | None:
        """For a compact run, query i's rows are at ``bounds[i]:bounds[i+1]`` (codes as in
        ``query_codes``); None for a run held as str."""
        return self._bounds

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame with columns qid, docid, score in the run's row order
        (``io.coerce.as_run`` reads it back); a ReljudgeError naming ``pip install pandas`` when
        pandas is absent."""
        from reljudge.frames import import_pandas

        return import_pandas().DataFrame({"qid": self.qid, "docid": self.docid,
                                          "score": self.score})

    def ranked(self, qid: str) -> list[tuple[str, float]]:
        """One query's (docid, score) list in trec_eval order: score desc, then docid desc."""
        docs = self.to_dict().get(qid, {})
        return sorted(docs.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)

    def with_name(self, name: str) -> Run:
        """The same run under another name (columns and derived indexes shared)."""
        out = copy.copy(self)
        out._name = name
        return out

    def compacted(self) -> Run:
        """The same run held compactly (byte docids, query codes, rows grouped by query);
        built once, so evaluating a run again reuses its keys."""
        if self._compact:
            return self
        if self._compacted is None:
            self._compacted = Run.from_codes(self.query_codes(), self.docid_bytes(), self.score,
                                             name=self.name)
            self._compacted._dict = self._dict
        return self._compacted

    def groups(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Rows grouped by query: (qids, bounds, docid, score) with query i's rows at
        ``bounds[i]:bounds[i+1]`` of the returned columns (file order kept inside a query)."""
        if self._groups is None:
            if self._bounds is not None:
                self._groups = (self.query_ids(), self._bounds, self.docid, self.score)
            else:
                self._groups = _group_rows(self.qid, self.docid, self.score)
        return self._groups

    def __len__(self) -> int:
        return len(self.score)

    def __iter__(self) -> Iterator[tuple[str, str, float]]:
        return zip(self.qid.tolist(), self.docid.tolist(), self.score.tolist(), strict=False)


def distinct_names(names: Sequence[str], sources: Sequence[str] | None = None) -> list[str]:
    """Names made distinct: unchanged when they are; else every one is replaced by its source's
    file name (then by its source path) when those are distinct, else numbered ``name#k``."""
    names = list(names)
    if len(set(names)) == len(names):
        return names
    if sources is not None:
        for candidate in ([PurePath(s).name for s in sources], [str(s) for s in sources]):
            if len(set(candidate)) == len(candidate):
                return candidate
        names = [PurePath(s).name for s in sources]
    seen: dict[str, int] = {}
    counts = Counter(names)
    out = []
    for n in names:
        if counts[n] > 1:
            seen[n] = seen.get(n, 0) + 1
            n = f"{n}#{seen[n]}"
        out.append(n)
    return out


def distinct_runs(runs: Sequence[Run], sources: Sequence[str] | None = None) -> list[Run]:
    """The runs renamed by ``distinct_names`` (each run object kept when its name stands)."""
    names = distinct_names([r.name for r in runs], sources)
    return [r if r.name == n else r.with_name(n) for r, n in zip(runs, names, strict=True)]
