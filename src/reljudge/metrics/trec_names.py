"""trec_eval's words for measures, for those reljudge offers: its names (``map``, ``P_10``,
``iprec_at_recall_0.10``), its parameter syntax (``P.5,10``, ``iprec_at_recall..10,.20``,
``ndcg_cut.10,20``), its ``official`` set, how its summary line aggregates (counts summed,
``gm_*`` geometric means) and the layout of its output (``trec_eval -q``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
from numpy.typing import ArrayLike

from reljudge.errors import MeasureError
from reljudge.metrics.kernels import GM_EPSILON
from reljudge.metrics.measures import (
    SPECS,
    Measure,
    MeasureSpec,
    TrecName,
    from_specs,
    parse_measure,
)

if TYPE_CHECKING:
    from reljudge.metrics.kernels import Ranked

#: trec_eval 10's measures in the order it prints them (``-m all_trec``), whether reljudge
#: computes them or not; which of ours each one is, the specs say (``MeasureSpec.trec_eval``)
TREC_EVAL_NAMES = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel",
    "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj",
)
_INDEX = {name: i for i, name in enumerate(TREC_EVAL_NAMES)}


@dataclass(frozen=True)
class _Offered:
    """A trec_eval name that one of our measures computes."""

    #: our measure, with the parameters fixed under this name
    measure: str
    trec: TrecName
    #: None: relstring
    spec: MeasureSpec | None = None


def _read_offered() -> dict[str, _Offered]:
    """trec_eval's names that reljudge computes, read from the specs (and ``relstring``,
    text rather than a measure)."""
    out = {"relstring": _Offered("relstring", TrecName("relstring", summary="string"))}
    for spec in SPECS.values():
        for t in spec.trec_eval or ():
            out[t.name] = _Offered(spec.name + (f"({t.params})" if t.params else ""), t, spec)
    return out


_offered = from_specs(_read_offered)


#: trec_eval 10's -m all_trec: every measure above but dcg and ideal_dcg
ALL_TREC = tuple(name for name in TREC_EVAL_NAMES if name not in ("dcg", "ideal_dcg"))
#: trec_eval's default measures (``-m official``, and no ``-m`` at all)
OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
            "bpref", "recip_rank", "iprec_at_recall", "P")


@dataclass(frozen=True)
class TrecMeasure:
    """One line of trec_eval's output: its name, what computes it (None for ``runid`` and
    ``num_q``), and how the summary line aggregates it over queries."""

    #: as trec_eval prints it, e.g. "P_10"
    name: str
    #: str: a measure evaluated under this name (prefs_simp)
    measure: Measure | str | None
    #: mean | sum | gmean | count (num_q) | runid | string (relstring)
    summary: str
    #: trec_eval's printing order
    order: tuple[int, float]
    #: relstring: how many of each ranking's first documents
    length: int = 0

    @property
    def per_query(self) -> bool:
        """trec_eval prints it on each query's lines (not num_q, not the geometric means)."""
        return self.summary in ("mean", "sum", "string")

    @property
    def integer(self) -> bool:
        """Printed as a whole number (the counts, summed in the summary)."""
        return self.summary in ("sum", "count")

    def line(self, qid: str, value: Any, z: bool = False) -> str:
        """The output line, in trec_eval's layout (``z``: as a z-score, trec_eval -Z)."""
        if self.summary == "string":
            return f"{self.name:<22}\t{qid}\t'{value}'"
        if z:
            return f"Z{self.name:<22}\t{qid}\t{value:6.4f}"
        shown = f"{int(value)}" if self.integer else f"{value:6.4f}"
        return f"{self.name:<22}\t{qid}\t{shown}"


def _printed(offered: _Offered, value: float) -> str:
    """trec_eval's name of a measure at a cut-off: a recall level or a factor of R with two
    decimals (iprec_at_recall_0.10, Rprec_mult_0.20), a rank as a whole number (P_10)."""
    if _fraction(offered):
        return f"{offered.trec.name}_{value:.2f}"
    return f"{offered.trec.name}_{int(value)}"


def _fraction(offered: _Offered) -> bool:
    """Whether its cut-off is a recall level or a factor of R, not a rank."""
    return offered.spec is not None and offered.spec.cutoff in ("recall", "factor")


