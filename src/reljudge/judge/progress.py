"""The progress display of a labelling job (a terminal bar, or a notebook cell's)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    from reljudge.judge.report import LabelReport
    from reljudge.store.batches import BatchRecord


def stderr_console() -> Console:
    """The console every progress display draws on: stderr, so stdout carries results only
    (``--format json`` stays parseable on a terminal)."""
    from rich.console import Console

    return Console(stderr=True)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (also Colab, Databricks): rich's own detection."""
    from rich.console import Console

    return Console().is_jupyter


#: how notebook output shows preformatted text (rich's own Jupyter style)
_PRE = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;font-family:Menlo,'
        "'DejaVu Sans Mono',consolas,'Courier New',monospace\">{code}</pre>")


class NotebookDisplay:
    """A rich progress bar in a notebook cell: one display output updated in place (IPython's
    display_id), so the cell always ends showing the final counts. Needs IPython only, not
    ipywidgets; rich's own Jupyter live display does not show the last update of a short job
    and adds an empty output."""

    def __init__(self, bar: RichProgress, display: Callable[..., Any] | None = None,
                 interval: float = 0.2):
        """``display``: IPython's ``display`` (a test passes its own)."""
        if display is None:
            from IPython.display import display as shown_by_ipython

            display = shown_by_ipython
        self.bar, self.interval = bar, interval
        self.display: Callable[..., Any] = display
        #: IPython's DisplayHandle, once shown
        self.handle: Any = None
        self.shown = 0.0

    def render(self) -> dict[str, str]:
        """The bar as text/plain and text/html (inline styles, no terminal escapes)."""
        import io

        from rich.console import Console

        console = Console(file=io.StringIO(), record=True, width=110, force_terminal=False,
                          force_jupyter=False, color_system="standard")
        console.print(self.bar.get_renderable())
        text = console.export_text(clear=False)
        return {"text/plain": text.rstrip("\n"),
                "text/html": console.export_html(inline_styles=True, code_format=_PRE)}

    def show(self, force: bool = False) -> None:
        """Update the cell's display (at most every ``interval`` seconds unless ``force``)."""
        now = time.perf_counter()
        if not force and now - self.shown < self.interval:
            return
        self.shown = now
        if self.handle is None:
            self.handle = self.display(self.render(), raw=True, display_id=True)
        else:
            self.handle.update(self.render(), raw=True)


B = TypeVar("B", bound="_Bar")


class _Bar:
    """A rich progress bar (``self.bar``, None when off) used as a context manager: live in a
    terminal, a display updated in place in a notebook."""

    bar: RichProgress | None = None
    notebook: NotebookDisplay | None = None

    def _place(self) -> None:
        """Show ``self.bar`` in a notebook cell when running in one."""
        if self.bar is not None and in_notebook():
            self.notebook = NotebookDisplay(self.bar)

    def _refresh(self) -> None:
        if self.notebook is not None:
            self.notebook.show()

    def __enter__(self: B) -> B:
        if self.notebook is not None:
            self.notebook.show(force=True)
        elif self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.notebook is not None:
            self.notebook.show(force=True)
        elif self.bar is not None:
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
                                TextColumn("[red]{task.fields[failed]} failed"),
                                TextColumn("[yellow]{task.fields[retrying]}"),
                                console=stderr_console(), transient=False)
            self.task = self.bar.add_task("label", total=total, spend=0.0, failed=0, rate="-",
                                          retrying="")
            self._place()
            self.start = self.shown = time.perf_counter()
            #: advanced but not yet shown
            self.pending = 0
            self.report: LabelReport | None = None

    def advance(self, report: LabelReport) -> None:
        """One more item done (``report``: the run's counts)."""
        if self.bar is None:
            return
        self.pending += 1
        self.report = report
        if time.perf_counter() - self.shown >= 0.05:  # at most 20 redraws a second
            self._show()

    def retrying(self, kinds: Iterable[str]) -> None:
        """Show the calls waiting for a retry, by the failure kind of their last attempt:
        "retrying 3 (timeout)"."""
        if self.bar is None:
            return
        self.bar.update(self.task, retrying=retrying_text(kinds))
        self._refresh()

    def _show(self) -> None:
        now, r = time.perf_counter(), self.report
        if self.bar is None or r is None:
            return
        rate = (r.labelled + r.failed) / max(1e-9, now - self.start)
        self.bar.update(self.task, advance=self.pending, spend=r.cost, failed=r.failed,
                        rate=f"{rate:.1f}")
        self.pending, self.shown = 0, now
        self._refresh()

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None and self.pending:
            self._show()
        super().__exit__(*exc)


def retrying_text(kinds: Iterable[str]) -> str:
    """"retrying 3 (2 timeout, 1 rate_limited)" for calls waiting for a retry; "" for none."""
    counts = Counter(kinds)
    n = sum(counts.values())
    if not n:
        return ""
    if len(counts) == 1:
        return f"retrying {n} ({next(iter(counts))})"
    return f"retrying {n} (" + ", ".join(f"{c} {k}" for k, c in counts.most_common()) + ")"


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
                                    TextColumn("{task.fields[status]}"),
                                    console=stderr_console(), transient=False)
            self.task = self.bar.add_task("batch", total=None, status="")
            self._place()

    def update(self, records: list[BatchRecord]) -> None:
        """Show the provider's counts of these batch records."""
        if self.bar is None or not records:
            return
        statuses: dict[str, int] = {}
        for r in records:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        self.bar.update(self.task, total=sum(r.total for r in records),
                        completed=sum(r.completed + r.failed for r in records),
                        status=", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
        self._refresh()
