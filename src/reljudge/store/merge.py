"""Merge policies: the stated, reproducible rule that turns many labels into final qrels
(docs/store.md).

For every (query, document) pair, each source's latest standing grade per repeat index is a
vote (a grade its source retracted is none). The policy picks the deciding votes
(``human-first`` by default, ``adjudicated-first``, ``human-only``, ``llm-only``,
``source=NAME``); the aggregation makes them one grade: ``majority`` (a tie goes to the lower
grade), ``mean`` or ``median``, rounded half up unless ``fractional``. Failures never decide.
A derived source votes with the grade its decision rule recorded, or with a rule chosen at
merge time (``mode``, ``median``, ``expected``). A final label is *stale* when one of its
deciding grades was given to texts changed since: kept, and flagged.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np

from reljudge.choices import AGGREGATES, Aggregate
from reljudge.errors import StoreError
from reljudge.grades import aggregate_grades
from reljudge.labels import SOURCE_KINDS, is_adjudication
from reljudge.trec_data import Qrels

#: (kind, source, grade): one source's label of a pair, a candidate vote of the merge
Vote = tuple[str, str, int]

POLICIES = ("human-first", "adjudicated-first", "human-only", "llm-only", "source=NAME")


@dataclass(frozen=True)
class FinalLabel:
    """One merged label and how it was decided."""

    qid: str
    docid: str
    grade: float
    #: the kind that decided (human / llm / import / mixed)
    decided_by: str
    sources: tuple[str, ...]
    #: the grades that were aggregated
    votes: tuple[int, ...]
    #: one of its grades was given to texts that have changed since
    stale: bool = False


@dataclass(frozen=True)
class FinalColumns:
    """Merged labels column by column: label ``i`` is ``qid[i]``, ``docid[i]``, ``grade[i]``
    (float), ``decided_by[i]``, ``stale[i]`` (bool), and its votes are
    ``vote_grades[starts[i]:starts[i + 1]]`` given by the sources ``vote_names`` of the same
    slice (``starts`` has one entry more than the labels). The texts are object arrays of str;
    a vote is an int, or a float where a derived source votes with its expected grade."""

    qid: np.ndarray
    docid: np.ndarray
    grade: np.ndarray
    decided_by: np.ndarray
    stale: np.ndarray
    starts: np.ndarray
    vote_grades: list
    vote_names: list[str]

    def __len__(self) -> int:
        return len(self.grade)

    @classmethod
    def of(cls, labels: Sequence[FinalLabel]) -> FinalColumns:
        """The columns of a list of final labels."""
        def column(values: list, dtype: type = object) -> np.ndarray:
            out: np.ndarray = np.empty(len(values), dtype=dtype)
            out[:] = values
            return out

        sizes = [len(lab.votes) for lab in labels]
        names = [s for lab in labels for s in _vote_sources(lab)]
        return cls(column([lab.qid for lab in labels]), column([lab.docid for lab in labels]),
                   np.array([lab.grade for lab in labels], dtype=np.float64),
                   column([lab.decided_by for lab in labels]),
                   np.array([lab.stale for lab in labels], dtype=bool),
                   np.r_[0, np.cumsum(sizes, dtype=np.int64)].astype(np.int64),
                   [g for lab in labels for g in lab.votes], names)

    def labels(self) -> list[FinalLabel]:
        """One FinalLabel a row."""
        starts = self.starts.tolist()
        grades, names = self.vote_grades, self.vote_names
        return [FinalLabel(q, d, g, by, tuple(sorted(set(names[i:j]))), tuple(grades[i:j]), st)
                for q, d, g, by, st, i, j in zip(
                    self.qid.tolist(), self.docid.tolist(), self.grade.tolist(),
                    self.decided_by.tolist(), self.stale.tolist(), starts[:-1], starts[1:],
                    strict=True)]


def _vote_sources(lab: FinalLabel) -> list[str]:
    """A source name per vote of ``lab``, for ``FinalColumns.of``: the names sorted, the
    first repeated, which gives back ``lab.sources`` (only the set of names is kept)."""
    return [*lab.sources, *[lab.sources[0]] * (len(lab.votes) - len(lab.sources))]


@dataclass(frozen=True, eq=False)
class Merged:
    """Merged labels with provenance, under a named policy and aggregation: ``final`` holds
    them column by column, ``labels`` one FinalLabel each (made when first read)."""

    policy: str
    aggregate: Aggregate
    fractional: bool
    final: FinalColumns

    @classmethod
    def of(cls, policy: str, aggregate: Aggregate, fractional: bool,
           labels: list[FinalLabel]) -> Merged:
        """The merge whose labels are ``labels``."""
        merged = cls(policy, aggregate, fractional, FinalColumns.of(labels))
        merged.__dict__["labels"] = labels
        return merged

    @cached_property
    def labels(self) -> list[FinalLabel]:
        """The final labels, in (qid, docid) order."""
        return self.final.labels()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Merged) and (self.policy, self.aggregate, self.fractional,
                                              self.labels) == (other.policy, other.aggregate,
                                                               other.fractional, other.labels)

    __hash__ = None  # type: ignore[assignment]  # equal merges hold equal labels

    # a summary: the labels themselves can be millions
    def __repr__(self) -> str:
        return (f"Merged(policy={self.policy!r}, aggregate={self.aggregate!r}, "
                f"fractional={self.fractional}, {len(self.final)} labels)")

    @property
    def qrels(self) -> Qrels:
        """The final labels as integer-graded qrels."""
        grade = self.final.grade
        if self.fractional and np.any(grade != np.trunc(grade)):
            raise StoreError("fractional grades cannot be written as TREC qrels; merge without "
                             "--fractional, or export the provenance file instead")
        return Qrels.from_arrays(self.final.qid, self.final.docid, grade.astype(np.int64),
                                 check=False)

    def decided_counts(self) -> Counter[str]:
        """{decided_by: final labels}."""
        return Counter(self.final.decided_by.tolist())

    def stale_counts(self) -> dict[str, int]:
        """{decided_by: final labels resting on a grade given to texts changed since}."""
        return dict(Counter(self.final.decided_by[self.final.stale].tolist()))

    def stale_note(self) -> str | None:
        """The warning for stale final labels (None when there are none)."""
        counts = self.stale_counts()
        if not counts:
            return None
        by = ", ".join(f"{n} decided by {k}" for k, n in sorted(counts.items()))
        return (f"{sum(counts.values())} final label(s) rest on grades given to query or "
                f"passage texts that have changed since ({by}); they are kept and flagged "
                "(stale in the provenance file): reljudge label asks an LLM judge again, a "
                "person grades the pair again")

    def write_provenance(self, path: str | Path) -> None:
        """The provenance side file: JSONL, or TSV when the name ends in .tsv (atomic)."""
        import json

        from reljudge.io.files import atomic_write

        rows = self.provenance_rows()
        if str(path).endswith(".tsv"):
            head = ("qid\tdocid\tgrade\tdecided_by\tsources\tvotes\tpolicy\taggregate\t"
                    "stale\n")
            body = "".join(f"{r['qid']}\t{r['docid']}\t{r['grade']:g}\t{r['decided_by']}\t"
                           f"{','.join(r['sources'])}\t{','.join(map(str, r['votes']))}\t"
                           f"{r['policy']}\t{r['aggregate']}\t{int(r['stale'])}\n"
                           for r in rows)
            atomic_write(path, head + body)
        else:
            atomic_write(path, "".join(json.dumps(r) + "\n" for r in rows))

    def provenance_rows(self) -> list[dict]:
        """One record per final label (for the TSV / JSONL side file)."""
        return [{"qid": lab.qid, "docid": lab.docid, "grade": lab.grade,
                 "decided_by": lab.decided_by, "sources": list(lab.sources),
                 "votes": list(lab.votes), "policy": self.policy, "aggregate": self.aggregate,
                 "stale": lab.stale}
                for lab in self.labels]


def check_policy(policy: str) -> None:
    """A StoreError unless ``policy`` names a merge policy."""
    if policy in POLICIES[:-1]:
        return
    if policy.startswith("source=") and policy[len("source="):]:
        return
    raise StoreError(f"unknown merge policy {policy!r}; expected one of {', '.join(POLICIES)}")


def merge_rows(rows: Sequence[tuple], policy: str = "human-first", aggregate: Aggregate = "majority",
               fractional: bool = False, stale: Set[tuple[str, str, str, str]] = frozenset()
               ) -> Merged:
    """Merge (qid, docid, kind, source, sample, grade, event id) rows into final labels;
    ``stale``: the (qid, docid, kind, source) labels given to texts changed since."""
    check_policy(policy)
    _check_aggregate(aggregate)
    return _merge(_votes(rows), policy, aggregate, fractional, stale)


def _merge(by_pair: dict[tuple[str, str], list[Vote]], policy: str, aggregate: Aggregate,
           fractional: bool, stale: Set[tuple[str, str, str, str]]) -> Merged:
    """``merge_rows`` of each pair's candidate votes (``_votes``)."""
    labels = []
    for (qid, docid) in sorted(by_pair):
        chosen = _choose(by_pair[(qid, docid)], policy)
        if not chosen:
            continue
        votes = tuple(g for _, _, g in chosen)
        kinds = {k for k, _, _ in chosen}
        labels.append(FinalLabel(qid, docid, _aggregate(votes, aggregate, fractional),
                                 kinds.pop() if len(kinds) == 1 else "mixed",
                                 tuple(sorted({s for _, s, _ in chosen})), votes,
                                 bool(stale) and any((qid, docid, k, s) in stale
                                                     for k, s, _ in chosen)))
    return Merged.of(policy, aggregate, fractional, labels)


