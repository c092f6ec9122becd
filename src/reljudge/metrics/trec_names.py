"""trec_eval's words for measures, for those reljudge offers: its names (``map``, ``P_10``,
``iprec_at_recall_0.10``), its parameter syntax (``P.5,10``, ``iprec_at_recall..10,.20``,
``ndcg_cut.10,20``), its ``official`` set, how its summary line aggregates (counts summed,
``gm_*`` geometric means) and the layout of its output (``trec_eval -q``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reljudge.errors import MeasureError
from reljudge.metrics.kernels import GM_EPSILON
from reljudge.metrics.measures import SPECS, Measure, parse_measure

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LEVELS = tuple(i / 10 for i in range(11))

#: trec_eval's measures in the order it prints them (``-m all_trec``); a name reljudge does
#: not offer yet maps to None
ORDER: dict[str, tuple[str, tuple, str] | None] = {
    # name: (our measure, default parameters, summary: mean | sum | gmean | string)
    "runid": None, "num_q": None, "num_ret": ("NumRet", (), "sum"),
    "num_rel": ("NumRel", (), "sum"), "num_rel_ret": ("NumRelRet", (), "sum"),
    "map": ("AP", (), "mean"), "gm_map": ("AP", (), "gmean"), "Rprec": ("Rprec", (), "mean"),
    "bpref": ("Bpref", (), "mean"), "recip_rank": ("RR", (), "mean"),
    "iprec_at_recall": ("IPrec", _LEVELS, "mean"), "P": ("P", _CUTS, "mean"),
    "relstring": ("relstring", (), "string"), "recall": ("R", _CUTS, "mean"),
    "infAP": ("infAP", (), "mean"), "gm_bpref": ("Bpref", (), "gmean"),
    "Rprec_mult": ("RprecMult", tuple(i / 5 for i in range(1, 11)), "mean"),
    "utility": ("Utility", (), "mean"), "11pt_avg": ("IPrecAvg", (), "mean"),
    "binG": ("BinG", (), "mean"), "G": ("G", (), "mean"), "dcg": ("DCG", (), "mean"),
    "ideal_dcg": None, "ndcg": ("nDCG", (), "mean"), "ndcg_rel": ("nDCGRel", (), "mean"),
    "Rndcg": ("RnDCG", (), "mean"), "ndcg_cut": ("nDCG", _CUTS, "mean"),
    "map_cut": ("AP", _CUTS, "mean"), "relative_P": ("RelP", _CUTS, "mean"),
    "success": ("Success", (1, 5, 10), "mean"), "set_P": ("SetP", (), "mean"),
    "set_relative_P": ("SetRelP", (), "mean"), "set_recall": ("SetR", (), "mean"),
    "set_map": ("SetAP", (), "mean"), "set_F": ("SetF", (), "mean"),
    "num_nonrel_judged_ret": ("NumNonRelJudgedRet", (), "sum"),
    "rbp": ("RBP(p=0.9, graded=True)", (), "mean"),
    "rbp_resid": ("RBP(p=0.9, residual=True, tail=True)", (), "mean"),
    "unj": ("Unjudged", (5, 10, 20), "mean"),
}
_INDEX = {name: i for i, name in enumerate(ORDER)}  # printing order
#: trec_eval 10's -m all_trec: every measure above but dcg and ideal_dcg
ALL_TREC = tuple(name for name in ORDER if name not in ("dcg", "ideal_dcg"))
#: trec_eval's default measures (``-m official``, and no ``-m`` at all)
OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
            "bpref", "recip_rank", "iprec_at_recall", "P")
_FRACTIONS = ("iprec_at_recall", "Rprec_mult")  # printed with two decimals


@dataclass(frozen=True)
class TrecMeasure:
    """One line of trec_eval's output: its name, what computes it (None for ``runid`` and
    ``num_q``), and how the summary line aggregates it over queries."""

    name: str  # as trec_eval prints it, e.g. "P_10"
    measure: Measure | str | None  # str: a measure evaluated under this name (prefs_simp)
    summary: str  # mean | sum | gmean | count (num_q) | runid | string (relstring)
    order: tuple[int, float]  # trec_eval's printing order
    length: int = 0  # relstring: how many of each ranking's first documents

    @property
    def per_query(self) -> bool:
        """trec_eval prints it on each query's lines (not num_q, not the geometric means)."""
        return self.summary in ("mean", "sum", "string")

    @property
    def integer(self) -> bool:
        """Printed as a whole number (the counts, summed in the summary)."""
        return self.summary in ("sum", "count")

    def line(self, qid: str, value, z: bool = False) -> str:
        """The output line, in trec_eval's layout (``z``: as a z-score, trec_eval -Z)."""
        if self.summary == "string":
            return f"{self.name:<22}\t{qid}\t'{value}'"
        if z:
            return f"Z{self.name:<22}\t{qid}\t{value:6.4f}"
        shown = f"{int(value)}" if self.integer else f"{value:6.4f}"
        return f"{self.name:<22}\t{qid}\t{shown}"


