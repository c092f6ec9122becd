"""Money as a cap: reserve a call's worst-case cost before sending it, settle on the answer.

A call is started only when the money already spent, plus what calls in flight have reserved,
plus this call's worst case stays within the limit; when it would not, the call waits for the
calls in flight to settle (their unused reservations come back) and, if it still would not
fit, the job stops starting calls. So concurrency cannot push spending past the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reljudge.errors import ConfigError
from reljudge.judge.cost import price_for
from reljudge.judge.sink import JudgmentSink

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.judge.config import JudgeConfig


class BudgetReached(Exception):
    """The next call could cross the spending limit: no new paid call is started."""


def prompt_tokens_bound(messages: list[dict[str, str]]) -> int:
    """An upper bound on a chat prompt's tokens: every BPE token is at least one UTF-8 byte,
    plus the per-message framing the chat format adds."""
    return sum(len(m["content"].encode()) for m in messages) + 4 * len(messages) + 3


class Budget:
    """The spending limit of one job: ``max_cost`` for this job, ``max_total`` across jobs
    (given what earlier runs spent), either or neither."""

    def __init__(self, max_cost: float | None = None, max_total: float | None = None,
                 spent_before: float = 0.0):
        limits = [x for x in (max_cost, None if max_total is None else max_total - spent_before)
                  if x is not None]
        self.limit = max(0.0, min(limits)) if limits else None
        #: settled cost of this job
        self.spent = 0.0
        #: worst cases of the calls in flight
        self.reserved = 0.0
        self._changed: asyncio.Condition | None = None

    async def reserve(self, amount: float) -> float:
        """Hold ``amount`` for a call; waits for calls in flight, raises BudgetReached."""
        if self.limit is None:
            return 0.0
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            while self.spent + self.reserved + amount > self.limit:
                if self.reserved <= 0:
                    raise BudgetReached
                await self._changed.wait()
            self.reserved += amount
        return amount

    async def settle(self, reserved: float, cost: float) -> None:
        """A call answered at ``cost``: record it, return the rest of its reservation."""
        self.spent += cost
        await self._release(reserved)

    async def release(self, reserved: float) -> None:
        """A call failed without an answer: its whole reservation comes back."""
        await self._release(reserved)

    async def _release(self, reserved: float) -> None:
        if self.limit is None or self._changed is None:
            return
        async with self._changed:
            self.reserved -= reserved
            self._changed.notify_all()


def spending_limit(config: JudgeConfig, models: Sequence[str], sink: object = None) -> Budget:
    """A job's budget: --max-cost, and --max-total-cost given the sink's spend ledger (the
    price of every model the run's endpoints serve must be known)."""
    c = config
    price_of = {m: price_for(m, override=(c.price_in, c.price_out)) for m in [c.model, *models]}
    unknown = [m for m in models if not price_of[m].known]
    if (c.max_cost is not None or c.max_total_cost is not None) and (
            not price_of[c.model].known or unknown):
        raise ConfigError(f"no price is known for model {(unknown or [c.model])[0]!r}, "
                          "so --max-cost / "
                          "--max-total-cost cannot be enforced: pass --price-in and "
                          "--price-out (0 for a free local model)")
    spent_before = 0.0
    if c.max_total_cost is not None:
        if not isinstance(sink, JudgmentSink):
            raise ConfigError("--max-total-cost caps the spend recorded in a label store: "
                              "pass --store")
        spent_before = sink.total_spend()
    return Budget(c.max_cost, c.max_total_cost, spent_before)
