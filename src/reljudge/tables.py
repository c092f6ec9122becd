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


class Num(str):
    """A number already formatted as text (a mean with its significance mark, "-" for none):
    HTML tables right-align it as a number; every other format shows the text as it is."""


class Interval(Num):
    """An interval as text, ``[low, high]`` to a number of decimals."""

    @classmethod
    def of(cls, low: float, high: float, digits: int = 4) -> Interval:
        """The interval ``[low, high]`` to ``digits`` decimals."""
        return cls(f"[{low:.{digits}f}, {high:.{digits}f}]")


def is_number(value: Any) -> bool:
    """Whether a cell is a number to right-align: a number, a Num, or a missing value."""
    return value is None or isinstance(value, Num) or (
        isinstance(value, (int, float)) and not isinstance(value, bool))


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    last = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{'th' if n % 100 in (11, 12, 13) else last}"


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


#: right-aligns the number cells of html_table where no report style sheet does (notebooks)
NUMBER_STYLE = "<style>td.num,th.num{text-align:right}</style>"


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4,
               groups: Sequence[tuple[str, int]] = ()) -> str:
    """An HTML table in its own scroll box, escaped: a column of numbers (``is_number``) is
    right-aligned (``class="num"``), text left-aligned; a Num's significance marks (▲ ▼) are
    coloured; ``groups`` ((label, columns spanned), ...) adds a header row above the names."""
    from html import escape

    def cell(v: Any) -> str:
        if isinstance(v, Num):
            text = escape(v).replace("▲", '<span class="up">▲</span>').replace(
                "▼", '<span class="down">▼</span>')
            return f'<td class="num">{text}</td>'
        cls = ' class="num"' if is_number(v) else ""
        return f"<td{cls}>{escape(format_value(v, digits))}</td>"

    num, group = ' class="num"', ' class="group"'
    numeric = [bool(rows) and all(is_number(r[i]) for r in rows) for i in range(len(headers))]
    top = ""
    if groups:
        top = "<tr>" + "".join(f'<th colspan="{n}"{group if label else ""}>'
                               f"{escape(label)}</th>" for label, n in groups) + "</tr>"
    head = "".join(f'<th{num if n else ""}>{escape(str(h))}</th>'
                   for h, n in zip(headers, numeric, strict=True))
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return (f'<div class="scroll"><table><thead>{top}<tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def json_dumps(obj: Any) -> str:
    """JSON for scripts: nan and inf become null, keys keep their order. Byte for byte
    ``json.dumps(clean(obj), indent=2, ensure_ascii=False)`` plus a newline (``_clean``
    the values as JSON takes them), written in one pass: json's indented encoder is
    pure Python, and 1,953 pairs of runs took it longer than estimating them."""
    out: list[str] = []
    _encode(obj, "\n", out.append)
    return "".join(out) + "\n"


def _encode(o: Any, pad: str, add: Any) -> None:
    """Append the JSON of ``o`` at the indent ``pad`` (a newline and two spaces per level)
    to ``add``, exactly as json.dumps(indent=2, ensure_ascii=False) writes its ``_clean``."""
    kind = type(o)
    if kind is str:
        add(_quote(o))
    elif o is None:
        add("null")
    elif o is True:
        add("true")
    elif o is False:
        add("false")
    elif kind is int:
        add(int.__repr__(o))
    elif kind is float:
        add(float.__repr__(o) if math.isfinite(o) else "null")
    elif kind is dict or kind is list:
        if not o:
            add("{}" if kind is dict else "[]")
            return
        inner = pad + "  "
        add(("{" if kind is dict else "[") + inner)
        if kind is dict:
            for at, (k, v) in enumerate(o.items()):
                add(("," + inner if at else "") + _quote(str(k)) + ": ")
                _encode(v, inner, add)
        else:
            for at, v in enumerate(o):
                if at:
                    add("," + inner)
                _encode(v, inner, add)
        add(pad + ("}" if kind is dict else "]"))
    else:
        cleaned = _clean(o)
        if type(cleaned) in (str, int, float, bool, dict, list) or cleaned is None:
            _encode(cleaned, pad, add)
        else:
            # what json does with a value it does not know (raise), or a subclass of one
            # it does
            add(json.dumps(cleaned, indent=2, ensure_ascii=False).replace("\n", pad))


def _clean(o: Any) -> Any:
    """``o`` as JSON takes it: nan and inf None, numpy scalars Python ones, tuples lists,
    keys text."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    # numpy scalars
    if hasattr(o, "item") and callable(o.item):
        return _clean(o.item())
    return o


#: a str as a JSON string (json's own, ensure_ascii=False)
_quote = json.encoder.encode_basestring


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