def merge_ids(rows: Sequence[tuple] | np.ndarray, sources: Mapping[int, tuple[str, str]],
              queries: Sequence[tuple], passages: Sequence[tuple], policy: str = "human-first",
              aggregate: Aggregate = "majority", fractional: bool = False,
              stale: Set[tuple[str, str, str, str]] = frozenset(),
              grades: Mapping[int, float] | None = None) -> Merged:
    """``merge_rows`` from the store's ids, column by column: ``rows`` (source id, query id,
    passage id, sample, event id, grade) of the standing grades in any order, ``sources``
    {source id: (kind, name)}, ``queries`` and ``passages`` (id, qid or docid); ``grades``
    {event id: the grade it votes with instead} (a derived source's rule chosen at merge time). A
    pair's votes come in the order their (source, sample) first graded it, as ``merge_rows``
    gives them from rows in event order."""
    # before the sort
    check_policy(policy)
    _check_aggregate(aggregate)
    return merge_votes(latest_votes(rows, queries, passages), sources, policy, aggregate,
                       fractional, stale, grades)


@dataclass(frozen=True)
class Votes:
    """Each (source, pair, sample)'s latest standing grade, by pair (in qid, docid order) and
    in the order they first graded it: rows (source id, query id, passage id, sample, event
    id, grade, first event id); and the texts of the query and passage ids."""

    rows: np.ndarray
    qtext: np.ndarray
    dtext: np.ndarray


