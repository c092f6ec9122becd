"""The labeller as its jobs see it: a labelling job, a judgment, a dry run. The ``Labeller``
is one; this seam keeps those modules from importing the labeller that imports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from reljudge.judge.budget import Budget
from reljudge.judge.cache import AnswerCache
from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price
from reljudge.judge.dispatch import Lane
from reljudge.judge.http.capabilities import Capabilities
from reljudge.judge.http.endpoints import Endpoint
from reljudge.judge.prompts import Template
from reljudge.judge.sink import JudgmentSink

Item = tuple[str, str, int]  # (qid, docid, repeat)


class Settled(NamedTuple):
    """What a sink settles already for a judge."""

    #: graded, or failed in a way not asked again
    done: set[Item]
    #: the done items whose answer failed (no grade)
    failed: set[Item]
    #: items graded on texts that have changed since
    stale: set[Item]


class Judge(Protocol):
    """A judge with its settings, prompt, endpoints, request shape and answer cache."""

    @property
    def config(self) -> JudgeConfig: ...

    @property
    def template(self) -> Template: ...

    @property
    def judge_id(self) -> str: ...

    @property
    def price(self) -> Price: ...

    @property
    def endpoint(self) -> Endpoint: ...


    @property
    def answers(self) -> AnswerCache: ...

    def messages(self, qid: str, docid: str, queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> list[dict[str, str]]: ...

    def new_caps(self) -> Capabilities: ...

    def check_inputs(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                     passages: Mapping[str, Any]) -> None: ...

    def key(self, messages: list[dict], repeat: int, params: dict | None = None,
            spec: Endpoint | None = None) -> str: ...

    def keys(self, messages: list[dict], repeat: int) -> list[str]: ...

    def cache(self) -> Any: ...  # a diskcache.Cache (an untyped library)

    def settled(self, sink: object = None,
                current: Mapping[tuple[str, str], str] | None = None) -> Settled: ...

    def spending_limit(self, sink: object = None) -> Budget: ...

    def open_lanes(self, store: JudgmentSink | None = None) -> list[Lane]: ...

    def tell(self, note: str) -> None: ...
