"""One self-contained HTML report that answers "which run is better, and can I trust the
labels?": a summary in words first, then the forest plot of differences from the baseline,
scores, per-query differences, the judge audit, conflicts, and the configuration and cost.

No network is needed to open it: styles are inline, plots are inline SVG written by
``report.svg`` (no plotting library), and there are no scripts.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reljudge.grades import SCALE
from reljudge.report import svg
from reljudge.report.model import Forest, ReportModel, ReportSettings, StoreTables, compute
from reljudge.report.summary import (
    LANDIS_KOCH_CITATION,
    MIN_PAIRS,
    MIN_RUNS,
    Summary,
    is_coverage,
    landis_koch,
)
from reljudge.tables import Interval, Num, format_value
from reljudge.tables import html_table as table

if TYPE_CHECKING:
    from reljudge.audit.result import AuditResult
    from reljudge.infer.scores import StoreEstimates
    from reljudge.probe.analysis import ProbeReport
    from reljudge.stats.compare import Comparison
    from reljudge.store import LabelStore
    from reljudge.store.views import ConflictText
    from reljudge.trec_data import Qrels, Run

STYLE = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1100px;color:#222;line-height:1.45;padding:1rem;overflow-wrap:anywhere}
h1{font-size:1.6rem;margin:.5rem 0 .2rem}h2{font-size:1.2rem;margin-top:2rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{font-size:1rem;margin:.2rem 0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{padding:.25rem .45rem;border-bottom:1px solid #eee;text-align:left;vertical-align:top;
overflow-wrap:normal}
th{background:#f5f7fa}td:first-child{white-space:nowrap}.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}th.num{white-space:normal}
.note{color:#555;font-size:.85rem}.up{color:#1e8449;font-weight:600}
.down{color:#c0392b;font-weight:600}
.summary{background:#f5f9ff;border:1px solid #cfe0f5;border-radius:6px;padding:.4rem 1rem}
.summary li{margin:.3rem 0}
.warning{background:#fff4e5;padding:.5rem .7rem;border-left:3px solid #f0a030;margin:.5rem 0}
figure{margin:.8rem 0}figcaption{color:#555;font-size:.85rem;margin-top:.3rem}
.fig{overflow-x:auto;max-width:100%}.fig svg{display:block;height:auto;max-width:100%}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:.6rem;
max-width:100%}
.multiples svg{width:100%;max-width:420px;height:auto;display:block}
.fig svg.forest{width:100%;max-width:640px}
.plots{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
.plots figure{margin:0;max-width:100%}.plots figcaption{max-width:320px}
th.group{text-align:center;border-bottom:1px solid #ccd}
details{margin:.6rem 0;border:1px solid #e3e6ea;border-radius:6px;padding:.3rem .7rem}
summary{cursor:pointer;font-weight:600}
.conflict{border-top:1px solid #eee;padding:.5rem 0}
.conflict p{margin:.25rem 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:.4rem;
font-size:.82rem;margin:.3rem 0}
dl.config{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dl.config dt{font-weight:600}dl.config dd{margin:0}
code{font-size:.85em}
@media (max-width:600px){body{padding:.6rem}dl.config{grid-template-columns:1fr}
dl.config dd{margin-bottom:.4rem}}
"""


def _p(text: str, cls: str = "note") -> str:
    return f'<p class="{cls}">{html.escape(text)}</p>'


def _summary_html(summaries: Sequence[Summary]) -> str:
    lines = [x for s in summaries for x in s.lines]
    warnings = [w for s in summaries for w in s.warnings]
    out = ['<section id="summary"><h2>Summary</h2><div class="summary"><ul>']
    out += [f"<li>{html.escape(x)}</li>" for x in lines]
    out.append("</ul></div>")
    out += [f'<p class="warning">{html.escape("Warning: " + w)}</p>' for w in warnings]
    out.append("</section>")
    return "\n".join(out)


def render(model: ReportModel) -> str:
    """The report as one HTML page, from its computed model (no computation, no store)."""
    s, comp, m0 = model.settings, model.comparison, model.measure
    parts = [f"<header><h1>{html.escape(s.title)}</h1>",
             *(f'<p class="warning {cls}">{html.escape(line)}</p>'
               for cls, line in (("partial", s.partial), ("notice", s.notice)) if line),
             _p(f"reljudge {model.version}, {model.made_at}; "
                f"{len(comp.runs)} runs, {len(comp.queries)} queries for the baseline "
                f"({comp.rule_note()}). Conventions: trec_eval semantics (ties by docid "
                "descending, unjudged documents are grade 0, nDCG ideal ranking from all "
                "judged documents)."), "</header>",
             _summary_html(model.summaries),
             _forest_section(model.forest, comp.baseline, m0),
             _scores_section(comp, s.digits),
             _per_query_section(comp, m0, s.digits)]
    if model.audit is not None:
        parts.append(_audit_section(model.audit, s.digits))
    if model.store is not None:
        parts.append(_estimate_section(model.estimates, s.digits))
        parts.append(_conflicts_section(model.conflicts, model.conflict_count))
    if model.probes is not None:
        parts.append(_probes_section(model.probes))
    parts.append(_configuration_section(model))
    body = "\n".join(parts)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(s.title)}</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>\n")


