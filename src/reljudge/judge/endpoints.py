"""Many endpoints at once: one labelling job spread over several OpenAI-compatible servers.

Each endpoint is a lane with its own client, concurrency (its workers), rate limiter and
circuit breaker; a pair goes to whichever lane has a free worker. A lane whose breaker opens
(or that fails fatally: bad key, unknown model, TLS) is drained: it takes no new pairs, and
its pairs whose calls failed go back to the queue for the others. Only when every lane is
drained does the job stop, as a job on one endpoint does.

Endpoints serving one model are replicas (unless ``replicas = false``): their answers are
cached under one key without the URL, so any replica's answer is a hit for all. Endpoints
serving different models are different judges (``model/prompt``), each with today's key.
One endpoint keeps today's key (URL included) unless ``replicas = true`` is said.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reljudge.errors import ConfigError
from reljudge.judge.config import EndpointConfig, JudgeConfig
from reljudge.judge.failures import ENDPOINT_KINDS
from reljudge.labels import FailureKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

__all__ = ["HAND_BACK_KINDS", "EndpointSpec", "Lane", "WorkQueue", "endpoints_from_file",
           "resolve_endpoints"]

#: failed calls whose pair another endpoint may answer (the endpoint did not): handed back
#: while another endpoint is up, at most once per endpoint; any failure on a drained one too
HAND_BACK_KINDS = ENDPOINT_KINDS | {FailureKind.TIMEOUT}

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.judge.client import Endpoint


@dataclass(frozen=True)
class EndpointSpec:
    """One endpoint of a job, resolved: where, which model, its limits, its cache scope."""

    endpoint: Endpoint
    model: str
    concurrency: int
    rpm: float | None
    tpm: float | None
    replica: bool  # cached without its URL, shared with the other replicas

    @property
    def display(self) -> str:
        """The base URL without credentials or query."""
        return self.endpoint.display


def resolve_endpoints(config: JudgeConfig) -> list[EndpointSpec]:
    """The endpoints of a job: ``config.endpoints``, else the one ``base_url`` (or
    OPENAI_BASE_URL, else OpenAI) with the shared limits."""
    from reljudge.judge.client import Endpoint  # the HTTP side: imported when a job is built

    if not config.endpoints:
        key = config.api_key.get_secret_value() if config.api_key else None
        return [EndpointSpec(Endpoint.resolve(config.base_url, key), config.model,
                             config.concurrency, config.rpm, config.tpm,
                             replica=bool(config.replicas))]
    models = {e.model or config.model for e in config.endpoints}
    replica = config.replicas if config.replicas is not None else len(models) == 1
    specs = []
    for e in config.endpoints:
        specs.append(EndpointSpec(Endpoint.resolve(e.url, _key(e, config)),
                                  e.model or config.model, e.concurrency or config.concurrency,
                                  e.rpm or config.rpm, e.tpm or config.tpm, replica=replica))
    seen: set[str] = set()
    for s in specs:
        if s.endpoint.base_url in seen:
            raise ConfigError(f"endpoint {s.display} is given twice")
        seen.add(s.endpoint.base_url)
    return specs


def _key(e: EndpointConfig, config: JudgeConfig) -> str | None:
    if e.api_key is not None:
        return e.api_key.get_secret_value()
    if e.api_key_env:
        value = os.environ.get(e.api_key_env)
        if not value:
            raise ConfigError(f"endpoint {e.url}: api_key_env names {e.api_key_env}, which is "
                              "not set")
        return value
    return config.api_key.get_secret_value() if config.api_key else None


def endpoints_from_file(path: str | Path) -> list[dict[str, Any]]:
    """The ``[[endpoints]]`` tables of a TOML file, or the list (or ``{"endpoints": [...]}``)
    of a JSON file; each checked against EndpointConfig, errors naming the file."""
    from pydantic import ValidationError

    from reljudge.io.files import read_text

    path = Path(path)
    try:
        text = read_text(path)
    except OSError as e:
        raise ConfigError(f"--endpoints {path}: cannot read it ({e.strerror or e})") from None
    try:
        if path.suffix.lower() == ".json":
            data: Any = json.loads(text)
        else:
            data = tomllib.loads(text)
    except ValueError as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"--endpoints {path}: not valid {kind}: {e}") from None
    rows = data.get("endpoints") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"--endpoints {path}: expected a non-empty list of endpoints "
                          "([[endpoints]] tables in TOML, a JSON list of objects)")
    out = []
    for i, row in enumerate(rows, 1):
        if isinstance(row, dict) and "api_key" in row:
            raise ConfigError(f"--endpoints {path}: endpoint {i}: a key does not belong in a "
                              "file: name the environment variable that holds it "
                              "(api_key_env = \"VAR\")")
        try:
            out.append(EndpointConfig.model_validate(row).model_dump(exclude_none=True))
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'entry'}: {x['msg']}"
                                 for x in e.errors())
            raise ConfigError(f"--endpoints {path}: endpoint {i}: {problems}") from None
    return out


@dataclass(eq=False)
class Lane:
    """One endpoint during a run: its client, limiter, breaker, first-call gate and counts."""

    spec: EndpointSpec
    judge_id: str
    price: Any  # reljudge.judge.cost.Price of its model
    client: Any = None  # ChatClient, opened by the run
    limiter: Any = None  # RateLimiter
    breaker: Any = None  # CircuitBreaker
    preflight: asyncio.Future | None = None
    gate: asyncio.Event | None = None
    drained: str | None = None  # why no more pairs go here
    pairs: int = 0  # judgments recorded by this lane's workers (cached answers included)
    calls: int = 0  # paid answers it gave
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    handed_back: int = 0  # pairs whose call failed here and went to another endpoint
    spend_run: int | None = None
    meta: dict = field(default_factory=dict)  # provenance of its labels

    @property
    def display(self) -> str:
        """The endpoint's base URL without credentials or query."""
        return self.spec.display

    def summary(self) -> dict[str, Any]:
        """Its counts, for the report."""
        return {"endpoint": self.display, "model": self.spec.model,
                "concurrency": self.spec.concurrency, "pairs": self.pairs,
                "paid calls": self.calls, "handed back": self.handed_back,
                "drained": self.drained}


