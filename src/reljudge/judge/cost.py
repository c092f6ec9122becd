"""Money: prices per model, the cost of a call, and approximate token counts for quotes."""

from __future__ import annotations

import math
from dataclasses import dataclass

# US dollars per million tokens (input, output), list prices; override with
# --price-in / --price-out. Self-hosted models (vLLM, Ollama, llama.cpp) cost nothing.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
}

#: the Batch API's price as a fraction of the online price (OpenAI: half)
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """Dollars per million input and output tokens; known=False when we had to assume 0."""

    input: float
    output: float
    known: bool = True

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """Dollars for one call."""
        return (tokens_in * self.input + tokens_out * self.output) / 1_000_000

    def scaled(self, factor: float) -> Price:
        """This price times ``factor`` (the Batch API's discount)."""
        return Price(self.input * factor, self.output * factor, self.known)


def explicit_price(price_in: float | None, price_out: float | None) -> Price | None:
    """The price given by hand (--price-in / --price-out, a config's prices): a part left out
    costs 0; None when neither part is given."""
    if price_in is None and price_out is None:
        return None
    return Price(price_in or 0.0, price_out or 0.0)


def price_for(model: str, override: tuple[float | None, float | None] = (None, None)) -> Price:
    """The price of a model: explicit override, then PRICES (longest matching prefix)."""
    explicit = explicit_price(*override)
    if explicit is not None:
        return explicit
    table = PRICES
    if model in table:
        return Price(*table[model])
    prefixes = [m for m in table if model.startswith(m + "-")]
    if prefixes:  # dated snapshots such as gpt-4o-mini-2024-07-18
        return Price(*table[max(prefixes, key=len)])
    return Price(0.0, 0.0, known=False)


#: characters per token of the bundled prompts rendered over English passages, measured with
#: OpenAI's o200k_base encoding (4.35-4.49 across umbrela, basic and json: bench/token_estimate.py)
CHARS_PER_TOKEN = 4.4


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """A calibrated token count of chat messages: content at CHARS_PER_TOKEN, plus the 3
    tokens of framing per message and 3 priming the answer that OpenAI bills."""
    chars = sum(len(m["content"]) for m in messages)
    return math.ceil(chars / CHARS_PER_TOKEN) + 3 * len(messages) + 3
