"""What produced a report: input files with checksums (ir_datasets inputs by dataset id), the
judges (model, endpoint host, prompt and its hash) and what their labels cost, split into money
paid for calls and the value of answers that came from the answer cache. Read from files and a
label store; no network."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from reljudge.io.checksums import InputFile, input_file, input_files  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from reljudge.judge.cost import Price
    from reljudge.store import LabelStore


@dataclass(frozen=True)
class JudgeFacts:
    """One LLM label source as its events record it."""

    source: str
    model: str | None
    endpoint_host: str | None
    prompt: str | None
    prompt_version: str | None
    prompt_hash: str | None
    events: int


@dataclass(frozen=True)
class Cost:
    """What one judge's labels cost: paid calls, answers taken from the answer cache (not
    charged again, valued at the model's price) and tokens whose price is unknown."""

    source: str
    #: US dollars charged for the calls made
    spent: float
    spent_tokens: int
    #: US dollars the cached answers would cost at the model's price
    cached_value: float
    cached_tokens: int
    #: tokens of events with no known (non-zero) price
    unpriced_tokens: int

    @property
    def total(self) -> float:
        """Spent plus the value of the cached answers."""
        return self.spent + self.cached_value


def _host(endpoint: str | None) -> str | None:
    if not endpoint:
        return None
    return urlsplit(endpoint).netloc or endpoint


def judges_and_costs(store: LabelStore, price: Price | None = None
                     ) -> tuple[list[JudgeFacts], list[Cost]]:
    """The LLM sources of a store and their cost. ``price`` (a ``judge.cost.Price``) overrides
    the model's list price, as --price-in/--price-out did when labelling. An event with
    tokens and no cost was answered from the cache when its model has a known, non-zero
    price; otherwise its tokens are counted as unpriced (a free or unknown model)."""
    from reljudge.judge.cost import price_for

    facts: dict[tuple[str, str | None, str | None, str | None, str | None, str | None],
                int] = {}
    costs: dict[str, list] = {}
    prices: dict[str | None, Price] = {}
    # a run's events share one meta: decode it once
    metas: dict[str | None, dict] = {}

    def decoded(text: str | None) -> dict:
        if text not in metas:
            metas[text] = (json.loads(text) if text is not None else None) or {}
        return metas[text]

    for name, text, events in store.meta_counts("llm"):
        meta = decoded(text)
        key = (name, meta.get("model"), _host(meta.get("endpoint")), meta.get("prompt"),
               meta.get("prompt_version"), meta.get("prompt_hash"))
        facts[key] = facts.get(key, 0) + events
        costs.setdefault(name, [0.0, 0, 0.0, 0, 0])
    # cost rows in event order
    for name, text, cost, tokens_in, tokens_out in store.cost_rows("llm"):
        model = decoded(text).get("model")
        c = costs[name]
        tin, tout = tokens_in or 0, tokens_out or 0
        if cost:
            c[0] += cost
            c[1] += tin + tout
            continue
        if not tin + tout:
            continue
        if model not in prices:
            prices[model] = price if price is not None else price_for(model or "")
        p = prices[model]
        value = p.cost(tin, tout) if p.known else 0.0
        if value > 0:
            c[2] += value
            c[3] += tin + tout
        else:
            c[4] += tin + tout
    return ([JudgeFacts(*k, n) for k, n in facts.items()],
            [Cost(s, *v) for s, v in costs.items()])


def cost_line(costs: list[Cost]) -> str:
    """'$X spent now / $Y from the cache / $Z total', with the tokens behind each part."""
    spent = sum(c.spent for c in costs)
    cached = sum(c.cached_value for c in costs)
    st = sum(c.spent_tokens for c in costs)
    ct = sum(c.cached_tokens for c in costs)
    ut = sum(c.unpriced_tokens for c in costs)
    line = (f"${spent:.4f} spent now ({st:,} tokens) / ${cached:.4f} from the cache "
            f"({ct:,} tokens answered by the answer cache, not charged again) / "
            f"${spent + cached:.4f} total")
    if ut:
        line += f"; {ut:,} more tokens at no known price (a free or unpriced model)"
    return line
