"""Plots as inline SVG strings (matplotlib, Agg backend). Presentation only.

The HTML report no longer uses this module: ``report.svg`` draws its plots without any
plotting library. It stays for code that calls these functions; matplotlib is the optional
extra ``reljudge[report]``, and without it every function returns None.
"""

from __future__ import annotations

import io

import numpy as np


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "figure.dpi": 100})
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    fig.clf()
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def scores_plot(names: list[str], means: list[float], lows: list[float], highs: list[float],
                measure: str) -> str | None:
    """Each run's mean with its confidence interval."""
    plt = _plt()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.4 * len(names)))
    y = np.arange(len(names))[::-1]
    m = np.array(means)
    ax.errorbar(m, y, xerr=[m - np.array(lows), np.array(highs) - m], fmt="o", capsize=4,
                color="#2a6fb0")
    ax.set_yticks(y, names)
    ax.set_xlabel(f"{measure} (mean, 95% bootstrap interval)")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def confusion_heatmap(matrix: list[list[int]], title: str) -> str | None:
    """A 4x4 confusion matrix: rows reference grade, columns judge grade."""
    plt = _plt()
    if plt is None:
        return None
    c = np.array(matrix, dtype=float)
    fig, ax = plt.subplots(figsize=(4, 3.6))
    ax.imshow(c, cmap="Blues")
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            ax.text(j, i, int(c[i, j]), ha="center", va="center",
                    color="white" if c[i, j] > c.max() / 2 else "black")
    ax.set_xticks(range(4), range(4))
    ax.set_yticks(range(4), range(4))
    ax.set_xlabel("judge grade")
    ax.set_ylabel("reference grade")
    ax.set_title(title)
    return _svg(fig)


def agreement_scatter(names: list[str], reference: list[float], judge: list[float],
                      measure: str, tau: float | None) -> str | None:
    """Each run's score under the reference labels against under the judge's labels."""
    plt = _plt()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    ax.scatter(reference, judge, color="#c0392b")
    for n, x, y in zip(names, reference, judge, strict=False):
        ax.annotate(n, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    lo = min(reference + judge)
    hi = max(reference + judge)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
    ax.set_xlabel(f"{measure}, reference labels")
    ax.set_ylabel(f"{measure}, judge labels")
    ax.set_title(f"system ranking: Kendall tau = {'-' if tau is None else f'{tau:.3f}'}")
    return _svg(fig)


def per_query_differences(queries: list[str], diffs: np.ndarray, title: str) -> str | None:
    """Per-query score differences, sorted, as bars."""
    plt = _plt()
    if plt is None:
        return None
    order = np.argsort(diffs)
    fig, ax = plt.subplots(figsize=(7, 2.8))
    colors = np.where(diffs[order] >= 0, "#27ae60", "#c0392b")
    ax.bar(range(len(order)), diffs[order], color=colors)
    ax.axhline(0, color="black", lw=0.6)
    if len(order) <= 40:
        ax.set_xticks(range(len(order)), [queries[i] for i in order], rotation=90, fontsize=7)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{len(order)} queries, sorted")
    ax.set_title(title)
    return _svg(fig)
