"""Ctrl-C during a labelling job: the first stops new calls and retries (those in flight
finish and are saved), the second stops at once; a third is the handler that was there before
(Python's default). Installed only when the caller asks for it (the CLI and the pipeline
runner do; a library call leaves SIGINT alone)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable


class OnSigint:
    """First Ctrl-C: ``first()``; second: ``second()``, and SIGINT gets back the handler it
    had before."""

    def __init__(self, loop: asyncio.AbstractEventLoop, first: Callable[[], None],
                 second: Callable[[], None]):
        self.loop = loop
        self.first, self.second = first, second
        #: Ctrl-Cs seen
        self.count = 0
        self.active = False
        self.before = signal.getsignal(signal.SIGINT)
        try:
            loop.add_signal_handler(signal.SIGINT, self._handle)
            self.active = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def _handle(self) -> None:
        self.count += 1
        if self.count == 1:
            self.first()
        else:
            self.restore()
            self.second()

    def restore(self) -> None:
        """Give Ctrl-C back the handler it had before."""
        if self.active:
            self.loop.remove_signal_handler(signal.SIGINT)  # sets Python's default
            if self.before is not None:
                signal.signal(signal.SIGINT, self.before)
            self.active = False
