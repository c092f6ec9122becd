"""Results as tables: pandas DataFrames out (pandas stays optional) and the readable text /
HTML display every result object shares."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from reljudge.errors import ReljudgeError

#: a pandas DataFrame (pandas is optional, and mypy reads it untyped)
DataFrame = Any


def import_pandas() -> ModuleType:
    """The pandas module, or a ReljudgeError saying how to install it."""
    try:
        import pandas
    except ImportError:
        raise ReljudgeError("to_dataframe needs pandas, which is not installed: "
                            "pip install pandas") from None
    return pandas


def dataframe(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> DataFrame:
    """A pandas DataFrame of these rows (columns named by headers, values as given)."""
    return import_pandas().DataFrame([list(r) for r in rows], columns=list(headers))


class Tabular:
    """A result shown as the table the CLI prints: ``str``/``repr`` give the aligned text,
    ``_repr_html_`` an HTML table for notebooks. Subclasses define ``table()`` and may add
    lines under it with ``notes()``."""

    digits = 4

    def table(self) -> tuple[list[str], list[list[Any]]]:
        """(headers, rows) of the table the CLI prints for this result."""
        raise NotImplementedError

    def notes(self) -> list[str]:
        """Lines printed under the table."""
        return []

    def __str__(self) -> str:
        from reljudge.tables import render

        return render(*self.table(), "table", self.digits) + "".join(
            n + "\n" for n in self.notes())

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>\n{self}"

    def _repr_html_(self) -> str:
        import html

        from reljudge.tables import NUMBER_STYLE, html_table

        # the notes a line each, as in the text form
        return NUMBER_STYLE + html_table(*self.table(), self.digits) + "".join(
            f"\n<p>{html.escape(n)}</p>" for n in self.notes())