def _printed(base: str, value: float) -> str:
    if base in _FRACTIONS:
        return f"{base}_{value:.2f}"
    return f"{base}_{int(value)}"


def _one(base: str, value: float | None, rel: int, num_docs: int = 0) -> TrecMeasure:
    spec = ORDER[base]
    index = _INDEX[base]
    if base in ("runid", "num_q"):
        return TrecMeasure(base, None, "runid" if base == "runid" else "count", (index, 0.0))
    if spec is None:
        raise MeasureError(f"trec_eval's {base} is not offered by reljudge yet")
    if base == "relstring":  # a string of each ranking's first grades, not a number
        length = 10 if value is None else int(value)
        return TrecMeasure(base if value is None else f"{base}_{length}", None, "string",
                           (index, 0.0), length)
    ours, _, summary = spec
    if "(" in ours:  # fixed parameters (trec_eval's rbp)
        return TrecMeasure(base, parse_measure(ours), summary, (index, 0.0))
    params = {"rel": rel} if rel != 1 and "rel" in SPECS[ours].params else {}
    if ours == "Utility" and num_docs:
        params["num_docs"] = num_docs
    text = ours + (f"({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")
    if value is None:
        return TrecMeasure(base, parse_measure(text), summary, (index, 0.0))
    cutoff = value if base in _FRACTIONS else int(value)
    return TrecMeasure(_printed(base, value), parse_measure(f"{text}@{cutoff}"), summary,
                       (index, float(value)))


#: measures whose parameters trec_eval prints as given (utility_2,-1,0,0, ndcg_1=3,2=9,
#: 11pt_avg_.25,.5): not cut-offs
_SPELLED = ("utility", "11pt_avg", "ndcg")


def _spelled(text: str) -> tuple[str, str] | None:
    """(base, parameters) of utility.A,B,C,D, ndcg.1=3,2=9, 11pt_avg..25,.5 (or of their
    printed names utility_A,B,C,D, ...); None for anything else."""
    for base in _SPELLED:
        for sep in (".", "_"):
            if text.startswith(base + sep) and len(text) > len(base) + 1:
                params = text[len(base) + 1:]
                if base == "ndcg" and "=" not in params:
                    return None
                return base, params
    return None


def _spelled_measure(base: str, params: str, rel: int, num_docs: int) -> TrecMeasure:
    index = (_INDEX[base], 0.0)
    if base == "utility":
        try:
            a, b, c, d = (float(v) for v in params.split(","))
        except ValueError:
            raise MeasureError(f"cannot read trec_eval measure utility.{params}: expected "
                               "four numbers, utility.A,B,C,D") from None
        text = f"Utility(rel={rel}, a={a}, b={b}, c={c}, d={d}, num_docs={num_docs})"
    elif base == "ndcg":
        text = f"nDCG(gains={params!r})"
    else:
        text = f"IPrecAvg(rel={rel}, levels={params!r})"
    return TrecMeasure(f"{base}_{params}", parse_measure(text), "mean", index)


_PRINTED = re.compile(r"^(?P<base>[A-Za-z_]+?)_(?P<value>\d+(?:\.\d+)?)$")


def trec_measures(texts: Sequence[str], rel: int = 1,
                  num_docs: int = 0) -> list[TrecMeasure] | None:
    """The measures of trec_eval ``-m`` arguments (``official``, ``map``, ``P.5,10``,
    ``P_10``, ``iprec_at_recall..10,.20``, ...), in trec_eval's printing order, each once (a
    measure given again with parameters takes those: ``-m all_trec -m relstring.20``);
    None when a text is not in trec_eval's words. ``rel``: trec_eval's ``-l``, the least
    grade that counts as relevant; ``num_docs``: its ``-N``, the documents in the collection
    (for ``utility``)."""
    out: dict[str, dict[str, TrecMeasure]] = {}  # by trec_eval measure, its lines
    for text in texts:
        text = text.strip()
        replace = False  # a measure given again with parameters takes those (trec_eval)
        bases: list[tuple[str, float | None]]
        if text in ("official", "all_trec"):
            bases = [(b, None) for b in (ALL_TREC if text == "all_trec" else OFFICIAL)]
        elif text in ORDER:
            bases = [(text, None)]
        elif (spelled := _spelled(text)) is not None:
            tm = _spelled_measure(*spelled, rel, num_docs)
            out[spelled[0]] = {tm.name: tm}
            continue
        elif "." in text and text.split(".", 1)[0] in ORDER:
            base, params = text.split(".", 1)
            try:
                values = sorted(float(v) for v in params.split(","))
            except ValueError:
                raise MeasureError(f"cannot read trec_eval measure {text!r}: expected "
                                   f"{base}.VALUE,VALUE,... (numbers)") from None
            bases, replace = [(base, v) for v in values], True
        elif (m := _PRINTED.match(text)) and (spec := ORDER.get(m["base"])) and \
                (spec[1] or m["base"] == "relstring"):
            bases = [(m["base"], float(m["value"]))]
        else:
            return None
        if replace:
            out[bases[0][0]] = {}
        for base, value in bases:
            group = out.setdefault(base, {})
            spec = ORDER.get(base)
            if value is None and spec and spec[1]:
                for v in spec[1]:  # a cut-off measure alone: its default cut-offs
                    tm = _one(base, v, rel, num_docs)
                    group.setdefault(tm.name, tm)
            else:
                tm = _one(base, value, rel, num_docs)
                group.setdefault(tm.name, tm)
    return sorted((tm for group in out.values() for tm in group.values()),
                  key=lambda tm: tm.order)


