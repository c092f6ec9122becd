"""Plots as small inline SVG documents written by hand: no plotting library, no fonts or
scripts from outside. Presentation only; every function returns one ``<svg>`` element.

Text labels are left-aligned (``text-anchor="start"``), numbers right-aligned (``end``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

BETTER = "#1e8449"
WORSE = "#c0392b"
INK = "#222"
GRID = "#d5d8dc"
MUTED = "#666"
POINT = "#2a6fb0"
#: rough width of one character at font-size 11 (sizes the name column)
CHAR_W = 6.6


def _svg(width: float, height: float, body: list[str], label: str, css_class: str,
         font_size: int = 11) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" role="img" '
            f'aria-label="{escape(label)}" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" font-family="system-ui,sans-serif" '
            f'font-size="{font_size}"><title>{escape(label)}</title>{"".join(body)}</svg>')


def _text(x: float, y: float, text: str, anchor: str = "start", **attrs: object) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{escape(str(v))}"' for k, v in attrs.items())
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>'
            f"{escape(text)}</text>")


def _line(x1: float, y1: float, x2: float, y2: float, color: str = INK,
          width: float = 1.0, dash: str = "") -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{color}" stroke-width="{width}"{d}/>')


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values inside [low, high]: a step of 1, 2, 2.5 or 5 times a power of ten,
    the one giving nearest ``count`` ticks, and never fewer than two."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    steps = sorted(s * m for m in (mag / 10, mag, mag * 10) for s in (1, 2, 2.5, 5))
    i = min(range(len(steps)), key=lambda k: abs(math.log(steps[k] / raw)))
    while True:
        step = steps[i]
        first = math.ceil(low / step - 1e-9)
        last = math.floor(high / step + 1e-9)
        if last > first or i == 0:
            return [round(k * step, 12) for k in range(first, last + 1)]
        i -= 1


def _span(values: Sequence[float], include_zero: bool = True) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (-1.0, 1.0)
    if include_zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def _signed(v: float, digits: int) -> str:
    return f"{v:+.{digits}f}".replace("-", "\u2212")


def forest_plot(names: Sequence[str], diffs: Sequence[float], lows: Sequence[float],
                highs: Sequence[float], significant: Sequence[bool], measure: str,
                baseline: str, digits: int = 3) -> str:
    """Each run's mean difference from the baseline with its interval, one row per run: names
    on the left, the interval in the middle (zero marked), the numbers on the right."""
    row_h, top, bottom = 24, 26, 34
    name_w = max(50.0, CHAR_W * 1.1 * max((len(n) for n in names), default=4) + 12)
    plot_w, num_w = 220.0, 170.0
    width = name_w + plot_w + num_w
    height = top + row_h * len(names) + bottom
    lo, hi = _span([*lows, *highs])
    x0 = name_w

    def sx(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * plot_w

    body = [_text(4, 14, "run", font_weight="600"),
            _text(width - 4, 14, "difference [95% CI]", "end", font_weight="600")]
    plot_bottom = top + row_h * len(names)
    for t in nice_ticks(lo, hi):
        body.append(_line(sx(t), top - 4, sx(t), plot_bottom, GRID, 0.8))
        body.append(_text(sx(t), plot_bottom + 14, f"{t:g}".replace("-", "\u2212"), "middle",
                          fill=MUTED, font_size=10))
    body.append(_line(sx(0), top - 4, sx(0), plot_bottom, INK, 1.2))
    body.append(_text(x0 + plot_w / 2, height - 4, f"difference in {measure}", "middle",
                      fill=MUTED, font_size=10))
    for i, (n, d, a, b, sig) in enumerate(zip(names, diffs, lows, highs, significant,
                                              strict=True)):
        y = top + row_h * i + row_h / 2
        color = (BETTER if d > 0 else WORSE) if sig else POINT
        body.append(f'<g class="row" data-run="{escape(n)}">')
        body.append(_text(4, y + 4, n))
        body.append(_line(sx(a), y, sx(b), y, color, 2))
        for x in (sx(a), sx(b)):
            body.append(_line(x, y - 4, x, y + 4, color, 1.5))
        fill = color if sig else "#fff"
        body.append(f'<circle cx="{sx(d):.1f}" cy="{y:.1f}" r="4" fill="{fill}" '
                    f'stroke="{color}" stroke-width="1.5"/>')
        label = (f"{_signed(d, digits)} [{_signed(a, digits)}, {_signed(b, digits)}]"
                 + (" *" if sig else ""))
        body.append(_text(width - 4, y + 4, label, "end", font_variant_numeric="tabular-nums"))
        body.append("</g>")
    return _svg(width, height, body, f"forest plot: {measure} difference from {baseline} "
                "with 95% bootstrap intervals", "forest", 12)


def difference_panel(title: str, diffs: Sequence[float], low: float, high: float,
                     digits: int = 2) -> str:
    """One small panel: per-query differences sorted, green above zero and red below, on a
    y-scale shared with the other panels (``low``..``high``)."""
    width, height = 280.0, 160.0
    left, right, top, bottom = 40.0, 6.0, 22.0, 20.0
    plot_w, plot_h = width - left - right, height - top - bottom
    d = np.sort(np.asarray(diffs, dtype=np.float64))

    def sy(v: float) -> float:
        return top + (high - v) / (high - low) * plot_h

    better, worse = int(np.sum(d > 0)), int(np.sum(d < 0))
    shown = title if len(title) <= 40 else title[:39] + "…"
    body = [_text(2, 13, shown, font_weight="600")]
    for t in nice_ticks(low, high, 4):
        body.append(_line(left, sy(t), width - right, sy(t), GRID, 0.6))
        body.append(_text(left - 4, sy(t) + 3.5, f"{t:.{digits}f}".replace("-", "\u2212"),
                          "end", fill=MUTED, font_size=9))
    n = len(d)
    if n:
        bar = plot_w / n
        for i, v in enumerate(d.tolist()):
            if v == 0:
                continue
            y1, y2 = sorted((sy(0), sy(v)))
            body.append(f'<rect x="{left + i * bar:.2f}" y="{y1:.2f}" '
                        f'width="{max(bar * 0.85, 0.5):.2f}" height="{max(y2 - y1, 0.5):.2f}" '
                        f'fill="{BETTER if v > 0 else WORSE}"/>')
    body.append(_line(left, sy(0), width - right, sy(0), INK, 0.8))
    body.append(_text(left, height - 5, f"{n} queries, sorted", fill=MUTED, font_size=9))
    body.append(_text(width - right, height - 5, f"{better} better, {worse} worse", "end",
                      fill=MUTED, font_size=9))
    return _svg(width, height, body, f"{title}: {better} queries better, {worse} worse",
                "panel")


def small_multiples(panels: Sequence[tuple[str, Sequence[float]]]) -> list[str]:
    """Panels of per-query differences, one per run, on one shared y-scale."""
    values = [v for _, diffs in panels for v in diffs]
    lo, hi = _span(values)
    return [difference_panel(title, diffs, lo, hi) for title, diffs in panels]


def confusion_heatmap(matrix: Sequence[Sequence[int]], title: str) -> str:
    """A grade-by-grade count matrix: rows the reference grade, columns the judge's."""
    c = np.asarray(matrix, dtype=np.int64)
    k = c.shape[0]
    cell, left, top = 40.0, 70.0, 30.0
    width, height = left + cell * k + 8, top + cell * k + 10
    peak = max(int(c.max()), 1)
    body = [_text(left + cell * k / 2, 12, "judge grade", "middle", fill=MUTED, font_size=10)]
    for j in range(k):
        body.append(_text(left + cell * j + cell / 2, top - 2, str(j), "middle", font_size=10))
    for i in range(k):
        body.append(_text(left - 6, top + cell * i + cell / 2 + 4, str(i), "end", font_size=10))
        for j in range(k):
            v = int(c[i, j])
            share = v / peak
            shade = int(round(245 - share * 170))
            fill = f"rgb({shade},{min(shade + 12, 250)},250)" if v else "#fafafa"
            x, y = left + cell * j, top + cell * i
            body.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="{cell - 2:.0f}" '
                        f'height="{cell - 2:.0f}" fill="{fill}"'
                        + (' stroke="#888" stroke-width="1"' if i == j else "") + "/>")
            body.append(_text(x + cell - 7, y + cell / 2 + 4, str(v), "end",
                              fill="#fff" if share > 0.55 else INK))
    body.append(_text(4, top + cell * k / 2 - 6, "reference", fill=MUTED, font_size=10))
    body.append(_text(4, top + cell * k / 2 + 7, "grade", fill=MUTED, font_size=10))
    return _svg(width, height, body, f"{title}: confusion matrix of grades", "heatmap")


