"""Ctrl-C during a labelling run: the first stops new calls (those in flight finish and are
saved), the second is Python's default. Installed only when the caller asks for it (the CLI
and the pipeline runner do; a library call leaves SIGINT alone)."""

from __future__ import annotations

import asyncio
import signal
from typing import Protocol


class Stoppable(Protocol):
    """What Ctrl-C stops: a run whose ``stop`` says why it stops (``Dispatch``)."""

    stop: str | None


class OnSigint:
    """First Ctrl-C: stop starting calls, finish those in flight, save. Second: the handler
    that was there before (Python's default: KeyboardInterrupt)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, run: Stoppable):
        self.loop = loop
        self.active = False
        self.before = signal.getsignal(signal.SIGINT)
        try:
            loop.add_signal_handler(signal.SIGINT, self._handle, run)
            self.active = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def _handle(self, run: Stoppable) -> None:
        run.stop = "interrupted"
        self.restore()

    def restore(self) -> None:
        """Give Ctrl-C back the handler it had before."""
        if self.active:
            self.loop.remove_signal_handler(signal.SIGINT)  # sets Python's default
            if self.before is not None:
                signal.signal(signal.SIGINT, self.before)
            self.active = False
