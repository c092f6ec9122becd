"""One self-contained HTML report: scores with intervals, comparison, audit, coverage, cost.

No network is needed to open it: styles are inline and plots are inline SVG.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence

import numpy as np

from reljudge.report import plots
from reljudge.report.tables import format_value

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1100px;color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2.2rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{padding:.25rem .6rem;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f5f7fa}
.note{color:#666;font-size:.85rem}.up{color:#1e8449;font-weight:600}
.down{color:#c0392b;font-weight:600}.plots{display:flex;flex-wrap:wrap;gap:1rem}
.plots svg{max-width:100%;height:auto}.missing{background:#fff4e5;padding:.5rem;
border-left:3px solid #f0a030}
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for v in row:
            text = html.escape(format_value(v, digits) if not isinstance(v, str) else v)
            text = text.replace("▲", '<span class="up">▲</span>').replace(
                "▼", '<span class="down">▼</span>')
            cells.append(f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _plot(svg: str | None) -> str:
    if svg is None:
        return ('<p class="missing">Plots need matplotlib: '
                "<code>pip install 'reljudge[report]'</code></p>")
    return f"<div>{svg}</div>"


def build_report(qrels, runs, measures: Sequence[str], *, baseline: str | None = None,
                 test: str = "randomization", trials: int = 10_000, seed: int = 0,
                 reference=None, judge=None, judge_name: str = "judge",
                 judges: Mapping | None = None, audit_measure: str | None = None, store=None,
                 title: str = "reljudge report", all_queries: bool = False) -> str:
    """The report as one HTML string; ``judges`` ({name: qrels}) or one ``judge`` is audited
    against ``reference``. Queries are averaged as in ``stats.compare``."""
    from reljudge import __version__
    from reljudge.stats import compare
    from reljudge.stats.compare import comparison_rows

    comp = compare(qrels, runs, measures, baseline=baseline, test=test, trials=trials,
                   seed=seed, all_queries=all_queries)
    runs = [r.with_name(n) for r, n in zip(runs, comp.runs, strict=True)]  # distinct names
    m0 = comp.measures[0]
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="note">reljudge {__version__}, {time.strftime("%Y-%m-%d %H:%M")}; '
             f"{len(comp.runs)} runs, {len(comp.queries)} queries for the baseline "
             f"({html.escape(comp.rule_note())}). Conventions: trec_eval "
             "semantics (ties by docid descending, unjudged documents are grade 0, nDCG ideal "
             "ranking from all judged documents).</p>"]
    parts += [f'<p class="missing">{html.escape(w)}</p>' for w in comp.warnings]

    parts.append("<h2>Run scores</h2>")
    rows = []
    for n in comp.runs:
        row = [n]
        for m in comp.measures:
            iv = comp.cells[(n, m)].interval
            row += [iv.mean, f"[{iv.low:.4f}, {iv.high:.4f}]", iv.se]
        rows.append(row)
    headers = ["run"] + [h for m in comp.measures for h in (m, "95% CI", "SE")]
    parts.append(_table(headers, rows))
    ivs = [comp.cells[(n, m0)].interval for n in comp.runs]
    parts.append(_plot(plots.scores_plot(comp.runs, [i.mean for i in ivs],
                                         [i.low for i in ivs], [i.high for i in ivs], m0)))

    parts.append("<h2>Comparison with the baseline</h2>")
    h, r = comparison_rows(comp, with_ci=False)
    parts.append(_table(h, r))
    parts.append(f'<p class="note">{html.escape(comp.legend())}</p>')

    parts.append(f"<h2>Per-query differences ({html.escape(m0)})</h2><div class='plots'>")
    for n in comp.runs:
        if n != comp.baseline:
            common, base, vals = comp.paired(n, m0)
            diff = vals - base
            parts.append(_plot(plots.per_query_differences(
                common, diff, f"{n} minus {comp.baseline}: {np.sum(diff > 0)} better, "
                              f"{np.sum(diff < 0)} worse")))
    parts.append("</div>")

    if judges is None and judge is not None:
        judges = {judge_name: judge}
    if reference is not None and judges:
        parts.append(_audit_section(reference, dict(judges), runs, audit_measure or m0))
    if store is not None:
        parts.append(_estimate_section(store, runs, comp.measures, comp.baseline))
        parts.append(_store_section(store))
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>\n")


def _audit_section(reference, judges: dict, runs, measure) -> str:
    from reljudge.audit import audit

    res = audit(reference, judges, runs, measure=measure, with_ensembles=False)
    out = ["<h2>Can the judge be trusted? (audit against the reference labels)</h2>"]
    keys = ["exact", "kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal", "spearman",
            "leniency", "mae"]
    out.append(_table(["judge", "pairs", *keys],
                      [[j.name, j.items.pairs, *[j.items.stats[k] for k in keys]]
                       for j in res.judges], 3))
    for j in res.judges:
        for stat, why in j.items.undefined.items():
            out.append(f'<p class="note">{html.escape(j.name)}: {html.escape(stat)} undefined: '
                       f"{html.escape(why)}</p>")
    out.append("<div class='plots'>")
    for j in res.judges:
        out.append(_plot(plots.confusion_heatmap(j.items.confusion, f"{j.name} vs reference")))
        if j.systems is not None:
            sy = j.systems
            out.append(_plot(plots.agreement_scatter(sy.runs, sy.reference_scores,
                                                     sy.judge_scores, measure, sy.kendall_tau)))
    out.append("</div>")
    for j in res.judges:
        if j.systems is not None:
            out.append(f'<p class="note">{html.escape(j.name)}: Kendall tau '
                       f"{format_value(j.systems.kendall_tau, 3)}, tau_AP "
                       f"{format_value(j.systems.tau_ap, 3)}, largest rank change "
                       f"{j.systems.max_rank_change}.</p>")
    return "\n".join(out)


def _estimate_section(store, runs, measures, baseline) -> str:
    """Scores under human labels from the store's newest fully graded sample (PPI), if any."""
    from reljudge.infer.scores import estimate_table, from_store

    est = from_store(store, runs, measures, baseline=baseline, require=False)
    if est is None:
        return ""
    return "\n".join([
        "<h2>Scores under human labels (prediction-powered, from a human sample)</h2>",
        _table(*estimate_table(est.rows + est.diffs, with_p=True)),
        f'<p class="note">{html.escape(est.note())}. llm: the judge\'s labels alone '
        "(bootstrap interval, biased when the judge is); human: the sample alone; ppi: "
        "both, valid however bad the judge is.</p>"]
        + [f'<p class="warning">{html.escape(w)}</p>' for w in est.warnings()])


def _store_section(store) -> str:
    sources = store.sources()
    failures = store.failures()
    merged = store.merge()
    from reljudge.store import coverage

    cov = coverage(merged)
    out = ["<h2>Labels: sources, coverage and cost</h2>"]
    out.append(_table(["kind", "source", "events", "ok", "failed", "grade 0", "1", "2", "3",
                       "tokens in", "tokens out", "cost $"],
                      [[s.kind, s.name, s.events, s.ok, s.failed,
                        *[s.grades.get(g, 0) for g in range(4)], s.tokens_in, s.tokens_out,
                        s.cost] for s in sources]))
    total = sum(s.cost for s in sources)
    out.append(f'<p class="note">Total spent on LLM calls: ${total:.4f}; failed judgments: '
               f"{len(failures)} (never counted as grades).</p>")
    out.append(_table(["query", "final labels"], [[q, n] for q, n, _ in cov]))
    return "\n".join(out)
