"""Plain data of labelling: a label event (a grade or a failure, with its provenance), the
kinds of failure, and a drawn sample of pairs for people to grade. No I/O, no network."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reljudge.errors import InputError

SOURCE_KINDS = ("human", "llm", "import")


class FailureKind(str, enum.Enum):
    """What went wrong with one judgment."""

    #: refused, reset, closed mid-answer, DNS, proxy
    CONNECTION = "connection"
    #: certificate or handshake failure: fatal, never retried
    TLS = "tls"
    #: the whole call took longer than --timeout
    TIMEOUT = "timeout"
    #: an HTTP error answer other than 429
    HTTP_STATUS = "http_status"
    #: HTTP 429
    RATE_LIMITED = "rate_limited"
    #: the model refused or a content filter stopped the answer
    REFUSED = "refused"
    #: an answer (or response body) no grade could be read from
    UNPARSEABLE = "unparseable"
    #: an answer cut off at the output token limit before its grade
    TRUNCATED = "truncated"
    #: not affordable within --max-cost / --max-total-cost
    BUDGET = "budget"
    #: a Batch API request not run before its batch expired
    EXPIRED = "expired"
    #: a Batch API request not run because its batch was cancelled
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value

# The failure kind of an undo: a source takes back its grade of a pair. Every earlier event of
# that source for the pair (and repeat index) stops counting; a later grade counts again.
RETRACTED = "retracted"

# An adjudicated grade (``reljudge assess --adjudicate``) is a human label of its own source,
# ``adjudicated:NAME``, that links (``meta["settles"]``) the events it settles; the merge
# policy ``adjudicated-first`` lets it decide, and annotator agreement leaves it out.
ADJUDICATED = "adjudicated:"


def is_adjudication(source_name: str) -> bool:
    """True for the source of an adjudicator's grades."""
    return source_name.startswith(ADJUDICATED)


@dataclass(frozen=True, slots=True)
class LabelEvent:
    """One label given to one (query, document) pair by one source: the unit of the label store.

    A failed LLM judgment is a LabelEvent too, with ``grade=None`` and ``failure`` set: failures
    are recorded, never turned into grades. A correction is a new event, never an update.
    """

    qid: str
    docid: str
    grade: int | None
    #: one of SOURCE_KINDS
    source_kind: str
    #: assessor id, or the judge: "model/prompt@version#hash8"
    source_name: str
    #: index of the repeat when a judge is asked several times
    repeat: int = 0
    #: the raw answer text (LLM) or source line (import)
    raw: str | None = None
    #: P(grade = 0..3) from logprobs, when asked
    probs: tuple[float, ...] | None = None
    #: sum of grade * probability, when probs are known
    expected_grade: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    #: in US dollars
    cost: float | None = None
    #: seconds
    latency: float | None = None
    #: why no grade could be had (None when grade is set)
    failure: str | None = None
    #: unix time; the store fills it in when None
    created_at: float | None = None
    #: provenance extras (model, prompt name/version/hash, params)
    meta: dict | None = None
    #: what kind of failure (None for a grade)
    failure_kind: FailureKind | None = None
    #: shown_digest of the texts the judge or person saw (None: unknown)
    shown: str | None = None

    def __post_init__(self) -> None:
        if self.source_kind not in SOURCE_KINDS:
            raise InputError(f"source kind must be one of {SOURCE_KINDS}, "
                             f"found {self.source_kind!r}")
        if (self.grade is None) == (self.failure is None):
            raise InputError(f"a label event has either a grade or a failure reason, not "
                             f"{'both' if self.grade is not None else 'neither'} "
                             f"({self.qid}, {self.docid})")
        kind = self.failure_kind
        if kind is not None and not isinstance(kind, FailureKind):
            try:
                object.__setattr__(self, "failure_kind", FailureKind(kind))
            except ValueError:
                raise InputError(f"unknown failure kind {kind!r}; expected one of "
                                 f"{', '.join(k.value for k in FailureKind)}") from None

    @property
    def ok(self) -> bool:
        """True when the event carries a grade (not a failure)."""
        return self.grade is not None

    @property
    def retraction(self) -> bool:
        """True when the event takes back the source's earlier grade of the pair (an undo)."""
        return self.failure == RETRACTED


@dataclass(frozen=True)
class SampleItem:
    """One pair to label, in draw order, with the inclusion probability of its unit."""

    qid: str
    docid: str
    position: int
    prob: float
    stratum: str | None = None


@dataclass(frozen=True)
class Sample:
    """A drawn sample: its design and the pairs in the order people should grade them."""

    name: str
    #: "query" or "pair"
    unit: str
    design: str
    seed: int
    budget: int
    items: list[SampleItem]
    params: dict = field(default_factory=dict)

    def pairs(self) -> list[tuple[str, str]]:
        """(qid, docid) in position order."""
        return [(i.qid, i.docid) for i in self.items]


def passage_parts(p: str | Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(text, title) of a passage as runs and stores give it: a text, or a {"text": ...,
    "title"?: ...} record (no text: "", an empty title: None); None stays (None, None)."""
    if p is None or isinstance(p, str):
        return p, None
    return p.get("text", ""), p.get("title") or None


def shown_digest(query: str | None, passage: str | None, title: str | None = None) -> str:
    """A digest of what a judge or a person was shown for one pair: the query text, the
    passage text and its title. A label whose digest differs from that of the store's current
    texts was given to texts that have changed since: it is stale."""
    import hashlib
    import json

    blob = json.dumps([query, passage, title or None], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