def build_report(qrels: Qrels, runs: Sequence[Run], settings: ReportSettings, *,
                 reference: Qrels | None = None, judges: Mapping[str, Qrels] | None = None,
                 store: LabelStore | None = None) -> str:
    """The report as one HTML string: ``report.model.compute``, then ``render``."""
    return render(compute(qrels, runs, settings, reference=reference, judges=judges,
                          store=store))


def _forest_section(forest: Forest | None, baseline: str, m0: str) -> str:
    out = [f'<section id="differences"><h2>Differences from the baseline '
           f"{html.escape(baseline)} ({html.escape(m0)})</h2>"]
    if forest is None:
        out.append(_p("Only one run: there is nothing to compare it with.") + "</section>")
        return "\n".join(out)
    plot = svg.forest_plot(forest.runs, forest.diffs, forest.lows, forest.highs,
                           forest.significant, m0, baseline)
    out.append(f'<figure><div class="fig">{plot}</div><figcaption>Mean per-query difference '
               f"from {html.escape(baseline)} over the queries both runs are averaged "
               "over, with a 95% bootstrap interval of that mean (1000 resamples). Filled "
               "points and * mark differences significant after the correction (see the "
               "scores table's legend).</figcaption></figure></section>")
    return "\n".join(out)


def _scores_section(comp: Comparison, digits: int = 4) -> str:
    from reljudge.stats.compare import mark

    headers, groups = ["run"], [("", 1)]
    for m in comp.measures:
        cov = is_coverage(m)
        headers += ["mean", "95% CI"] + ([] if cov else ["p adj."])
        groups.append((m, 2 if cov else 3))
    rows = []
    for n in comp.runs:
        row: list = [n + (" (baseline)" if n == comp.baseline else "")]
        for m in comp.measures:
            c = comp.cells[(n, m)]
            iv = c.interval
            cov = is_coverage(m)
            row.append(Num(f"{iv.mean:.{digits}f}" + ("" if cov else mark(c))))
            row.append(Interval.of(iv.low, iv.high, digits))
            if not cov:
                row.append(Num("-" if c.p_adjusted is None else f"{c.p_adjusted:.{digits}f}"))
        rows.append(row)
    legend = comp.legend()
    if any(is_coverage(m) for m in comp.measures):
        legend += ("; Judged@k is coverage (how much of each top k has labels), shown without "
                   "a test")
    return "\n".join(['<section id="scores"><h2>Run scores</h2>', table(headers, rows, groups=groups),
                      _p(legend), "</section>"])


def _per_query_section(comp: Comparison, m0: str, digits: int = 4) -> str:
    others = [n for n in comp.runs if n != comp.baseline]
    out = [f'<section id="per-query"><h2>Per-query differences ({html.escape(m0)})</h2>']
    if others:
        panels = []
        for n in others:
            _, base, vals = comp.paired(n, m0)
            panels.append((f"{n} minus {comp.baseline}", (vals - base).tolist()))
        out.append('<figure><div class="multiples">' + "".join(svg.small_multiples(panels))
                   + "</div><figcaption>One panel per run: each query's difference from "
                   f"{html.escape(comp.baseline)}, sorted; green: the run is better on that "
                   "query, red: worse. All panels share one y-scale.</figcaption></figure>")
    j = comp.measures.index(m0)
    values = {n: dict(zip(comp.run_queries[n], comp.per_query[n][:, j].tolist(), strict=True))
              for n in comp.runs}
    queries = sorted({q for v in values.values() for q in v}, key=_natural)
    rows = [[q, *[values[n].get(q) for n in comp.runs]] for q in queries]
    out.append(f"<details><summary>Per-query {html.escape(m0)} of every run "
               f"({len(queries)} queries)</summary>"
               + table(["query", *comp.runs], rows, digits) + "</details></section>")
    return "\n".join(out)