def trec_lines(measures: Sequence[TrecMeasure], run_id: str, query_ids: Sequence[str],
               columns: Sequence[np.ndarray], *, per_query: bool = False,
               summary: bool = True,
               zscores: Mapping[tuple[str, str], tuple[float, float]] | None = None
               ) -> list[str]:
    """trec_eval's output for one run: with ``per_query`` each query's lines (in query
    order), then the summary: each measure over all queries (counts summed, ``gm_*`` as
    trec_eval's geometric mean, the others' mean; ``runid`` the run's id, ``num_q`` the
    queries). ``columns``: the per-query values of each measure (anything for those two).
    ``zscores`` (trec_eval -Z): each value becomes its z-score against {(qid, measure): (mean,
    stddev)} before anything is summed (``MISSING_Z`` where none is known)."""
    z = zscores is not None
    if zscores is not None:
        columns = [_z(tm, query_ids, col, zscores) for tm, col in zip(measures, columns,
                                                                       strict=True)]
    lines: list[str] = []
    if per_query:
        for i, q in enumerate(query_ids):
            lines += [tm.line(q, col[i], z and tm.measure is not None)
                      for tm, col in zip(measures, columns, strict=True) if tm.per_query]
    if not summary:
        return lines
    n = len(query_ids)
    for tm, col in zip(measures, columns, strict=True):
        if tm.summary == "runid":
            lines.append(f"{'runid':<22}\tall\t{run_id}")
            continue
        if tm.summary == "string":  # trec_eval prints relstring per query only
            continue
        if tm.summary == "count":
            value = float(n)
        elif tm.summary == "sum":
            value = float(np.sum(col))
        elif tm.summary == "gmean":
            value = float(np.exp(summed_in_order(np.log(np.maximum(col, GM_EPSILON))) / n)
                          ) if n else 0.0
        else:
            value = summed_in_order(col) / n if n else 0.0
        lines.append(tm.line("all", value, z))
    return lines


def summed_in_order(col) -> float:
    """The sum of per-query values as trec_eval forms it: one double addition per query, in
    query order (its ``+=`` over queries sorted by id); numpy's pairwise sum can differ in
    the last bit, enough to print a half-way mean on the other side."""
    values = np.asarray(col, dtype=np.float64)
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def named_lines(texts: Sequence[str], names: Sequence[str], summed: Sequence[str],
                sets: Sequence[str]) -> list[TrecMeasure]:
    """Output lines of measures evaluated under trec_eval's own names (the preference and
    judgment-group measures), in the order given: ``runid`` and ``num_q`` first when asked
    for, by name or by one of the measure ``sets`` (``all_prefs``) among ``texts``;
    ``summed``: the counts, summed in the summary."""
    asked = {t.strip() for t in texts}
    out = [_one(base, None, 1) for base in ("runid", "num_q")
           if base in asked or asked & set(sets)]
    return out + [TrecMeasure(n, n, "sum" if n in summed else "mean", (len(ORDER) + i, 0.0))
                  for i, n in enumerate(names)]


MISSING_Z = -1000000.0  # trec_eval's MISSING_ZSCORE_VALUE


def _z(tm: TrecMeasure, query_ids: Sequence[str], col,
       zscores: Mapping[tuple[str, str], tuple[float, float]]):
    """One measure's per-query values as z-scores (trec_eval's convert_zscores)."""
    if tm.measure is None:
        return col
    out = np.empty(len(query_ids))
    for i, (q, v) in enumerate(zip(query_ids, np.asarray(col, dtype=np.float64).tolist(),
                                   strict=True)):
        mean, sd = zscores.get((q, tm.name), (None, None))
        if mean is None:
            out[i] = MISSING_Z
        elif sd:
            out[i] = (v - mean) / sd
        else:
            out[i] = 0.0 if v == mean else MISSING_Z
    return out


