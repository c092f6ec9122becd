"""The probe set: from a user's queries, passages and known grades, the clean pairs and their
probes, chosen with a seed and every text recorded.

The kinds applied to non-relevant passages take known non-relevant pairs (grade 0) as bases,
drawn round-robin over the queries (each query's list shuffled by the seed), at most
``per_kind``; the invariance kinds take known relevant pairs (grade >= 2) the same way. All
kinds of one base use the same pair, so kinds compare on the same passages. The probes of
runs' top documents (``exploit``): the ``query-insert`` probe of every known non-relevant
document in a run's top ``depth``, and a clean pair for each of its documents with a text.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from reljudge.errors import InputError
from reljudge.labels import passage_parts
from reljudge.probe.kinds import (
    CLEAN,
    KINDS,
    Inputs,
    content_words,
    make_probe,
    probe_docid,
    probe_rng,
    vocabulary,
)
from reljudge.store.probes import ProbeText
from reljudge.trec_data import Run

#: a known grade at least this is a relevant passage (the base of an invariance probe)
RELEVANT_MIN = 2
#: the kind whose probes of runs' top documents show what the exploit gains
EXPLOIT = "query-insert"


@dataclass(frozen=True)
class ProbeSet:
    """The probes of one prompt template: every probe's text (clean ones included), the base
    pairs of each kind, the queries skipped (no known non-relevant pair) and the pairs probed
    for runs' gains."""

    #: synthetic docid -> the probe
    probes: dict[str, ProbeText]
    #: kind -> (qid, docid) it was applied to
    bases: dict[str, list[tuple[str, str]]]
    #: queries with no known non-relevant pair
    skipped: list[str]
    #: synthetic docid -> the title shown with it
    titles: dict[str, str | None]
    #: runs' (qid, docid) probed
    exploit: list[tuple[str, str]] = field(default_factory=list)
    #: the runs' top documents probed
    depth: int = 10

    def docid(self, kind: str, qid: str, original: str) -> str | None:
        """The synthetic docid of the probe of ``kind`` made from (qid, original), if made."""
        return self._index.get((kind, qid, original))

    @cached_property
    def _index(self) -> dict[tuple[str, str, str], str]:
        return {(p.kind, p.qid, p.original): d for d, p in self.probes.items()}

    def pairs(self) -> list[tuple[str, str]]:
        """Every (qid, synthetic docid) the judge is asked about, clean ones first."""
        clean = [(p.qid, d) for d, p in self.probes.items() if p.kind == CLEAN]
        return clean + [(p.qid, d) for d, p in self.probes.items() if p.kind != CLEAN]

    def passages(self) -> dict[str, dict[str, str]]:
        """{synthetic docid: {"text", "title"?}}: what the labeller renders."""
        out: dict[str, dict[str, str]] = {}
        for d, p in self.probes.items():
            title = self.titles.get(d)
            out[d] = {"text": p.text, **({"title": title} if title else {})}
        return out


def known_grades(known: Any) -> dict[str, dict[str, int]]:
    """{qid: {docid: grade}} from a Qrels or a nested mapping."""
    if hasattr(known, "to_dict"):
        return known.to_dict()
    return {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in known.items()}


def draw(lists: Mapping[str, list[str]], seed: int, what: str, limit: int | None
         ) -> list[tuple[str, str]]:
    """(qid, docid) drawn round-robin over the queries, each query's list shuffled by the
    seed; at most ``limit``."""
    shuffled = []
    for q in sorted(lists):
        docs = sorted(lists[q])
        random.Random(f"{seed}\x1f{what}\x1f{q}").shuffle(docs)
        shuffled.append((q, docs))
    out: list[tuple[str, str]] = []
    depth = 0
    while any(depth < len(docs) for _, docs in shuffled):
        out += [(q, docs[depth]) for q, docs in shuffled if depth < len(docs)]
        depth += 1
    return out if limit is None else out[:limit]


def check_texts(pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                passages: Mapping[str, Any]) -> None:
    """Refuse, before any call, pairs whose query or passage has no text, and queries without
    content words."""
    no_query = sorted({q for q, _ in pairs if not (queries.get(q) or "").strip()})
    if no_query:
        raise InputError(f"{len(no_query)} probed quer{'y has' if len(no_query) == 1 else 'ies have'}"
                         f" no text (first: {no_query[0]}); give every query of the known "
                         "grades a text")
    no_text = [(q, d) for q, d in dict.fromkeys(pairs)
               if not (passage_parts(passages.get(d))[0] or "").strip()]
    if no_text:
        q, d = no_text[0]
        raise InputError(f"{len(no_text)} probed passage(s) have no text (first: query {q}, "
                         f"document {d}); give their texts, or leave them out of the known "
                         "grades")
    for q in sorted({q for q, _ in pairs}):
        if not content_words(queries[q]):
            raise InputError(f"query {q} ({queries[q]!r}) has no content words: no probe can "
                             "be made from it")


