"""Render rows as an aligned text table, CSV, JSON, Markdown or LaTeX. Presentation only."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from reljudge.errors import ConfigError

FORMATS = ("table", "json", "csv", "markdown", "latex")


def format_value(value: Any, digits: int = 4) -> str:
    """A cell as text: floats to ``digits`` decimals, None and nan as '-'."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.{digits}f}"
    return str(value)


def _cells(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int) -> list[list[str]]:
    return [[format_value(v, digits) for v in row] for row in rows]


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """An aligned plain-text table: text columns left-aligned, numbers right-aligned."""
    cells = _cells(headers, rows, digits)
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) and rows
               for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=False)]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out) + "\n"


def csv_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with full-precision numbers."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    for row in rows:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in row])
    return buf.getvalue()


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table."""
    cells = _cells(headers, rows, digits)
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out.extend("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cells)
    return "\n".join(out) + "\n"


def latex_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """A LaTeX tabular (booktabs rules)."""
    def esc(s: str) -> str:
        return s.replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%") \
            .replace("&", r"\&").replace("#", r"\#")

    cells = _cells(headers, rows, digits)
    spec = "l" + "r" * (len(headers) - 1)
    out = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(map(esc, headers)) + r" \\",
           r"\midrule"]
    out.extend(" & ".join(esc(c) for c in r) + r" \\" for r in cells)
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out) + "\n"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """A plain HTML table (escaped; numbers right-aligned), for notebook displays."""
    from html import escape

    def cell(tag: str, v: Any) -> str:
        style = ' style="text-align:right"' if isinstance(v, (int, float)) else ""
        return f"<{tag}{style}>{escape(format_value(v, digits))}</{tag}>"

    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell("td", v) for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def json_dumps(obj: Any) -> str:
    """JSON for scripts: nan and inf become null, keys keep their order."""
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        if hasattr(o, "item") and callable(o.item):  # numpy scalars
            return clean(o.item())
        return o

    return json.dumps(clean(obj), indent=2, ensure_ascii=False) + "\n"


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table",
           digits: int = 4) -> str:
    """Rows in one of FORMATS; JSON is a list of objects keyed by header."""
    if fmt == "table":
        return text_table(headers, rows, digits)
    if fmt == "csv":
        return csv_table(headers, rows)
    if fmt == "json":
        return json_dumps([dict(zip(headers, r, strict=False)) for r in rows])
    if fmt == "markdown":
        return markdown_table(headers, rows, digits)
    if fmt == "latex":
        return latex_table(headers, rows, digits)
    raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
