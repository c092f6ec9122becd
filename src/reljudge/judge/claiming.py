"""A labelling job's items, claimed from the label store a few at a time, so that several
processes on one store never ask about one item twice (``store.claims``).

``ClaimedItems`` is the run's item iterator: it claims the next few items when it runs out,
skips those another live process holds (and comes back to them: they end graded by their
owner, or their lease runs out and this job takes them over), and counts those another process
settled meanwhile. While it yields ``WAIT`` the workers sleep a little and ask again.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.judge.report import LabelReport
    from reljudge.judge.sink import JudgmentSink

Item = tuple[str, str, int]

class Wait(Enum):
    """What ClaimedItems yields when every item left is held by another live process."""

    WAIT = "wait"


WAIT = Wait.WAIT


def new_owner() -> str:
    """A claim owner id: this host, this process, and a random part (one per job)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def owner_gone(owner: str) -> bool:
    """Whether a claim's owner was a process of this machine that has exited (its claims
    are taken over at once, without waiting for its lease to run out)."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        # it runs (as another user) or cannot be asked: keep its claims
        return False
    return False


class ClaimedItems:
    """The items of a run, each claimed in the store before it is handed out."""

    def __init__(self, store: JudgmentSink, judge: str, todo: Sequence[Item], *, lease: float,
                 chunk: int = 16, poll: float = 1.0, since: float | None = None):
        """``since``: when the run read what was settled (an item answered at or after it
        was answered elsewhere; an older grade is one the run means to replace)."""
        self.store, self.judge, self.lease, self.chunk, self.poll = store, judge, lease, chunk, poll
        self.owner = new_owner()
        self.since = time.time() if since is None else since
        #: never claimed yet
        self.pending: deque[Item] = deque(todo)
        #: claimed, not handed out yet
        self.ready: deque[Item] = deque()
        #: held by another process when last asked
        self.held: list[Item] = []
        self.next_look = 0.0
        #: settled by another process during this job
        self.graded_elsewhere = 0
        self.failed_elsewhere = 0
        #: called before WAIT is yielded (the job flushes its events)
        self.on_wait: Callable[[], None] = lambda: None

    def __iter__(self) -> ClaimedItems:
        return self

    def __next__(self) -> Item | Wait:
        while not self.ready and self.pending:
            self._claim([self.pending.popleft() for _ in range(min(self.chunk,
                                                                   len(self.pending)))])
        if not self.ready and self.held and time.monotonic() >= self.next_look:
            self.next_look = time.monotonic() + self.poll
            held, self.held = self.held, []
            self._claim(held)
        if self.ready:
            return self.ready.popleft()
        if self.held:
            # store what this job has answered first: its claims go, and two processes each
            # waiting for the other's answered items never wait for ever
            self.on_wait()
            return WAIT
        raise StopIteration

    def _claim(self, items: list[Item]) -> None:
        got, held, settled = self.store.claim(self.judge, self.owner, items, self.lease,
                                              self.since, owner_gone)
        self.ready.extend(got)
        self.held.extend(held)
        for _, graded in settled:
            if graded:
                self.graded_elsewhere += 1
            else:
                self.failed_elsewhere += 1

    def left(self) -> int:
        """Items never handed out (not sent, when the run stops)."""
        return len(self.pending) + len(self.ready) + len(self.held)

    async def keep(self) -> None:
        """Renew this job's leases every third of a lease, until cancelled."""
        import asyncio  # here: `labels stats` reads claims (owner_gone) without an event loop

        while True:
            await asyncio.sleep(self.lease / 3)
            self.renew()

    def count_into(self, report: LabelReport, warn: Callable[[str], None]) -> None:
        """Count the items another process settled during this job as done before it (a
        failure there stays without a grade) in a LabelReport, and say so."""
        n = self.graded_elsewhere + self.failed_elsewhere
        if n:
            report.already_done += n
            report.already_failed += self.failed_elsewhere
            warn(f"{n} pair(s) x repeats were labelled by another process on the same store "
                 "during this job (claimed there first; not asked here)")

    def renew(self) -> None:
        """Extend this job's leases (call it well within every ``lease`` seconds)."""
        self.store.renew_claims(self.owner, self.lease)

    def release(self, items: Sequence[Item] | None = None) -> None:
        """Give up this job's claims (on these items: their events are stored)."""
        self.store.release_claims(self.owner, items)
