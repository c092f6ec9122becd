"""What one person grades: the pairs, their texts, the scale, and their grades so far.

Everything here reads and writes through the label store; the web server only forwards.
A grade is a ``human`` label event of source (human, annotator), written the moment it is
given, with the seconds spent in ``latency`` and ``{"sample": NAME}`` (or ``{"pairs": FILE}``)
plus the note in ``meta``. An undo is a retraction event (``labels.RETRACTED``): the pair
counts as ungraded again, for resuming here and for every merge, stat and audit.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path

from reljudge.choices import ORDERS, Order
from reljudge.errors import ConfigError, InputError
from reljudge.grades import SCALE, SCALE_TEXT, check_grade
from reljudge.labels import (
    ADJUDICATED,
    RETRACTED,
    LabelEvent,
    is_adjudication,
    passage_parts,
    shown_digest,
)
from reljudge.store import LabelStore
from reljudge.store.events import Standing

#: the longest note, in characters
MAX_NOTE = 2000


@dataclass(frozen=True)
class ScaleStep:
    """One grade of the scale, with its short name and description."""

    grade: int
    name: str
    text: str


@dataclass(frozen=True)
class Item:
    """One pair to grade, with the texts the person reads."""

    index: int
    qid: str
    docid: str
    query: str
    narrative: str | None
    passage: str
    #: the passage's title, shown as the judge's prompt shows it
    title: str | None = None


@dataclass(frozen=True)
class Given:
    """The annotator's standing grade of one pair in this task."""

    grade: int
    note: str
    #: the order of the grade in the store (higher = later)
    event: int
    #: time spent on the pair
    seconds: float | None = None
    #: the LLM's grade was on screen when the grade was given
    llm_shown: bool = False


def scale_of(scale_text: str) -> list[ScaleStep]:
    """The 0-3 steps of a prompt's scale text ("0 = irrelevant: ...", one per grade)."""
    flat = " ".join(scale_text.split())
    parts = re.split(r"(?:^|(?<=[\s,;.]))([0-3])\s*=\s*", flat)
    steps: dict[int, ScaleStep] = {}
    for number, desc in zip(parts[1::2], parts[2::2], strict=True):
        desc = desc.strip().rstrip(",;").strip()
        name, _, text = desc.partition(":")
        steps[int(number)] = ScaleStep(int(number), name.strip(), text.strip() or name.strip())
    if tuple(sorted(steps)) != SCALE:
        raise ConfigError(f"the prompt's scale text does not describe each grade "
                          f"{SCALE_TEXT} as 'N = description': {flat[:120]!r}")
    return [steps[g] for g in sorted(steps)]