def _one(base: str, value: float | None, rel: int, num_docs: int = 0) -> TrecMeasure:
    """The line of trec_eval's ``base`` (at cut-off ``value``)."""
    index = _INDEX[base]
    if base in ("runid", "num_q"):
        return TrecMeasure(base, None, "runid" if base == "runid" else "count", (index, 0.0))
    found = _offered().get(base)
    if found is None:
        raise MeasureError(f"trec_eval's {base} is not offered by reljudge yet")
    # relstring: each ranking's first grades as text, not a number
    if found.spec is None:
        length = 10 if value is None else int(value)
        return TrecMeasure(base if value is None else f"{base}_{length}", None, "string",
                           (index, 0.0), length)
    summary = found.trec.summary
    if found.trec.params:
        return TrecMeasure(base, parse_measure(found.measure), summary, (index, 0.0))
    params: dict[str, int] = {"rel": rel} if rel != 1 and "rel" in found.spec.params else {}
    if num_docs and "num_docs" in found.spec.params:
        params["num_docs"] = num_docs
    text = found.measure + (f"({', '.join(f'{k}={v}' for k, v in params.items())})"
                            if params else "")
    if value is None:
        return TrecMeasure(base, parse_measure(text), summary, (index, 0.0))
    cutoff = value if _fraction(found) else int(value)
    return TrecMeasure(_printed(found, value), parse_measure(f"{text}@{cutoff}"), summary,
                       (index, float(value)))


def _spelled(text: str, rel: int, num_docs: int, offered: dict[str, _Offered]
             ) -> tuple[str, TrecMeasure] | None:
    """(trec_eval name, line) of a measure whose parameters trec_eval prints as given (utility.A,B,C,D,
    ndcg.1=3,2=9, 11pt_avg..25,.5, or their printed names utility_A,B,C,D, ...: not
    cut-offs; ``TrecName.spelled``); None for anything else."""
    for base, found in offered.items():
        if found.trec.spelled is None:
            continue
        for sep in (".", "_"):
            if text.startswith(base + sep) and len(text) > len(base) + 1:
                params = text[len(base) + 1:]
                ours = found.trec.spelled(params, rel, num_docs)
                if ours is None:
                    return None
                return base, TrecMeasure(f"{base}_{params}", parse_measure(ours),
                                         found.trec.summary, (_INDEX[base], 0.0))
    return None


_PRINTED = re.compile(r"^(?P<base>[A-Za-z_]+?)_(?P<value>\d+(?:\.\d+)?)$")


def trec_measures(texts: Sequence[str], rel: int = 1,
                  num_docs: int = 0) -> list[TrecMeasure] | None:
    """The measures of trec_eval ``-m`` arguments (``official``, ``map``, ``P.5,10``,
    ``P_10``, ``iprec_at_recall..10,.20``, ...), in trec_eval's printing order, each once (a
    measure given again with parameters takes those: ``-m all_trec -m relstring.20``);
    None when a text is not in trec_eval's words. ``rel``: trec_eval's ``-l``, the least
    grade that counts as relevant; ``num_docs``: its ``-N``, the documents in the collection
    (for ``utility``)."""
    out: dict[str, dict[str, TrecMeasure]] = {}
    offered = _offered()
    for text in texts:
        text = text.strip()
        # a measure given again with parameters takes those (trec_eval)
        replace = False
        bases: list[tuple[str, float | None]]
        if text in ("official", "all_trec"):
            bases = [(b, None) for b in (ALL_TREC if text == "all_trec" else OFFICIAL)]
        elif text in _INDEX:
            bases = [(text, None)]
        elif (spelled := _spelled(text, rel, num_docs, offered)) is not None:
            out[spelled[0]] = {spelled[1].name: spelled[1]}
            continue
        elif "." in text and text.split(".", 1)[0] in _INDEX:
            base, params = text.split(".", 1)
            try:
                values = sorted(float(v) for v in params.split(","))
            except ValueError:
                raise MeasureError(f"cannot read trec_eval measure {text!r}: expected "
                                   f"{base}.VALUE,VALUE,... (numbers)") from None
            bases, replace = [(base, v) for v in values], True
        elif (m := _PRINTED.match(text)) and (found := offered.get(m["base"])) and \
                (found.trec.cutoffs or m["base"] == "relstring"):
            bases = [(m["base"], float(m["value"]))]
        else:
            return None
        if replace:
            out[bases[0][0]] = {}
        for base, value in bases:
            group = out.setdefault(base, {})
            cutoffs = offered[base].trec.cutoffs if base in offered else ()
            if value is None and cutoffs:
                # a cut-off measure alone: its default cut-offs
                for v in cutoffs:
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
        # trec_eval prints relstring per query only
        if tm.summary == "string":
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