def _natural(text: str) -> list:
    """Sort key that orders q2 before q10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text)]


def _audit_section(result: AuditResult, digits: int = 3) -> str:
    out = ['<section id="judge"><h2>Can the judge be trusted? (audit against the reference '
           "labels)</h2>"]
    keys = ["exact", "kappa", "kappa_quadratic", "alpha_ordinal", "spearman", "leniency",
            "mae"]
    rows = []
    for j in result.judges:
        k = j.items.stats.get("kappa")
        ci = j.items.ci.get("kappa")
        rows.append([j.name, j.items.pairs, *[j.items.stats.get(x) for x in keys[:2]],
                     Num("-") if ci is None else Interval.of(ci[0], ci[1], digits),
                     "-" if k is None else landis_koch(k),
                     *[j.items.stats.get(x) for x in keys[2:]]])
    out.append(table(["judge", "pairs", "exact", "kappa", "kappa 95% CI", "reading",
                      "quadratic kappa", "ordinal alpha", "Spearman", "leniency", "MAE"],
                     rows, digits))
    out.append(_p(f"Reading of kappa after {LANDIS_KOCH_CITATION}: below 0 poor, 0-0.20 "
                  "slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial, "
                  f"0.81-1 almost perfect. Intervals: {result.bootstrap} resamples of the "
                  f"queries (seed {result.seed}). Fewer than {MIN_PAIRS} pairs or {MIN_RUNS} "
                  "runs behind a statistic are flagged in the summary."))
    for j in result.judges:
        for stat, why in j.items.undefined.items():
            out.append(_p(f"{j.name}: {stat} undefined: {why}"))
    out.append("<div class='plots'>")
    for j in result.judges:
        heat = svg.confusion_heatmap(j.items.confusion, f"{j.name} vs reference")
        out.append(f'<figure><div class="fig">{heat}</div><figcaption>{html.escape(j.name)}: '
                   "grades against the reference's (rows: reference grade, columns: judge "
                   "grade; the diagonal is agreement).</figcaption></figure>")
        sy = j.systems
        if sy is not None:
            tau = "undefined" if sy.kendall_tau is None else f"{sy.kendall_tau:.3f}"
            dots = svg.agreement_scatter(sy.runs, sy.reference_scores, sy.judge_scores,
                                         sy.measure)
            out.append(f'<figure><div class="fig">{dots}</div><figcaption>'
                       f"{html.escape(j.name)}: system ranking, Kendall tau "
                       f"{tau} over {len(sy.runs)} runs, tau_AP "
                       f"{html.escape(format_value(sy.tau_ap, 3))}, largest rank change "
                       f"{sy.max_rank_change}.</figcaption></figure>")
    out.append("</div></section>")
    return "\n".join(out)


def _estimate_section(est: StoreEstimates | None, digits: int = 4) -> str:
    """Scores under human labels from the store's newest fully graded sample (PPI), if any."""
    from reljudge.infer.scores import estimate_table

    if est is None:
        return ""
    return "\n".join([
        '<section id="estimates"><h2>Scores under human labels (prediction-powered, from a '
        "human sample)</h2>", table(*estimate_table(est.rows + est.diffs, with_p=True,
                                                    digits=digits), digits),
        _p(f"{est.note()}. llm: the judge's labels alone (bootstrap interval, biased when "
           "the judge is); human: the sample alone; ppi: both, valid however bad the judge "
           "is."), *[_p(w, "warning") for w in est.warnings()], "</section>"])


def _clip(text: str | None, limit: int = 1200) -> str:
    if text is None:
        return "(no text in the store)"
    return text if len(text) <= limit else text[:limit] + " …"


def _grade(g: float) -> str:
    """A grade as people write it: 3, or 2.50 for an aggregate of several labels."""
    return str(int(g)) if float(g).is_integer() else f"{g:.2f}"


def _probes_section(probes: ProbeReport) -> str:
    """Can the judge be gamed? The store's probes: flip rates with intervals per judge and
    kind, and what each run could gain by the query-insert exploit."""
    from reljudge.probe.report import gains_table, kinds_table

    parts = ['<section id="probes"><h2>Can the judge be gamed?</h2>',
             _p("Probes (reljudge probe) of the judges in the store: known non-relevant "
                "passages altered so as to fool a judge (the query inserted, the rubric echoed, "
                "an instruction to the assessor), word salad as the control, and relevant "
                "passages padded. A flip is a pair graded 0 clean and at least 1 (2) probed, "
                "of the pairs graded 0 clean, with a Wilson 95 % interval; McNemar's exact p "
                "compares probed with clean. Probes are never part of any other number in "
                "this report. See the reljudge docs: Can the judge be gamed? (probes).")]
    parts += [_p(w, "warning") for w in probes.warnings]
    parts.append(table(*kinds_table(probes.kinds)))
    if probes.gains:
        parts.append(_p("What each run could gain by replacing its known non-relevant top "
                        "documents with their query-insert probes, the other runs unchanged "
                        "(the probes join the judged documents: read the ranks)."))
        parts.append(table(*gains_table(probes.gains)))
    parts.append("</section>")
    return "\n".join(parts)