_SUMMED = ("NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet")


def as_trec(measures: Sequence[str | Measure], rel: int = 1,
            num_docs: int = 0) -> list[TrecMeasure]:
    """Measures in either syntax as trec_eval output lines: trec_eval's words keep its names
    and order; a measure in ir_measures syntax is printed under trec_eval's name when it has
    one (``P@10`` as ``P_10``), else under its own, after trec_eval's measures."""
    words = [t for t in measures if isinstance(t, str) and trec_measures([t]) is not None]
    out = {tm.name: tm for tm in trec_measures(words, rel, num_docs) or []}  # read together
    for i, text in enumerate(measures):
        if text in words:
            continue
        m = parse_measure(text)
        name = trec_name(m) or str(m)
        out.setdefault(name, TrecMeasure(name, m, "sum" if m.name in _SUMMED else "mean",
                                         _order(name, len(ORDER) + i)))
    return sorted(out.values(), key=lambda tm: tm.order)


def _order(name: str, fallback: int) -> tuple[int, float]:
    m = _PRINTED.match(name)
    base, value = (m["base"], float(m["value"])) if m else (name, 0.0)
    return (_INDEX[base], value) if base in ORDER else (fallback, 0.0)


def trec_name(m: Measure) -> str | None:
    """trec_eval's name of one of our measures, when it has one (default parameters only)."""
    for base, spec in ORDER.items():
        if spec is not None and "(" in spec[0] and str(parse_measure(spec[0])) == str(m):
            return base
        if spec is None or spec[0] != m.name or spec[2] == "gmean":
            continue
        if base == "ndcg" and m.cutoff is not None or base == "map_cut" and m.cutoff is None:
            continue
        if m.params or (m.cutoff is None) != (not spec[1]):
            continue
        return base if m.cutoff is None else _printed(base, m.cutoff)
    return None


def plain_measures(texts: Sequence[str | Measure], rel: int = 1,
                   num_docs: int = 0) -> list[str]:
    """Measures given in either syntax, as our measures (for the tables and JSON): trec_eval
    sets and parameter lists expanded; its summary-only lines (``runid``, ``num_q``, ``gm_*``)
    are refused, naming where they exist."""
    out: list[str] = []
    for text in texts:
        found = trec_measures([text], rel, num_docs) if isinstance(text, str) else None
        if found is None:
            out.append(str(parse_measure(text)))
            continue
        for tm in found:
            if tm.measure is None or tm.summary == "gmean":
                if isinstance(text, str) and text.strip() in ("official", "all_trec"):
                    continue  # the set's per-query measures
                if tm.summary == "string":
                    raise MeasureError(f"{tm.name} is text, not a number: it exists with "
                                       "--format trec --per-query")
                raise MeasureError(f"{tm.name} is a line of trec_eval's summary: it exists "
                                   "with --format trec (in Python: Evaluation.gmean())")
            out.append(str(tm.measure))
    return out  # a measure given twice is refused where they are evaluated


def read_measure(text: str | Measure) -> Measure:
    """One measure in either syntax: ir_measures' (``parse_measure``: ``nDCG@10``,
    ``P(rel=2)@5``, an ir_measures object) or trec_eval's name of one measure (``map``,
    ``P_10``, ``ndcg_cut_10``, ``iprec_at_recall_0.10``); unknown names raise MeasureError."""
    if isinstance(text, str):
        try:
            found = trec_measures([text])
        except MeasureError:
            found = None
        if found and len(found) == 1 and isinstance(found[0].measure, Measure) \
                and found[0].summary != "gmean":
            return found[0].measure
    return parse_measure(text)


def relstring_column(evaluation, length: int) -> list[str]:
    """``relstrings`` of an evaluation's rankings (kept in it: the run is not ranked again),
    aligned with its ``query_ids``."""
    return relstrings(evaluation.ranking, length)


def relstrings(r, length: int) -> list[str]:
    """trec_eval's relstring of each query: the grades of its first ``length`` documents, one
    character each ('0'-'9', '>' above 9, '-' absent from the qrels, '.' a negative grade)."""
    from reljudge.metrics.kernels import PAD, UNJUDGED

    out = []
    for row, n in zip(r.grades[:, :length].tolist(), r.length.tolist(), strict=True):
        out.append("".join(">" if g > 9 else str(g) if g >= 0 else "-" if g == UNJUDGED
                           else "." for g in row[:min(n, length)] if g != PAD))
    return out