@dataclass(eq=False)
class WorkQueue:
    """The items of a run, shared by every lane's workers: those handed back by an endpoint
    first (never to one whose call of it failed already, while another could take it), then
    fresh ones in order."""

    items: Any  # an iterator of items
    back: deque = field(default_factory=deque)
    tried: dict = field(default_factory=dict)  # item -> the lanes that handed it back
    busy: int = 0  # items being judged now (any of them may be handed back)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, lane: Lane, lanes: list[Lane]):
        """The next item for this lane, or None when there is none for it now."""
        for i, item in enumerate(self.back):
            if lane not in self.tried[item] or not self.elsewhere(item, lane, lanes):
                del self.back[i]
                return item
        return next(self.items, None)

    def elsewhere(self, item, lane: Lane, lanes: list[Lane]) -> bool:
        """Another endpoint is up that has not failed this item yet."""
        tried = self.tried.get(item, ())
        return any(other is not lane and other.drained is None and other not in tried
                   for other in lanes)

    def hand_back(self, item, lane: Lane) -> None:
        """This lane's call of the item failed: it goes to the others."""
        self.tried.setdefault(item, set()).add(lane)
        lane.handed_back += 1
        self.back.append(item)

    async def wait(self) -> bool:
        """Nothing to take now: wait until an item in flight ends; False when none is in
        flight (the queue is done)."""
        if self.busy == 0:
            return False
        self._changed.clear()
        await self._changed.wait()
        return True

    def done_one(self) -> None:
        """An item taken is finished (judged, handed back, or not sent)."""
        self.busy -= 1
        self._changed.set()

    def left(self) -> int:
        """Items never judged (counted as not sent when the job stops)."""
        return len(self.back) + sum(1 for _ in self.items)