def build_probes(queries: Mapping[str, str], passages: Mapping[str, Any], known: Any, *,
                 kinds: Sequence[str], rubric: str = "", per_kind: int | None = None,
                 seed: int = 0, runs: Sequence[Run] = (), depth: int = 10) -> ProbeSet:
    """The probe set of these kinds (see the module's text); ``rubric``: the top grade's
    sentence of the template in use (``rubric-echo``)."""
    grades = known_grades(known)
    nonrel = {q: [d for d, g in docs.items() if g <= 0] for q, docs in grades.items()}
    skipped = sorted(q for q, docs in nonrel.items() if not docs)
    nonrel = {q: docs for q, docs in nonrel.items() if docs}
    if not nonrel:
        raise InputError("no known non-relevant pair (grade 0) for any query: nothing to probe"
                         + (f" ({len(skipped)} queries have known grades, all relevant)"
                            if skipped else ""))
    relevant = {q: [d for d, g in grades[q].items() if g >= RELEVANT_MIN] for q in nonrel}
    bases: dict[str, list[tuple[str, str]]] = {}
    for kind in kinds:
        lists = nonrel if KINDS[kind].base == "nonrelevant" else relevant
        bases[kind] = draw({q: d for q, d in lists.items() if d}, seed, KINDS[kind].base,
                           per_kind)
    exploit = _exploit_pairs(runs, depth, set(nonrel), passages)
    exploit_nonrel = [(q, d) for q, d in exploit if grades.get(q, {}).get(d) == 0]
    check_texts([pair for b in bases.values() for pair in b] + exploit_nonrel, queries,
                passages)
    texts = {d: passage_parts(p)[0] or "" for d, p in passages.items()}
    words = vocabulary(texts)
    order = sorted(d for d, t in texts.items() if t.strip())
    probes: dict[str, ProbeText] = {}
    titles: dict[str, str | None] = {}

    def add(kind: str, qid: str, docid: str, text: str, title: str | None) -> None:
        made = probe_docid(kind, qid, docid, text)
        probes.setdefault(made, ProbeText(made, kind, seed, qid, docid, text))
        titles[made] = title

    for kind, pairs in bases.items():
        for qid, docid in pairs:
            text, title = passage_parts(passages[docid])
            add(CLEAN, qid, docid, str(text), title)
            x = Inputs(queries[qid], str(text), rubric, words,
                       _offtopic(grades[qid], texts, order, qid, docid, seed))
            probe = make_probe(kind, x, seed=seed, qid=qid, docid=docid)
            add(kind, qid, docid, probe, None if kind.startswith("salad") else title)
    for qid, docid in exploit:
        text, title = passage_parts(passages[docid])
        add(CLEAN, qid, docid, str(text), title)
    for qid, docid in exploit_nonrel:
        text, title = passage_parts(passages[docid])
        add(EXPLOIT, qid, docid,
            make_probe(EXPLOIT, Inputs(queries[qid], str(text)), seed=seed, qid=qid,
                       docid=docid), title)
    return ProbeSet(probes, bases, skipped, titles, exploit, depth)


def _offtopic(judged: Mapping[str, int], texts: Mapping[str, str], order: Sequence[str],
              qid: str, docid: str, seed: int) -> str:
    """A passage not known to be relevant to the query, drawn by the seed (padding's filler):
    the first such after a random place in ``order`` (every docid with a text, sorted)."""
    if not order:
        return ""
    start = probe_rng(seed, "offtopic", qid, docid).randrange(len(order))
    for i in range(len(order)):
        d = order[(start + i) % len(order)]
        if d != docid and judged.get(d, 0) <= 0:
            return texts[d]
    return ""


def _exploit_pairs(runs: Sequence[Run], depth: int, qids: set[str],
                   passages: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (qid, docid) in the runs' top ``depth`` of the probed queries that have a text."""
    if not runs:
        return []
    from reljudge.pool import top_k

    out: dict[tuple[str, str], None] = {}
    for run in runs:
        q, d, _ = top_k(run, depth)
        for pair in zip(q.tolist(), d.tolist(), strict=True):
            if pair[0] in qids and (passage_parts(passages.get(pair[1]))[0] or "").strip():
                out[pair] = None
    return list(out)