def _conflicts_section(shown: Sequence[ConflictText], count: int) -> str:
    """The conflicts ``shown`` (the largest) of ``count``."""
    if not shown:
        return ""
    out = ['<section id="conflicts"><h2>Conflicts between people and the judge</h2>',
           f"<details><summary>{count} pair(s) whose human and LLM grades differ by 1 or "
           f"more{f', the {len(shown)} largest shown' if len(shown) < count else ''}"
           "</summary>"]
    for c in shown:
        out.append(
            f'<article class="conflict"><h3>{html.escape(c.qid)} / {html.escape(c.docid)}: '
            f"human {_grade(c.human)}, judge {_grade(c.llm)}</h3>"
            f"<p><b>Query:</b> {html.escape(_clip(c.query))}</p>"
            f"<p><b>Passage:</b> {html.escape(_clip(c.passage))}</p>"
            f"<p class='note'>human: {html.escape(', '.join(c.human_sources))}; judge: "
            f"{html.escape(', '.join(c.llm_sources))}</p>"
            f"<p><b>The judge's reasoning:</b></p><pre>{html.escape(_clip(c.reasoning(), 3000))}"
            "</pre></article>")
    out.append("</details>" + _p("The same rows: reljudge labels conflicts --with-text.")
               + "</section>")
    return "\n".join(out)


def _configuration_section(model: ReportModel) -> str:
    from reljudge.report.facts import cost_line

    out = ['<section id="configuration"><h2>Configuration</h2><dl class="config">']
    for j in model.judges:
        prompt = " ".join(x for x in (j.prompt, j.prompt_version and f"v{j.prompt_version}")
                          if x) or "not recorded"
        out.append(f"<dt>judge</dt><dd>{html.escape(j.model or 'model not recorded')} at "
                   f"{html.escape(j.endpoint_host or 'an endpoint not recorded')} "
                   f"({j.events} events; source <code>{html.escape(j.source)}</code>)</dd>"
                   f"<dt>prompt</dt><dd>{html.escape(prompt)}, hash "
                   f"<code>{html.escape(j.prompt_hash or 'not recorded')}</code></dd>")
    if model.store is not None and not model.judges:
        out.append("<dt>judge</dt><dd>no LLM labels in the store</dd>")
    for k, v in model.settings.facts.items():
        out.append(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>")
    if model.costs:
        out.append(f"<dt>cost</dt><dd>{html.escape(cost_line(model.costs))}</dd>")
    out.append("</dl>")
    files = model.files
    if files:
        out.append("<h3>Inputs</h3>")
        out.append(table(["role", "file", "sha256", "size (bytes)"],
                         [[f.role, f.path, f"ir_datasets {f.ir_datasets or '(not installed)'}",
                           "-"] if f.dataset is not None else
                          [f.role, _shown(f.path), (f.sha256 or "")[:12], f.size] for f in files]))
        out.append(_p("sha256: the first 12 hex digits of the SHA-256 of the file's bytes "
                      "(sha256sum FILE); an irds: input is the ir_datasets dataset of that "
                      "id, read with the ir_datasets version shown."))
    if model.store is not None:
        out.append(_store_tables(model.store))
    out.append("</section>")
    return "\n".join(out)


def _shown(path: str) -> str:
    """A path relative to the working folder when it lies inside it, else as given."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return path


def _store_tables(tables: StoreTables) -> str:
    sources = tables.sources
    out = ["<h3>Label sources</h3>",
           table(["kind", "source", "events", "ok", "failed",
                  *(f"grade {g}" if g == SCALE[0] else str(g) for g in SCALE),
                  "tokens in", "tokens out", "cost $ now"],
                 [[s.kind, s.name, s.events, s.ok, s.failed,
                   *[s.grades.get(g, 0) for g in SCALE], s.tokens_in, s.tokens_out, s.cost]
                  for s in sources]),
           _p(f"Failed judgments: {tables.failures} (never counted as grades). 'cost $ now' is "
              "what the calls were charged; answers from the answer cache cost nothing again "
              "(their value is in the cost line above).")]
    cov = tables.coverage
    out.append(f"<details><summary>Final labels per query ({len(cov)} queries)</summary>"
               + table(["query", "final labels"], [list(row) for row in cov])
               + "</details>")
    return "\n".join(out)