def _labels(names: Sequence[str], xs: Sequence[float], ys: Sequence[float], flip_at: float,
            bottom: float, gap: float = 11.0) -> list[tuple[str, float, float, str]]:
    """Point labels that do not overprint: labels on the same side are pushed down until
    they are ``gap`` apart, then the side's labels move up together if the last would pass
    ``bottom``; points right of ``flip_at`` are labelled on their left."""
    sides: dict[str, list[list]] = {}
    for i in sorted(range(len(names)), key=lambda k: ys[k]):
        anchor = "end" if xs[i] > flip_at else "start"
        side = sides.setdefault(anchor, [])
        y = max(ys[i], side[-1][2] + gap) if side else ys[i]
        side.append([names[i], xs[i], y, anchor])
    out = []
    for side in sides.values():
        excess = max(side[-1][2] - bottom, 0.0)
        out += [(n, x, y - excess, a) for n, x, y, a in side]
    return out


def agreement_scatter(names: Sequence[str], reference: Sequence[float],
                      judge: Sequence[float], measure: str) -> str:
    """Each run's score under the reference labels (x) against under the judge's (y)."""
    width = height = 300.0
    left, bottom, top, right = 44.0, 36.0, 10.0, 10.0
    lo, hi = _span([*reference, *judge], include_zero=False)
    pw, ph = width - left - right, height - top - bottom

    def sx(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw

    def sy(v: float) -> float:
        return top + (hi - v) / (hi - lo) * ph

    body = []
    for t in nice_ticks(lo, hi, 4):
        body.append(_line(sx(t), top, sx(t), top + ph, GRID, 0.6))
        body.append(_line(left, sy(t), left + pw, sy(t), GRID, 0.6))
        body.append(_text(sx(t), top + ph + 13, f"{t:.2f}", "middle", fill=MUTED, font_size=9))
        body.append(_text(left - 4, sy(t) + 3, f"{t:.2f}", "end", fill=MUTED, font_size=9))
    body.append(_line(sx(lo), sy(lo), sx(hi), sy(hi), MUTED, 0.8, "4 3"))
    for n, x, y in zip(names, reference, judge, strict=True):
        body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="{WORSE}">'
                    f"<title>{escape(n)}: {x:.4f} vs {y:.4f}</title></circle>")
    for n, x, label_y, anchor in _labels(names, [sx(v) for v in reference],
                                         [sy(v) - 5 for v in judge], left + pw * 0.7,
                                         top + ph - 2):
        body.append(_text(x + (-6 if anchor == "end" else 6), label_y, n, anchor,
                          font_size=10))
    body.append(_text(left + pw / 2, height - 4, f"{measure}, reference labels", "middle",
                      fill=MUTED, font_size=10))
    body.append(f'<text transform="translate(11,{top + ph / 2:.0f}) rotate(-90)" '
                f'text-anchor="middle" fill="{MUTED}" font-size="10">'
                f"{escape(measure)}, judge labels</text>")
    return _svg(width, height, body, f"run scores: {measure} under the reference labels "
                "against under the judge's", "scatter")