def summed_in_order(col: ArrayLike) -> float:
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
    return out + [TrecMeasure(n, n, "sum" if n in summed else "mean", (len(TREC_EVAL_NAMES) + i, 0.0))
                  for i, n in enumerate(names)]


#: trec_eval's MISSING_ZSCORE_VALUE
MISSING_Z = -1000000.0


def _z(tm: TrecMeasure, query_ids: Sequence[str], col: np.ndarray,
       zscores: Mapping[tuple[str, str], tuple[float, float]]) -> np.ndarray:
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


def as_trec(measures: Sequence[str | Measure], rel: int = 1,
            num_docs: int = 0) -> list[TrecMeasure]:
    """Measures in either syntax as trec_eval output lines: trec_eval's words keep its names
    and order; a measure in ir_measures syntax is printed under trec_eval's name when it has
    one (``P@10`` as ``P_10``), else under its own, after trec_eval's measures."""
    words = [t for t in measures if isinstance(t, str) and trec_measures([t]) is not None]
    out = {tm.name: tm for tm in trec_measures(words, rel, num_docs) or []}
    for i, text in enumerate(measures):
        if text in words:
            continue
        m = parse_measure(text)
        name = trec_name(m) or str(m)
        out.setdefault(name, TrecMeasure(name, m, "sum" if _summed(m) else "mean",
                                         _order(name, len(TREC_EVAL_NAMES) + i)))
    return sorted(out.values(), key=lambda tm: tm.order)


def _order(name: str, fallback: int) -> tuple[int, float]:
    m = _PRINTED.match(name)
    base, value = (m["base"], float(m["value"])) if m else (name, 0.0)
    return (_INDEX[base], value) if base in _INDEX else (fallback, 0.0)


def _summed(m: Measure) -> bool:
    """Whether trec_eval's summary line sums the measure over queries (the counts)."""
    return any(t.summary == "sum" for t in SPECS[m.name].trec_eval or ())


def trec_name(m: Measure) -> str | None:
    """trec_eval's name of one of our measures, when it has one (default parameters only)."""
    for base, found in _offered().items():
        if found.spec is None or found.trec.summary == "gmean":
            continue
        if found.trec.params:
            if str(parse_measure(found.measure)) == str(m):
                return base
            continue
        if found.spec.name != m.name or m.params:
            continue
        if (m.cutoff is None) != (not found.trec.cutoffs):
            continue
        return base if m.cutoff is None else _printed(found, m.cutoff)
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
                    continue
                if tm.summary == "string":
                    raise MeasureError(f"{tm.name} is text, not a number: it exists with "
                                       "--format trec --per-query")
                raise MeasureError(f"{tm.name} is a line of trec_eval's summary: it exists "
                                   "with --format trec (in Python: Evaluation.gmean())")
            out.append(str(tm.measure))
    # a measure given twice is refused where they are evaluated
    return out


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


class HasRanking(Protocol):
    """What ``relstring_column`` reads of an ``evaluate.Evaluation`` (not imported here: that
    module imports this one)."""

    @property
    def ranking(self) -> Ranked | None: ...


def relstring_column(evaluation: HasRanking, length: int) -> list[str]:
    """``relstrings`` of an evaluation's rankings (kept in it: the run is not ranked again),
    aligned with its ``query_ids``."""
    # evaluate keeps it
    return relstrings(cast("Ranked", evaluation.ranking), length)


def relstrings(r: Ranked, length: int) -> list[str]:
    """trec_eval's relstring of each query: the grades of its first ``length`` documents, one
    character each ('0'-'9', '>' above 9, '-' absent from the qrels, '.' a negative grade)."""
    from reljudge.metrics.kernels import PAD, UNJUDGED

    out = []
    for row, n in zip(r.grades[:, :length].tolist(), r.length.tolist(), strict=True):
        out.append("".join(">" if g > 9 else str(g) if g >= 0 else "-" if g == UNJUDGED
                           else "." for g in row[:min(n, length)] if g != PAD))
    return out