def latest_votes(rows: Sequence[tuple] | np.ndarray, queries: Sequence[tuple] | IdTexts,
                 passages: Sequence[tuple] | IdTexts) -> Votes:
    """The candidate votes of ``merge_ids``'s ``rows``: what every policy chooses from
    (``queries`` and ``passages``: (id, text) pairs, or their columns)."""
    ids = np.asarray(rows, dtype=np.int64).reshape(-1, 6)
    qtext, qrank = _ranked(queries)
    dtext, drank = _ranked(passages)
    if not len(ids):
        return Votes(np.zeros((0, 7), dtype=np.int64), qtext, dtext)
    # each (source, pair, sample)'s latest grade, and when it first graded the pair: the
    # rows in (source, pair, sample, event id) order, as indices into ``ids`` (one copy of
    # the rows at the end, not one a sort)
    group = _packed([ids[:, 0], ids[:, 1], ids[:, 2], ids[:, 3]])
    if group is None:
        order = np.lexsort((ids[:, 4], ids[:, 3], ids[:, 2], ids[:, 1], ids[:, 0]))
        last = _ends(ids[order, :4])
    else:
        order = _order([group, ids[:, 4]])
        ranked = group[order]
        last = np.r_[ranked[1:] != ranked[:-1], True]
    latest, first = order[last], order[np.r_[True, last[:-1]]]
    # by pair, in qid and docid order, then when they first graded it (event ids are unique:
    # one order whichever sort finds it)
    by_pair = _order([qrank[ids[latest, 1]], drank[ids[latest, 2]], ids[first, 4]])
    # + the first event's id
    return Votes(np.column_stack([np.take(ids, latest[by_pair], axis=0), ids[first[by_pair], 4]]),
                 qtext, dtext)


