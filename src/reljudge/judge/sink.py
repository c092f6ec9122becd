"""Where a labelling job writes, written out whole: every method the labeller calls on it.

``EventSink`` is the least a sink is (it takes events: a list, a file writer). A
``JudgmentSink`` (the LabelStore is one) also tells what is settled, holds claims so that
several processes share a job, and keeps the spend ledger; a run uses those only when its
sink is one (``isinstance(sink, JudgmentSink)``), and --max-total-cost needs one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from reljudge.labels import LabelEvent

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.store.events import Outcome

Item = tuple[str, str, int]


class EventSink(Protocol):
    """Takes a job's events as they arrive."""

    def add_events(self, events: Sequence[LabelEvent]) -> int:
        """Store these events; returns how many were stored."""
        ...


@runtime_checkable
class JudgmentSink(EventSink, Protocol):
    """An EventSink that also reads what is settled, claims items and records spend."""

    def outcomes(self, source: str) -> Iterable[Outcome]:
        """Every event of this judge (source name): its item, grade or failure, texts seen."""
        ...

    def claim(self, judge: str, owner: str, items: Sequence[Item], lease: float,
              since: float, gone: Callable[[str], bool] = ...
              ) -> tuple[list[Item], list[Item], list[tuple[Item, bool]]]:
        """Claim these items for ``owner``: (claimed, held by another live owner, settled
        elsewhere since ``since`` with whether graded)."""
        ...

    def renew_claims(self, owner: str, lease: float) -> int:
        """Extend this owner's claims by ``lease`` seconds."""
        ...

    def release_claims(self, owner: str, items: Sequence[Item] | None = None) -> None:
        """Give up this owner's claims (on these items, else all)."""
        ...

    def open_spend(self, judge: str, endpoint: str) -> int:
        """A new spend row for one job of a judge on one endpoint; returns its id."""
        ...

    def update_spend(self, run: int, calls: int, tokens_in: int, tokens_out: int,
                     cost: float) -> None:
        """Set a spend row's counts so far."""
        ...

    def total_spend(self) -> float:
        """What every run recorded here spent, in dollars."""
        ...