class AssessTask:
    """The pairs of one sample (or pairs file) and one annotator's grades of them."""

    def __init__(self, store: LabelStore, pairs: Sequence[tuple[str, str]], annotator: str, *,
                 sample: str | None = None, pairs_file: str | None = None,
                 scale: Sequence[ScaleStep],
                 queries: Mapping[str, str] | None = None,
                 passages: Mapping[str, str | Mapping[str, str]] | None = None,
                 order: Order = "given",
                 settles: Mapping[tuple[str, str], Sequence[Standing]] | None = None,
                 shared: Set[tuple[str, str]] = frozenset(),
                 text_files: Mapping[str, str] | None = None) -> None:
        """``settles``: adjudication (``assess --adjudicate``): the grades each pair's
        adjudicated grade settles, shown with it and linked from it; the grades then go to
        the source ``adjudicated:ANNOTATOR``. ``shared``: the pairs of a team's sample every
        member grades (``assess.team``), for the summary. ``text_files``: the files
        ``queries`` and ``passages`` were read from ({"queries": PATH, ...}), named in the
        next commands when the store lacks texts they give."""
        if order not in ORDERS:
            raise ConfigError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        if (sample is None) == (pairs_file is None):
            raise ValueError("give exactly one of sample and pairs_file")
        if not annotator.strip():
            raise ConfigError("the annotator name must not be empty")
        if is_adjudication(annotator):
            raise ConfigError(f"{annotator!r}: names starting {ADJUDICATED!r} are kept for "
                              "adjudicated grades (assess --adjudicate records them so)")
        # a judge's name would mix its grades with this person's
        store.db.check_new_source("human", ADJUDICATED + annotator if settles is not None
                                  else annotator)
        if not pairs:
            raise InputError(f"nothing to grade: {'sample ' + repr(sample) if sample else pairs_file}"
                             " has no pairs")
        self.store, self.annotator, self.scale = store, annotator, list(scale)
        self.settles = {tuple(p): list(g) for p, g in (settles or {}).items()}
        self.adjudicating = settles is not None
        #: the label source the grades go to: the annotator, or their adjudication source
        self.source = ADJUDICATED + annotator if self.adjudicating else annotator
        self.shared = frozenset(shared)
        self.sample, self.pairs_file = sample, pairs_file
        self.task = {"sample": sample} if sample is not None else {"pairs": pairs_file}
        self.order = order
        pairs = ordered(pairs, order, f"{self.task} {annotator}")
        self.items, lacking = _items(store, pairs, queries or {}, passages or {},
                                     f"sample {sample!r}" if sample else str(pairs_file))
        #: {"--queries": absolute path, ...}: the text files a command over these pairs
        #: needs, for the kinds of text the store lacks
        self.text_flags = {f"--{kind}": str(Path(path).absolute())
                           for kind, path in (text_files or {}).items() if kind in lacking}
        self._index = {(it.qid, it.docid): it.index for it in self.items}
        self._shown = _shown(store, self.items, queries or {}, passages or {})

    @property
    def name(self) -> str:
        """What is being graded, for titles."""
        return f"sample {self.sample}" if self.sample is not None else f"pairs {self.pairs_file}"

    # -- reading --------------------------------------------------------------------------
    def given(self) -> dict[int, Given]:
        """{item index: standing grade} of this annotator in this task (replays the log)."""
        out: dict[int, Given] = {}
        for n, e in enumerate(self.store.events(kind="human", source=self.source)):
            i = self._index.get((e.qid, e.docid))
            if i is None:
                continue
            if e.failure == RETRACTED:
                out.pop(i, None)
            elif e.grade is not None and self._ours(e.meta):
                meta = e.meta or {}
                out[i] = Given(e.grade, meta.get("note", ""), n, e.latency,
                               bool(meta.get("llm_shown")))
        return out

    def _ours(self, meta: dict | None) -> bool:
        # A sample's grades carry its name; a pairs file has no identity in the store, so any
        # grade the annotator gave the pair counts.
        return self.sample is None or (meta or {}).get("sample") == self.sample

    def llm_grades(self) -> dict[int, list[tuple[str, int]]]:
        """{item index: [(judge, latest grade)]} of the LLM labels the store holds."""
        latest: dict[tuple[int, str], tuple[int, int]] = {}
        for qid, docid, kind, source, _sample, grade, eid in self.store.label_rows():
            i = self._index.get((qid, docid))
            if i is not None and grade is not None and kind == "llm" and (
                    (i, source) not in latest or eid > latest[(i, source)][1]):
                latest[(i, source)] = (grade, eid)
        out: dict[int, list[tuple[str, int]]] = {}
        for (i, source), (grade, _) in sorted(latest.items()):
            out.setdefault(i, []).append((source, grade))
        return out

    def summary(self) -> dict:
        """What this annotator has done: pairs graded, time per pair, grade distribution,
        agreement with each LLM judge whose grade the store holds (and on how many pairs its
        grade was on screen when the person graded), and the commands that use the grades."""
        import numpy as np

        from reljudge.audit.items import clean
        from reljudge.stats import agreement as ag

        given = self.given()
        seconds = sorted(g.seconds for g in given.values() if g.seconds is not None)
        by_judge: dict[str, list[tuple[int, int, bool]]] = {}
        for i, judged in self.llm_grades().items():
            if i in given:
                for source, grade in judged:
                    by_judge.setdefault(source, []).append((given[i].grade, grade,
                                                            given[i].llm_shown))
        llm = []
        for source, rows in sorted(by_judge.items()):
            human, judge = (np.array([r[k] for r in rows], dtype=np.int64) for k in (0, 1))
            c = ag.confusion(human, judge)[None]
            with np.errstate(invalid="ignore", divide="ignore"):
                kappa = ag.cohen_kappa(c, "linear")[0]
            llm.append({"judge": source, "pairs": len(rows),
                        "exact": float(np.mean(human == judge)),
                        "within_1": float(np.mean(np.abs(human - judge) <= 1)),
                        "kappa_linear": clean(kappa),
                        "mean_diff": float(np.mean(judge - human)),
                        "seen": sum(r[2] for r in rows)})
        return {"task": self.name, "annotator": self.annotator, "source": self.source,
                "graded": len(given), "total": len(self.items),
                "complete": len(given) == len(self.items),
                "shared": {"pairs": sum((it.qid, it.docid) in self.shared for it in self.items),
                           "graded": sum((self.items[i].qid, self.items[i].docid) in self.shared
                                         for i in given)},
                "seconds": {"pairs": len(seconds), "total": float(sum(seconds)),
                            "median": float(np.median(seconds)) if seconds else None},
                "grades": {str(g): sum(x.grade == g for x in given.values())
                           for g in (s.grade for s in self.scale)},
                "llm": llm, "next": self.next_steps()}

    def next_steps(self) -> list[dict]:
        """The commands that take these grades further, filled in to run as shown
        (``assess.next_steps``)."""
        from reljudge.assess.next_steps import next_steps

        judges = sorted({s for judged in self.llm_grades().values() for s, _ in judged})
        return next_steps(self.store, self.source, sample_name=self.sample,
                          pairs_file=self.pairs_file, judges=judges, team=bool(self.shared),
                          adjudicating=self.adjudicating, text_flags=self.text_flags)

    # -- writing --------------------------------------------------------------------------
    def grade(self, index: object, grade: object, *, seconds: object = None,
              note: object = "", llm_shown: object = False) -> dict[int, Given]:
        """Store one grade (an append-only event); returns the standing grades. Every
        value is checked here (they come from the page as JSON)."""
        item = self._item(index)
        value = check_grade(grade)
        latency = _seconds(seconds)
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise InputError(f"a note is text of at most {MAX_NOTE} characters")
        if not isinstance(llm_shown, bool):
            raise InputError(f"llm_shown is true or false, found {llm_shown!r}")
        meta: dict[str, object] = {**self.task, "position": item.index,
                **({"note": note} if note.strip() else {}),
                **({"llm_shown": True} if llm_shown else {})}
        if self.adjudicating:
            meta.update(adjudicator=self.annotator,
                        settles=[g.event for g in self.settles.get((item.qid, item.docid), [])])
        self.store.add_events([LabelEvent(item.qid, item.docid, value, "human", self.source,
                                          latency=latency, meta=meta,
                                          shown=self._shown[item.index])])
        return self.given()

    def undo(self) -> tuple[int | None, dict[int, Given]]:
        """Retract this annotator's latest standing grade in this task; returns its item index
        (None when there is nothing to undo) and the standing grades."""
        given = self.given()
        if not given:
            return None, given
        index = max(given, key=lambda i: given[i].event)
        item = self.items[index]
        self.store.add_events([LabelEvent(item.qid, item.docid, None, "human", self.source,
                                          failure=RETRACTED,
                                          meta={**self.task, "position": index})])
        del given[index]
        return index, given

    def _item(self, index: object) -> Item:
        if not isinstance(index, int) or isinstance(index, bool) \
                or not 0 <= index < len(self.items):
            raise InputError(f"no pair number {index!r}; this task has pairs 0..{len(self.items) - 1}")
        return self.items[index]


