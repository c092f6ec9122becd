"""The progress display of a labelling run, and its Ctrl-C handling."""

from __future__ import annotations

import signal
import time
from typing import Any


class OnSigint:
    """First Ctrl-C: stop starting calls, finish those in flight, save. Second: default."""

    def __init__(self, loop, labeller: Any):
        self.loop = loop
        self.active = False
        try:
            loop.add_signal_handler(signal.SIGINT, self._handle, labeller)
            self.active = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def _handle(self, labeller: Any) -> None:
        labeller._stop = "interrupted"
        self.restore()

    def restore(self) -> None:
        """Give Ctrl-C back its default behaviour."""
        if self.active:
            self.loop.remove_signal_handler(signal.SIGINT)
            self.active = False


class _Bar:
    """A rich progress bar (``self.bar``, None when off) used as a context manager."""

    bar: Any = None

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)


class Progress(_Bar):
    """A rich progress bar (done/total, rate, ETA, spend, failures); silent when off."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled and total:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import (
                Progress as RichProgress,
            )

            self.bar = RichProgress(TextColumn("labelling"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(),
                                TextColumn("ETA"), TimeRemainingColumn(),
                                TextColumn("${task.fields[spend]:.4f}"),
                                TextColumn("[red]{task.fields[failed]} failed"), transient=False)
            self.task = self.bar.add_task("label", total=total, spend=0.0, failed=0, rate="-")
            self.start = self.shown = time.perf_counter()
            self.pending, self.report = 0, None  # advanced but not yet shown

    def advance(self, report: Any) -> None:
        if self.bar is None:
            return
        self.pending += 1
        self.report = report
        if time.perf_counter() - self.shown >= 0.05:  # at most 20 redraws a second
            self._show()

    def _show(self) -> None:
        now, r = time.perf_counter(), self.report
        rate = (r.labelled + r.failed) / max(1e-9, now - self.start)
        self.bar.update(self.task, advance=self.pending, spend=r.cost, failed=r.failed,
                        rate=f"{rate:.1f}")
        self.pending, self.shown = 0, now

    def __exit__(self, *exc):
        if self.bar is not None and self.pending:
            self._show()
        super().__exit__(*exc)


class BatchProgress(_Bar):
    """With ``--batch --wait``: one bar of the requests the provider has finished (completed
    or failed) in the batches being waited for; silent when off."""

    def __init__(self, enabled: bool):
        self.bar = None
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(TextColumn("batch requests"), BarColumn(),
                                    MofNCompleteColumn(), TimeElapsedColumn(),
                                    TextColumn("{task.fields[status]}"), transient=False)
            self.task = self.bar.add_task("batch", total=None, status="")

    def update(self, records: list[Any]) -> None:
        """Show the provider's counts of these batch records."""
        if self.bar is None or not records:
            return
        statuses: dict[str, int] = {}
        for r in records:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        self.bar.update(self.task, total=sum(r.total for r in records),
                        completed=sum(r.completed + r.failed for r in records),
                        status=", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