def _packed(columns: Sequence[np.ndarray]) -> np.ndarray | None:
    """One int64 a row that orders the rows as ``columns`` (integers, the first the most
    significant) do, or None when their ranges together need more than 63 bits."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    size = 1
    for column in columns:
        low = int(column.min(initial=0))
        span = int(column.max(initial=0)) - low + 1
        size *= span
        if size >= 2 ** 63:
            return None
        key = key * span + (column - low)
    return key


def _order(columns: Sequence[np.ndarray]) -> np.ndarray:
    """The stable order of the rows of ``columns`` (integers, the first the most significant):
    ``np.lexsort`` of them reversed, as one sort of ``_packed`` keys when they fit."""
    key = _packed(columns)
    return np.lexsort(columns[::-1]) if key is None else np.argsort(key, kind="stable")


def merge_votes(candidates: Votes, sources: Mapping[int, tuple[str, str]],
                policy: str = "human-first", aggregate: Aggregate = "majority",
                fractional: bool = False, stale: Set[tuple[str, str, str, str]] = frozenset(),
                grades: Mapping[int, float] | None = None) -> Merged:
    """``merge_ids`` of the votes ``latest_votes`` gave (several policies can share them)."""
    check_policy(policy)
    _check_aggregate(aggregate)
    votes = candidates.rows
    if not len(votes):
        return Merged.of(policy, aggregate, fractional, [])
    known = sorted(sources)
    kind, name = (np.array([sources[i][j] for i in known], dtype=object) for j in (0, 1))
    # what the votes need of their source, looked up by the source's place in ``known``
    # (its kind as its place in _KINDS): no string compared a vote
    kind_code = np.searchsorted(_KINDS, kind)
    human = kind == "human"
    settled = human & np.array([is_adjudication(n) for n in name], dtype=bool)
    at = np.searchsorted(known, votes[:, 0])
    keep = _chosen(votes[:, 1:3], at, human, kind == "llm", name, settled, policy)
    votes, at = votes[keep], at[keep]
    if not len(votes):
        return Merged.of(policy, aggregate, fractional, [])
    starts = np.r_[0, np.flatnonzero(_ends(votes[:, 1:3])) + 1]
    stored = votes[:, 5]
    grade: list = stored.tolist()
    if grades:
        grade = [grades.get(e, g) for e, g in zip(votes[:, 4].tolist(), grade, strict=True)]
    low, high = (f.reduceat(kind_code[at], starts[:-1]) for f in (np.minimum, np.maximum))
    decided = np.where(low == high, _KINDS[low], "mixed").astype(object)
    qtext, dtext = candidates.qtext[votes[starts[:-1], 1]], candidates.dtext[votes[starts[:-1], 2]]
    return Merged(policy, aggregate, fractional, FinalColumns(
        qtext, dtext, _aggregated(grade, starts, aggregate, fractional, bool(grades),
                                  None if grades else stored), decided,
        _stale(stale, qtext, dtext, kind[at], name[at], starts), starts, grade,
        name[at].tolist()))


#: the source kinds, sorted (``merge_votes`` codes a vote's kind by its place here)
_KINDS = np.array(sorted(SOURCE_KINDS), dtype=object)


def _aggregated(grade: list, starts: np.ndarray, aggregate: Aggregate, fractional: bool,
                derived: bool, stored: np.ndarray | None = None) -> np.ndarray:
    """``_aggregate`` of each label's votes ``grade[starts[i]:starts[i + 1]]``, vectorised over
    the labels whose votes are all integers; a label with a float vote (``derived``: some
    votes are a derived source's rule chosen at merge time, such as an expected grade) goes through
    ``_aggregate``. ``stored``: ``grade`` as an int64 array when the caller has it (not
    ``derived``)."""
    sizes = np.diff(starts)
    label = np.repeat(np.arange(len(sizes)), sizes)
    whole = np.fromiter((type(g) is int for g in grade), dtype=bool, count=len(grade)) \
        if derived else np.ones(len(grade), dtype=bool)
    if stored is None:
        stored = np.array([g if w else 0 for g, w in zip(grade, whole.tolist(), strict=True)]
                          if not whole.all() else grade, dtype=np.int64)
    if aggregate == "majority":
        low = int(stored.min())
        span = int(stored.max()) - low + 1
        tally = np.bincount(label * span + stored - low, minlength=len(sizes) * span)
        out = (tally.reshape(-1, span).argmax(axis=1) + low).astype(np.float64)
    elif aggregate == "mean":
        out = np.add.reduceat(stored, starts[:-1]) / sizes
    else:
        order = np.lexsort((stored, label))
        ranked = stored[order]
        mid = starts[:-1] + sizes // 2
        even = sizes % 2 == 0
        out = np.where(even, (ranked[mid - even] + ranked[mid]) / 2, ranked[mid])
    if aggregate != "majority" and not fractional:
        out = np.floor(out + 0.5)
    for i in np.unique(label[~whole]).tolist():
        out[i] = _aggregate(tuple(grade[starts[i]:starts[i + 1]]), aggregate, fractional)
    return out


def _stale(stale: Set[tuple[str, str, str, str]], qtext: np.ndarray, dtext: np.ndarray,
           kind: np.ndarray, name: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Whether each label (its votes ``kind[starts[i]:starts[i + 1]]``, ``name`` likewise) has
    a vote in ``stale``, the (qid, docid, kind, source) labels given to texts changed since."""
    out = np.zeros(len(qtext), dtype=bool)
    if not stale:
        return out
    pairs = {(q, d) for q, d, _, _ in stale}
    bounds = starts.tolist()
    for i, (q, d) in enumerate(zip(qtext.tolist(), dtext.tolist(), strict=True)):
        if (q, d) in pairs:
            out[i] = any((q, d, k, s) in stale for k, s in zip(
                kind[bounds[i]:bounds[i + 1]].tolist(), name[bounds[i]:bounds[i + 1]].tolist(),
                strict=True))
    return out


def _chosen(pairs: np.ndarray, at: np.ndarray, human_source: np.ndarray,
            llm_source: np.ndarray, name: np.ndarray, settled_source: np.ndarray,
            policy: str) -> np.ndarray:
    """Which votes (sorted by pair) ``_choose`` keeps under ``policy``, as a mask; ``at``: each
    vote's source, its place in ``name``, which ``human_source``, ``llm_source`` and
    ``settled_source`` (adjudicated grades) mark."""
    human = human_source[at]
    if policy == "human-only":
        return human
    if policy == "llm-only":
        return llm_source[at]
    if policy.startswith("source="):
        return (name == policy[len("source="):])[at]
    settled = settled_source[at]
    group = np.cumsum(np.r_[True, (pairs[1:] != pairs[:-1]).any(axis=1)]) - 1

    # the mask holds somewhere in the pair
    def anywhere(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group, mask, minlength=group[-1] + 1)[group] > 0

    keep = human | ~anywhere(human)
    if policy == "adjudicated-first":
        keep = np.where(anywhere(settled), settled, keep)
    return keep


def source_qrels(rows: Sequence[tuple] | np.ndarray, names: Mapping[int, str],
                 queries: Sequence[tuple], passages: Sequence[tuple],
                 aggregate: Aggregate = "majority") -> dict[str, Qrels]:
    """{name: the labels of that source name alone, as the policy ``source=NAME`` merges
    them} from the store's ids: ``rows`` (source id, query id, passage id, sample, event id,
    grade) of the standing grades, ``names`` {source id: name}, ``queries`` and ``passages``
    (id, qid or docid). One sort groups the rows by name, pair (in qid, docid order), source
    and sample; the last of each group (by event id) is its latest grade."""
    _check_aggregate(aggregate)
    order = list(dict.fromkeys(names.values()))
    qtext, qrank = _ranked(queries)
    dtext, drank = _ranked(passages)
    which = np.zeros(max(names, default=0) + 1, dtype=np.int64)
    which[list(names)] = [order.index(n) for n in names.values()]
    ids = np.asarray(rows, dtype=np.int64).reshape(-1, 6)
    name = which[ids[:, 0]]
    sort = np.lexsort((ids[:, 4], ids[:, 3], ids[:, 0], drank[ids[:, 2]], qrank[ids[:, 1]],
                       name))
    ids, name = ids[sort], name[sort]
    latest = _ends(np.column_stack([name, ids[:, :4]]))
    ids, name = ids[latest], name[latest]
    # the last vote of each pair
    ends = _ends(np.column_stack([name, ids[:, 1:3]]))
    first = np.r_[0, np.flatnonzero(ends[:-1]) + 1][:len(ends)]
    votes = np.diff(np.r_[first, len(ids)])
    grades = ids[first, 5]
    # a source's samples (or kinds): aggregated
    for i in np.flatnonzero(votes > 1):
        grades[i] = int(aggregate_grades(ids[first[i]:first[i] + votes[i], 5].tolist(),
                                         aggregate))
    name, q, d = name[first], ids[first, 1], ids[first, 2]
    return {n: Qrels.from_arrays(qtext[q[name == i]], dtext[d[name == i]], grades[name == i],
                                 check=False) for i, n in enumerate(order)}


class IdTexts(NamedTuple):
    """The rows of the queries or passages table column by column: their ids (int64) and
    their qids or docids (an object array of str)."""

    ids: np.ndarray
    texts: np.ndarray


def _ranked(pairs: Sequence[tuple] | IdTexts) -> tuple[np.ndarray, np.ndarray]:
    """(text by id, rank of the text among all by id) of (id, text) pairs or their columns."""
    if isinstance(pairs, IdTexts):
        ids, texts = pairs
    else:
        ids = np.array([i for i, _ in pairs], dtype=np.int64)
        texts = np.array([t for _, t in pairs], dtype=object)
    size = int(ids.max()) + 1 if len(ids) else 1
    text, rank = np.empty(size, dtype=object), np.zeros(size, dtype=np.int64)
    text[ids] = texts
    rank[ids[np.argsort(texts, kind="stable")]] = np.arange(len(ids))
    return text, rank


def _ends(keys: np.ndarray) -> np.ndarray:
    """True at the last row of each run of equal rows of sorted ``keys``."""
    return np.r_[(keys[1:] != keys[:-1]).any(axis=1), True] if len(keys) else np.zeros(0, bool)


def _check_aggregate(aggregate: str) -> None:
    if aggregate not in AGGREGATES:
        raise StoreError(f"unknown aggregation {aggregate!r}; expected one of "
                         f"{', '.join(AGGREGATES)}")


def _votes(rows: Sequence[tuple]) -> dict[tuple[str, str], list[Vote]]:
    """Each pair's candidate votes: each source's latest grade of it per repeat index."""
    latest: dict[tuple, tuple] = {}
    for qid, docid, kind, source, repeat, grade, eid in rows:
        key = (qid, docid, kind, source, repeat)
        known = latest.get(key)
        if known is None or eid > known[1]:
            latest[key] = (grade, eid)
    by_pair: dict[tuple[str, str], list[Vote]] = defaultdict(list)
    for (qid, docid, kind, source, _), (grade, _) in latest.items():
        by_pair[(qid, docid)].append((kind, source, grade))
    return by_pair


def _aggregate(votes: tuple[int, ...], aggregate: Aggregate, fractional: bool) -> float:
    """``aggregate_grades``, with a single integer vote (most pairs) taken as it is: every
    rule gives it back unchanged."""
    if len(votes) == 1 and type(votes[0]) is int:
        return float(votes[0])
    return aggregate_grades(votes, aggregate, fractional)


def _choose(labels: list[Vote], policy: str) -> list[Vote]:
    if policy == "adjudicated-first":
        settled = [x for x in labels if x[0] == "human" and is_adjudication(x[1])]
        return settled or _choose(labels, "human-first")
    if policy == "human-first":
        human = [x for x in labels if x[0] == "human"]
        return human or labels
    if policy == "human-only":
        return [x for x in labels if x[0] == "human"]
    if policy == "llm-only":
        return [x for x in labels if x[0] == "llm"]
    name = policy[len("source="):]
    return [x for x in labels if x[1] == name]


@dataclass(frozen=True)
class Conflict:
    """A pair where the human and the LLM verdicts differ."""

    qid: str
    docid: str
    human: float
    llm: float
    #: the sources whose labels made each side's grade
    human_sources: tuple[str, ...] = ()
    llm_sources: tuple[str, ...] = ()

    @property
    def diff(self) -> float:
        """LLM minus human (positive: the judge is more lenient)."""
        return self.llm - self.human


def conflicts(rows: Sequence[tuple], aggregate: Aggregate = "majority") -> list[Conflict]:
    """Pairs labelled by humans and by LLMs whose aggregated grades differ, largest first."""
    _check_aggregate(aggregate)
    # once for both sides
    votes = _votes(rows)
    return conflicts_between(_merge(votes, "human-only", aggregate, False, frozenset()),
                             _merge(votes, "llm-only", aggregate, False, frozenset()))


def conflicts_between(human: Merged, llm: Merged) -> list[Conflict]:
    """The pairs of a ``human-only`` and an ``llm-only`` merge whose grades differ, largest
    difference first."""
    by_pair = {(lab.qid, lab.docid): lab for lab in human.labels}
    out = [Conflict(lab.qid, lab.docid, h.grade, lab.grade, h.sources, lab.sources)
           for lab in llm.labels if (h := by_pair.get((lab.qid, lab.docid))) is not None
           and h.grade != lab.grade]
    return sorted(out, key=lambda c: (-abs(c.diff), c.qid, c.docid))


def coverage(merged: Merged, pool: Sequence[tuple[str, str]] | None = None
             ) -> list[tuple[str, int, int | None]]:
    """Per query: (qid, labelled pairs, pooled pairs or None when no pool is given)."""
    qids = merged.final.qid.tolist()
    labelled = Counter(qids)
    if pool is None:
        return [(q, n, None) for q, n in sorted(labelled.items())]
    final = set(zip(qids, merged.final.docid.tolist(), strict=True))
    pooled = Counter(q for q, _ in pool)
    judged = Counter(q for q, d in pool if (q, d) in final)
    return [(q, judged.get(q, 0), n) for q, n in sorted(pooled.items())]


def coverage_summary(rows: Sequence[tuple[str, int, int | None]], shown: int | None = None
                     ) -> tuple[dict, list[tuple[str, int, int | None]]]:
    """``coverage``'s rows in brief: the number of queries, min/median/max of the judged
    pairs per query (and of the pooled share, with a pool), and the ``shown`` rows of the
    least covered queries (lowest share, else fewest labels; all rows when ``shown`` is None
    or not fewer)."""
    def spread(values: list[float]) -> dict[str, float] | None:
        if not values:
            return None
        return {"min": min(values), "median": float(np.median(values)), "max": max(values)}

    shares = [n / p for _, n, p in rows if p]
    summary = {"queries": len(rows), "judged": spread([float(n) for _, n, _ in rows]),
               "share": spread(shares) if any(p is not None for *_, p in rows) else None}
    if shown is None or len(rows) <= shown:
        return summary, list(rows)
    least = sorted(rows, key=lambda r: (r[1] / r[2] if r[2] else 0.0, r[1], r[0]))
    return summary, least[:shown]
