"""report.svg: hand-written inline SVG plots are well-formed XML, carry one row or panel per
run, align text left and numbers right, and share one y-scale across small multiples."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from reljudge.report import svg

NS = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    assert root.get("viewBox") and root.find(f"{NS}title") is not None
    return root


def texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{NS}text"))


def test_forest_plot_has_one_row_per_run_names_left_numbers_right():
    names = ["dense", "a<b & c>\"d\"", "bm25+rm3"]
    root = parse(svg.forest_plot(names, [0.05, -0.02, 0.001], [0.01, -0.06, -0.03],
                                 [0.09, 0.01, 0.03], [True, False, False], "nDCG@10", "bm25"))
    rows = root.findall(f"{NS}g")
    assert [g.get("data-run") for g in rows] == names
    for g, name in zip(rows, names, strict=True):
        label, number = g.findall(f"{NS}text")
        assert label.text == name and label.get("text-anchor") == "start"
        assert number.get("text-anchor") == "end"
    assert rows[0].find(f"{NS}text[2]").text == "+0.050 [+0.010, +0.090] *"
    assert rows[1].find(f"{NS}text[2]").text == "\u22120.020 [\u22120.060, +0.010]"
    # a significant point is filled, the others hollow
    fills = [g.find(f"{NS}circle").get("fill") for g in rows]
    assert fills[0] == svg.BETTER and fills[1] == fills[2] == "#fff"


def test_forest_plot_zero_line_lies_inside_the_axis():
    root = parse(svg.forest_plot(["r"], [0.3], [0.2], [0.4], [True], "AP", "b"))
    ticks = [t.text for t in texts(root) if t.get("text-anchor") == "middle"]
    assert "0" in ticks  # zero is always on the axis, even when the interval excludes it


def test_small_multiples_share_one_scale_and_sort_the_bars():
    panels = [("a minus b", [0.5, -0.2, 0.0, 0.1]), ("c minus b", [-0.9, 0.05, 0.3])]
    out = svg.small_multiples(panels)
    assert len(out) == 2
    roots = [parse(p) for p in out]
    ticks = [[t.text for t in texts(r) if t.get("text-anchor") == "end" and
              t.get("font-size") == "9" and not t.text.endswith("worse")] for r in roots]
    assert ticks[0] == ticks[1] and len(ticks[0]) >= 3
    for root, (_, diffs) in zip(roots, panels, strict=True):
        rects = root.findall(f"{NS}rect")
        assert len(rects) == sum(1 for d in diffs if d != 0)  # a zero difference has no bar
        xs = [float(r.get("x")) for r in rects]
        assert xs == sorted(xs)
        colours = [r.get("fill") for r in rects]
        assert colours == sorted(colours, key=lambda c: c != svg.WORSE)  # worse first
        better = sum(d > 0 for d in diffs)
        worse = sum(d < 0 for d in diffs)
        assert f"{better} better, {worse} worse" in [t.text for t in texts(root)]


def test_a_long_panel_title_is_shortened_but_kept_whole_in_the_tooltip():
    title = "a-very-long-run-name-from-a-grid-search-with-many-settings minus bm25"
    root = parse(svg.small_multiples([(title, [0.1, -0.1])])[0])
    assert texts(root)[0].text.endswith("…") and len(texts(root)[0].text) == 40
    assert root.find(f"{NS}title").text.startswith(title)


def test_confusion_heatmap_and_scatter_are_well_formed():
    matrix = [[5, 1, 0, 0], [2, 7, 1, 0], [0, 1, 4, 2], [0, 0, 3, 9]]
    heat = parse(svg.confusion_heatmap(matrix, "judge & co"))
    counts = [int(t.text) for t in texts(heat)
              if t.get("text-anchor") == "end" and t.get("font-size") is None]
    assert counts == [v for row in matrix for v in row]  # row by row, right-aligned
    cells = heat.findall(f"{NS}rect")
    assert len(cells) == 16
    scatter = parse(svg.agreement_scatter(["x<1", "y"], [0.3, 0.5], [0.35, 0.45], "P@5"))
    assert len(scatter.findall(f"{NS}circle")) == 2


def test_scatter_labels_of_close_points_do_not_overprint():
    names = [f"run-{i}" for i in range(6)]
    scores = [0.5, 0.501, 0.502, 0.503, 0.8, 0.2]
    root = parse(svg.agreement_scatter(names, scores, scores, "nDCG@10"))
    labels = [t for t in texts(root) if t.text in names]
    assert sorted(t.text for t in labels) == names
    by_side: dict[str, list[float]] = {}
    for t in labels:
        by_side.setdefault(t.get("text-anchor"), []).append(float(t.get("y")))
    height = float(root.get("height"))
    for ys in by_side.values():
        ys.sort()
        assert all(b - a >= 11 - 1e-9 for a, b in zip(ys, ys[1:], strict=False))
        assert ys[-1] < height - 30  # above the axis labels


def test_scatter_labels_clustered_at_the_bottom_stay_inside_the_plot():
    names = [f"r{i}" for i in range(8)]
    ref = [0.1 + 0.0001 * i for i in range(8)] + [0.9]
    judge = [0.1] * 8 + [0.9]
    root = parse(svg.agreement_scatter([*names, "top"], ref, judge, "AP"))
    height = float(root.get("height"))
    ys = sorted(float(t.get("y")) for t in texts(root) if t.text in names)
    assert len(ys) == 8 and ys[-1] < height - 30
    assert all(b - a >= 11 - 1e-9 for a, b in zip(ys, ys[1:], strict=False))


@given(st.floats(-100, 100), st.floats(1e-4, 200), st.integers(2, 8))
def test_nice_ticks_cover_the_range_with_an_even_round_step(low, span, count):
    """Over the ranges plots meet (scores, differences, counts), up to float resolution."""
    high = low + span
    tol = 1e-9 * span + 16 * math.ulp(max(abs(low), abs(high)))
    ticks = svg.nice_ticks(low, high, count)
    assert ticks == sorted(ticks) and len(ticks) >= 2
    assert len(ticks) <= 3 * count
    assert all(low - tol <= t <= high + tol for t in ticks)
    steps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    step = steps[0]
    assert all(math.isclose(s, step, abs_tol=2 * tol) for s in steps)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 2.5, 5, 10))
    assert ticks[0] - low < step + tol and high - ticks[-1] < step + tol