def ordered(pairs: Sequence[tuple[str, str]], order: Order, seed: str
            ) -> list[tuple[str, str]]:
    """The pairs in the order they are shown (``ORDERS``); the shuffles are seeded by
    ``seed`` (the task and annotator), so a restart shows the same order."""
    import random

    pairs = list(pairs)
    if order == "given":
        return pairs
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    if order == "random":
        rng.shuffle(pairs)
        return pairs
    by_query: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        by_query.setdefault(pair[0], []).append(pair)
    queries = list(by_query)
    rng.shuffle(queries)
    out = []
    for q in queries:
        rng.shuffle(by_query[q])
        out += by_query[q]
    return out


def _items(store: LabelStore, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
           passages: Mapping[str, str | Mapping[str, str]], where: str
           ) -> tuple[list[Item], set[str]]:
    """The items of ``pairs``, and the kinds of text ("queries", "passages") the store lacks
    for some of them (given as ``queries`` / ``passages``)."""
    qids = list(dict.fromkeys(q for q, _ in pairs))
    docids = list(dict.fromkeys(d for _, d in pairs))
    qtexts = store.query_texts(qids)
    ptexts = store.passage_texts(docids)
    missing_q = [q for q in qids if q not in queries and not (qtexts.get(q) or (None,))[0]]
    missing_d = [d for d in docids if d not in passages and d not in ptexts]
    if missing_q or missing_d:
        what = "; ".join(f"{len(m)} {kind} (e.g. {m[0]!r})" for kind, m in
                         (("queries", missing_q), ("passages", missing_d)) if m)
        raise InputError(f"{where}: the store has no text for {what}; give the texts with "
                         "--queries FILE / --passages FILE")
    titles = store.passage_titles([d for d in docids if d not in passages])
    out = []
    for i, (q, d) in enumerate(pairs):
        text, narrative = qtexts.get(q, (None, None))
        given, title = passage_parts(passages[d]) if d in passages else (ptexts[d], titles.get(d))
        out.append(Item(i, q, d, queries.get(q) or text or "", narrative, given or "", title))
    lacking = {kind for kind, held in (("queries", all((qtexts.get(q) or (None,))[0]
                                                       for q in qids)),
                                       ("passages", all(d in ptexts for d in docids)))
               if not held}
    return out, lacking


def _seconds(value: object) -> float | None:
    """Seconds spent on a grade as the page sent them: None, or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and value >= 0:
        return value
    raise InputError(f"seconds spent must be a finite number >= 0, found {value!r}")


def _shown(store: LabelStore, items: Sequence[Item], queries: Mapping[str, object],
           passages: Mapping[str, object]) -> list[str]:
    """The digest of what each item shows the person (``labels.shown_digest``): the store's
    texts (and the passage's title) where they come from the store, else the texts given."""
    held = store.shown_now([(it.qid, it.docid) for it in items
                            if it.qid not in queries and it.docid not in passages])
    return [held.get((it.qid, it.docid)) or shown_digest(it.query, it.passage, it.title)
            for it in items]
