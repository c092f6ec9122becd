"""Measures as data: a name, typed parameters with defaults, and an optional cutoff.

Parsed from the strings IR people already write (ir_measures syntax): ``nDCG@10``,
``nDCG(dcg='exp-log2')@10``, ``P(rel=2)@5``, ``RR``, ``AP@100``, ``Judged@10``, ``Bpref``,
``IPrec@0.1``, ``RBP(p=0.8)``, and our extensions ``nDCG(ideal='run')@10`` and
``RBP(residual=True)``.

``SPECS`` is the one place a measure is described: its parameters, its cutoff, the kernel that
computes it (from ``kernels`` and ``gain_kernels``, where the math is), the range of its values
and its names in trec_eval. Parsing, computing, range checks and trec_eval's names and output
all read it; adding a measure is adding one ``MeasureSpec`` to it.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from reljudge.choices import Compat
from reljudge.errors import MeasureError
from reljudge.metrics.gain_kernels import (
    binary_g,
    dcg_at,
    err,
    gain_g,
    level_gains,
    ndcg,
    ndcg_rel,
    r_ndcg,
    rbp,
)
from reljudge.metrics.kernels import (
    ELEVEN_LEVELS,
    Ranked,
    average_precision,
    bpref,
    inf_ap,
    interpolated_precision,
    iprec_average,
    judged_share,
    num_nonrel_judged_ret,
    num_rel,
    num_rel_ret,
    precision,
    r_precision,
    recall,
    recall_levels,
    reciprocal_rank,
    relative_precision,
    rprec_mult,
    set_f,
    set_measures,
    set_relative,
    success,
    unjudged_share,
    utility,
)

T = TypeVar("T")
#: per-query values of a measure: (the measure with its parameters, the rankings, compat)
Kernel = Callable[["Measure", Ranked, Compat], np.ndarray]


@dataclass(frozen=True)
class TrecName:
    """One of trec_eval's names for a measure and how trec_eval prints it."""

    #: as trec_eval spells it, e.g. "ndcg_cut"; one of trec_names.TREC_EVAL_NAMES
    name: str
    #: its cut-offs when named alone (P: P_5 ... P_1000)
    cutoffs: tuple[float, ...] = ()
    #: its summary line: mean | sum (the counts) | gmean (gm_map)
    summary: str = "mean"
    #: parameters fixed under this name, e.g. "p=0.9, graded=True"
    params: str = ""
    #: its NAME.PARAMS form (utility.1,-1,0,0) as our measure's text, given trec_eval's -l
    #: and -N; None when the text is not of that form
    spelled: Callable[[str, int, int], str | None] | None = None


@dataclass(frozen=True)
class MeasureSpec:
    """Everything about one measure: its parameters with defaults, whether a cutoff is
    required, the kernel computing it, the range of its values and its trec_eval names."""

    name: str
    doc: str
    params: dict[str, Any] = field(default_factory=dict)
    choices: dict[str, tuple] = field(default_factory=dict)
    #: optional | required | none | recall (in [0, 1]) | factor (> 0)
    cutoff: str = "optional"
    #: every value lies in it, whatever the parameters
    bounds: tuple[float, float] = (0.0, 1.0)
    #: other spellings parse_measure reads (lower case)
    aliases: tuple[str, ...] = ()
    kernel: Kernel = field(kw_only=True)
    #: trec_eval's names for it (None: trec_eval has no such measure)
    trec_eval: tuple[TrecName, ...] | None = field(kw_only=True)


def trec(*names: str | TrecName) -> tuple[TrecName, ...]:
    """A spec's trec_eval names: a bare name is a measure without cut-offs, summed by mean."""
    return tuple(TrecName(n) if isinstance(n, str) else n for n in names)


def _at_k(kernel: Callable[[Ranked, int | None, int], np.ndarray]) -> Kernel:
    """The kernel of a measure computed from (rankings, rank cutoff, rel)."""
    return lambda m, r, compat: kernel(r, m.rank_cutoff(), m.param("rel"))


def _whole(kernel: Callable[[Ranked, int], np.ndarray]) -> Kernel:
    """The kernel of a measure computed from (rankings, rel) over the whole ranking."""
    return lambda m, r, compat: kernel(r, m.param("rel"))


def _iprec(m: Measure, r: Ranked, compat: Compat) -> np.ndarray:
    """IPrec@level, kept in the rankings' memo (IPrecAvg reads the same levels)."""
    rel, level = m.param("rel"), m.level()
    return r.memo(("iprec", level, rel, compat),
                  lambda: interpolated_precision(r, level, rel, compat))


def _gains_spelled(params: str, rel: int, num_docs: int) -> str | None:
    """trec_eval's ndcg.1=3,2=9 as nDCG's text (ndcg.10 is a cut-off, not gains)."""
    return f"nDCG(gains={params!r})" if "=" in params else None


def _levels_spelled(params: str, rel: int, num_docs: int) -> str:
    """trec_eval's 11pt_avg..25,.5 as IPrecAvg's text."""
    return f"IPrecAvg(rel={rel}, levels={params!r})"


def _utility_spelled(params: str, rel: int, num_docs: int) -> str:
    """trec_eval's utility.A,B,C,D as Utility's text."""
    try:
        a, b, c, d = (float(v) for v in params.split(","))
    except ValueError:
        raise MeasureError(f"cannot read trec_eval measure utility.{params}: expected "
                           "four numbers, utility.A,B,C,D") from None
    return f"Utility(rel={rel}, a={a}, b={b}, c={c}, d={d}, num_docs={num_docs})"


#: str params read further
_STRING_FORMS = {"gains": level_gains, "levels": recall_levels}
#: the bounds of DCG and the counting measures
COUNT = (0.0, math.inf)
#: trec_eval's cut-offs of P, recall, ndcg_cut
CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_REL = {"rel": 1}
_CONDENSED = {"rel": 1, "judged_only": False}
_JUDGED_ONLY = ("judged_only=True ranks only judged documents (condensed list, Sakai 2007; "
                "trec_eval -J): documents absent from the qrels or with a negative grade are "
                "removed and those below move up.")
SPECS: dict[str, MeasureSpec] = {s.name: s for s in [
    MeasureSpec("nDCG", "Normalised DCG (Jarvelin & Kekalainen 2002). Gain is the raw grade "
                "(dcg='log2', trec_eval) or 2^grade-1 (dcg='exp-log2', Burges et al.); the ideal "
                "ranking comes from all judged documents (ideal='qrels', trec_eval) or from the "
                "run's own top k (ideal='run'). Ignores `rel`. Without a cutoff, trec_eval's "
                "ndcg (the whole ranking). gains='1=3,2=9' gives grades gains of their own "
                "(trec_eval's ndcg.1=3,2=9; other grades keep theirs). " + _JUDGED_ONLY,
                {"dcg": "log2", "judged_only": False, "ideal": "qrels", "gains": ""},
                {"dcg": ("log2", "exp-log2"), "ideal": ("qrels", "run")},
                aliases=("ndcg", "ndcg_cut"),
                kernel=lambda m, r, compat: ndcg(r, m.rank_cutoff(), m.param("dcg"),
                                                 m.param("ideal"), m.param("gains")),
                trec_eval=trec(TrecName("ndcg", spelled=_gains_spelled),
                               TrecName("ndcg_cut", CUTS))),
    MeasureSpec("DCG", "Discounted cumulative gain, discount 1/log2(rank+1). " + _JUDGED_ONLY,
                {"dcg": "log2", "judged_only": False}, {"dcg": ("log2", "exp-log2")}, bounds=COUNT,
                aliases=("dcg",),
                kernel=lambda m, r, compat: dcg_at(r, False, m.rank_cutoff(), m.param("dcg")),
                trec_eval=trec("dcg")),
    MeasureSpec("P", "Precision: relevant (grade >= rel) in the top k, divided by k. "
                + _JUDGED_ONLY, dict(_CONDENSED), cutoff="required", aliases=("p", "precision"),
                kernel=_at_k(precision), trec_eval=trec(TrecName("P", CUTS))),
    MeasureSpec("R", "Recall: relevant in the top k, divided by all relevant in the qrels. "
                + _JUDGED_ONLY, dict(_CONDENSED), aliases=("r", "recall"), kernel=_at_k(recall),
                trec_eval=trec(TrecName("recall", CUTS))),
    MeasureSpec("RR", "Reciprocal rank of the first relevant document (0 when none). "
                + _JUDGED_ONLY, dict(_CONDENSED), aliases=("rr", "mrr", "recip_rank"),
                kernel=_at_k(reciprocal_rank), trec_eval=trec("recip_rank")),
    MeasureSpec("AP", "Average precision; with a cutoff, trec_eval's map_cut (still divided "
                "by all relevant documents). " + _JUDGED_ONLY, dict(_CONDENSED),
                aliases=("ap", "map"), kernel=_at_k(average_precision),
                trec_eval=trec("map", TrecName("gm_map", summary="gmean"),
                               TrecName("map_cut", CUTS))),
    MeasureSpec("Success", "1 when a relevant document is in the top k, else 0.",
                dict(_REL), cutoff="required", aliases=("success",), kernel=_at_k(success),
                trec_eval=trec(TrecName("success", (1, 5, 10)))),
    MeasureSpec("ERR", "Expected reciprocal rank (Chapelle et al. 2009), stop probability "
                "(2^grade-1)/2^max_grade; max_grade=4 as gdeval/ir_measures.",
                {"max_grade": 4}, aliases=("err",),
                kernel=lambda m, r, compat: err(r, m.rank_cutoff(), m.param("max_grade")),
                trec_eval=None),
    MeasureSpec("Judged", "Share of the top k that is judged (divided by min(k, retrieved)), "
                "as ir_measures.", {}, aliases=("judged",),
                kernel=lambda m, r, compat: judged_share(r, m.rank_cutoff()), trec_eval=None),
    MeasureSpec("NumRel", "Number of relevant documents (grade >= rel) in the qrels.",
                dict(_REL), cutoff="none", bounds=COUNT, aliases=("numrel", "num_rel"),
                kernel=lambda m, r, compat: num_rel(r, m.param("rel")).astype(np.float64),
                trec_eval=trec(TrecName("num_rel", summary="sum"))),
    MeasureSpec("NumRet", "Number of documents the run returned.", {}, cutoff="none",
                bounds=COUNT, aliases=("numret", "num_ret"),
                kernel=lambda m, r, compat: r.length.astype(np.float64),
                trec_eval=trec(TrecName("num_ret", summary="sum"))),
    MeasureSpec("NumRelRet", "Number of relevant documents retrieved (in the top k).",
                dict(_REL), bounds=COUNT, aliases=("numrelret", "num_rel_ret"),
                kernel=_at_k(num_rel_ret), trec_eval=trec(TrecName("num_rel_ret", summary="sum"))),
    MeasureSpec("Rprec", "Precision at rank R, R the number of relevant documents in the "
                "qrels (0 when R is 0); ranks past the run's end count as not relevant.",
                dict(_REL), cutoff="none", aliases=("rprec",), kernel=_whole(r_precision),
                trec_eval=trec("Rprec")),
    MeasureSpec("Bpref", "Binary preference (Buckley & Voorhees 2004), trec_eval's bpref: for "
                "each retrieved relevant document, 1 - min(n, R) / min(N, R), n the judged "
                "non-relevant (0 <= grade < rel) ranked above it, R and N the relevant and "
                "judged non-relevant documents in the qrels; summed and divided by R. "
                "Unjudged documents and negative grades are skipped.",
                dict(_REL), cutoff="none", aliases=("bpref",), kernel=_whole(bpref),
                trec_eval=trec("bpref", TrecName("gm_bpref", summary="gmean"))),
    MeasureSpec("infAP", "Inferred AP (Yilmaz & Aslam 2006), trec_eval's infAP: documents "
                "absent from the qrels are not in the pool (counted as not relevant), a "
                "negative grade marks a pooled but unjudged document (its relevance is "
                "estimated from the judged ones above it, epsilon 0.00001).",
                dict(_REL), cutoff="none", aliases=("infap",), kernel=_whole(inf_ap),
                trec_eval=trec("infAP")),
    MeasureSpec("IPrec", "Interpolated precision at recall r (IPrec@0.1): the highest "
                "precision at any rank whose recall reaches r: at or after the c-th relevant "
                "document, c = lround(r x R) as trec_eval 10 (int(r x R + 0.9) under "
                "compat='trec_eval-9').",
                dict(_REL), cutoff="recall", aliases=("iprec",), kernel=_iprec,
                trec_eval=trec(TrecName("iprec_at_recall", ELEVEN_LEVELS))),
    MeasureSpec("IPrecAvg", "trec_eval's 11pt_avg: the mean of IPrec at recall 0.0, 0.1, ..., "
                "1.0, or at levels='0.25,0.5' (trec_eval's 11pt_avg..25,.5).",
                {"rel": 1, "levels": ""}, cutoff="none",
                kernel=lambda m, r, compat: iprec_average(
                    r, recall_levels(m.param("levels")) if m.param("levels") else ELEVEN_LEVELS,
                    m.param("rel"), compat),
                trec_eval=trec(TrecName("11pt_avg", spelled=_levels_spelled))),
    MeasureSpec("RprecMult", "trec_eval's Rprec_mult (RprecMult@0.5): precision at rank "
                "int(x R + 0.9), R the relevant documents in the qrels.", dict(_REL),
                cutoff="factor",
                kernel=lambda m, r, compat: rprec_mult(r, m.level(), m.param("rel")),
                trec_eval=trec(TrecName("Rprec_mult", tuple(i / 5 for i in range(1, 11))))),
    MeasureSpec("RelP", "trec_eval's relative_P: relevant in the top k over min(k, R), the "
                "most there could be (0 when R is 0).", dict(_REL), cutoff="required",
                kernel=lambda m, r, compat: relative_precision(r, m.required_rank_cutoff(),
                                                               m.param("rel")),
                trec_eval=trec(TrecName("relative_P", CUTS))),
    MeasureSpec("Unjudged", "trec_eval's unj: documents of the top k absent from the qrels or "
                "graded negative, over k (ranks past the run's end count as judged).", {},
                cutoff="required",
                kernel=lambda m, r, compat: unjudged_share(r, m.required_rank_cutoff()),
                trec_eval=trec(TrecName("unj", (5, 10, 20)))),
    MeasureSpec("NumNonRelJudgedRet", "Retrieved documents judged not relevant "
                "(0 <= grade < rel).", dict(_REL), cutoff="none",
                bounds=COUNT, kernel=_whole(num_nonrel_judged_ret),
                trec_eval=trec(TrecName("num_nonrel_judged_ret", summary="sum"))),
    MeasureSpec("Utility", "trec_eval's linear utility: a x relevant retrieved + b x "
                "non-relevant retrieved + c x relevant missed + d x non-relevant missed, "
                "num_docs the documents in the collection (trec_eval -N).",
                {"rel": 1, "a": 1.0, "b": -1.0, "c": 0.0, "d": 0.0, "num_docs": 0},
                cutoff="none", bounds=(-math.inf, math.inf),
                kernel=lambda m, r, compat: utility(r, m.param("rel"),
                                                    tuple(m.param(x) for x in "abcd"),
                                                    m.param("num_docs")),
                trec_eval=trec(TrecName("utility", spelled=_utility_spelled))),
    MeasureSpec("SetP", "Precision of the whole retrieved set: relevant retrieved / retrieved.",
                dict(_REL), cutoff="none", aliases=("setp", "set_p"),
                kernel=lambda m, r, compat: set_measures(r, m.param("rel"))[0],
                trec_eval=trec("set_P")),
    MeasureSpec("SetR", "Recall of the whole retrieved set: relevant retrieved / relevant.",
                dict(_REL), cutoff="none", aliases=("setr", "set_recall"),
                kernel=lambda m, r, compat: set_measures(r, m.param("rel"))[1],
                trec_eval=trec("set_recall")),
    MeasureSpec("SetRelP", "trec_eval's set_relative_P: relevant retrieved over "
                "min(retrieved, R) (0 when either is 0).", dict(_REL), cutoff="none",
                kernel=lambda m, r, compat: set_relative(r, m.param("rel"))[0],
                trec_eval=trec("set_relative_P")),
    MeasureSpec("SetAP", "trec_eval's set_map: relevant retrieved squared over retrieved x R "
                "(SetP x SetR; 0 when either is 0).", dict(_REL), cutoff="none",
                kernel=lambda m, r, compat: set_relative(r, m.param("rel"))[1],
                trec_eval=trec("set_map")),
    MeasureSpec("SetF", "F-measure of SetP and SetR: (1+beta^2) P R / (beta^2 P + R), 0 when "
                "both are 0.", {"rel": 1, "beta": 1.0}, cutoff="none", aliases=("setf", "set_f"),
                kernel=lambda m, r, compat: set_f(r, m.param("rel"), m.param("beta")),
                trec_eval=trec("set_F")),
    MeasureSpec("RBP", "Rank-biased precision (Moffat & Zobel 2008): (1-p) x the sum of "
                "p^(rank-1) over relevant documents (grade >= rel) in the top k (the whole "
                "ranking without a cutoff); unjudged documents count as not relevant, so this "
                "is the lower bound. residual=True gives instead the residual: how much the "
                "score could still rise if every unjudged document of the run (absent from the "
                "qrels or with a negative grade) in the top k were relevant. Ranks past the "
                "run's end are not counted (Moffat & Zobel add p^depth for them) unless "
                "tail=True (then only when some rank is unjudged, as trec_eval 10's "
                "rbp_resid). graded=True weighs each rank by grade / the query's top grade in "
                "the qrels (when above 1), as trec_eval 10's rbp; it ignores rel.",
                {"p": 0.8, "rel": 1, "residual": False, "graded": False, "tail": False},
                aliases=("rbp",),
                kernel=lambda m, r, compat: rbp(r, m.rank_cutoff(), m.param("p"), m.param("rel"),
                                                m.param("residual"), m.param("graded"),
                                                m.param("tail")),
                trec_eval=trec(TrecName("rbp", params="p=0.9, graded=True"),
                               TrecName("rbp_resid", params="p=0.9, residual=True, tail=True"))),
    MeasureSpec("G", "trec_eval's G: the sum over retrieved documents of gain / log2(2 + "
                "cost - gained), cost the ideal gains so far (each at least 1), gained the "
                "run's gains so far, over the sum of the ideal gains; gain = grade.", {},
                cutoff="none", kernel=lambda m, r, compat: gain_g(r), trec_eval=trec("G")),
    MeasureSpec("nDCGRel", "trec_eval's ndcg_rel: DCG / ideal DCG at each retrieved document "
                "with a gain, and the final ratio for each relevant one not retrieved, "
                "averaged over the documents with a gain in the qrels.", {}, cutoff="none",
                kernel=lambda m, r, compat: ndcg_rel(r), trec_eval=trec("ndcg_rel")),
    MeasureSpec("RnDCG", "trec_eval's Rndcg: DCG / ideal DCG averaged over the ranks where the "
                "ideal gain drops (and the run's end when it runs more than one rank past the "
                "ideal ones); 0 when no document is relevant (grade >= rel).", dict(_REL),
                cutoff="none", kernel=_whole(r_ndcg), trec_eval=trec("Rndcg")),
    MeasureSpec("BinG", "trec_eval's binG: the sum over retrieved relevant documents of "
                "1 / log2(2 + n), n the non-relevant documents above it, divided by R.",
                dict(_REL), cutoff="none", kernel=_whole(binary_g), trec_eval=trec("binG")),
]}

_SYNTAX = re.compile(r"^\s*(?P<name>[A-Za-z_]+)\s*(?:\((?P<params>.*)\))?\s*"
                     r"(?:@\s*(?P<cutoff>[^\s]+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """One measure with its parameters fixed, e.g. ``nDCG(dcg='exp-log2')@10``."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    #: a rank; for IPrec, a recall level
    cutoff: int | float | None = None

    def param(self, key: str) -> Any:
        """A parameter's value, falling back to the measure's default."""
        return dict(self.params).get(key, SPECS[self.name].params.get(key))

    def rank_cutoff(self) -> int | None:
        """The cutoff as a rank, None for the whole ranking (``parse_measure`` gives every
        measure but IPrec and RprecMult an integer cutoff or none)."""
        return None if self.cutoff is None else int(self.cutoff)

    def required_rank_cutoff(self) -> int:
        """The rank cutoff of a measure that requires one (a MeasureError without)."""
        k = self.rank_cutoff()
        if k is None:
            raise MeasureError(f"{self.name} needs a cutoff, e.g. {self.name}@10")
        return k

    def level(self) -> float:
        """The cutoff of IPrec (a recall level) or RprecMult (a factor of R)."""
        if self.cutoff is None:
            raise MeasureError(f"{self.name} needs a cutoff, e.g. {self.name}@0.5")
        return float(self.cutoff)

    def __str__(self) -> str:
        """The canonical name: non-default parameters only, in the spec's order."""
        spec = SPECS[self.name]
        given = dict(self.params)
        shown = [f"{k}={given[k]!r}" for k in spec.params if k in given and
                 given[k] != spec.params[k]]
        text = self.name + (f"({','.join(shown)})" if shown else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")


def from_specs(build: Callable[[], T]) -> Callable[[], T]:
    """``build`` (a table read from ``SPECS``) as a function that builds it again only when
    ``SPECS`` has changed: a spec added, replaced or removed."""
    seen: list[tuple[tuple[MeasureSpec, ...], T]] = []

    def current() -> T:
        specs = tuple(SPECS.values())
        # equal specs (the same ones): the same table
        if not seen or seen[0][0] != specs:
            seen[:] = [(specs, build())]
        return seen[0][1]
    return current


#: every spelling of a measure's name in ``MeasureSpec.aliases``, to the measure's name
_spellings = from_specs(lambda: {a: spec.name for spec in SPECS.values() for a in spec.aliases})


def _canonical(name: str) -> str:
    """The measure a name or one of its spellings (``MeasureSpec.aliases``) stands for."""
    return _spellings().get(name.lower(), name)


def _parse_params(text: str, original: str) -> dict[str, Any]:
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        raise MeasureError(f"cannot parse the parameters of {original!r}: expected "
                           "name=value pairs, e.g. P(rel=2)@10") from None
    if not isinstance(call, ast.Call) or call.args:
        raise MeasureError(f"parameters of {original!r} must be name=value pairs")
    out = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise MeasureError(f"parameters of {original!r} must be name=value pairs")
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            raise MeasureError(f"parameter {kw.arg} of {original!r} must be a literal "
                               "(a number, True/False or a quoted string)") from None
    return out


def parse_measure(text: str | Measure) -> Measure:
    """Parse ir_measures syntax (or an ir_measures measure object) into a Measure; unknown
    names or values raise MeasureError. ``reljudge.metrics.parse_measure`` also reads
    trec_eval's names (``trec_names.read_measure``)."""
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        if not type(text).__module__.startswith("ir_measures"):
            raise MeasureError(f"expected a measure as text, e.g. 'nDCG@10', found "
                               f"{type(text).__name__} {text!r}")
        # ir_measures objects print in the syntax parsed here
        text = str(text)
    m = _SYNTAX.match(text)
    if not m:
        raise MeasureError(f"cannot parse measure {text!r}: expected NAME, NAME@K or "
                           "NAME(param=value)@K, e.g. nDCG@10 or P(rel=2)@5 (or trec_eval's "
                           "words, e.g. map, P_10, ndcg_cut.10)")
    name = _canonical(m["name"])
    if name not in SPECS:
        raise MeasureError(f"unknown measure {m['name']!r} in {text!r}; known: "
                           f"{', '.join(SPECS)}")
    spec = SPECS[name]
    params = _parse_params(m["params"], text) if m["params"] and m["params"].strip() else {}
    for key, value in params.items():
        if key not in spec.params:
            allowed = ", ".join(spec.params) or "none"
            raise MeasureError(f"{name} has no parameter {key!r} (in {text!r}); "
                               f"parameters: {allowed}")
        default = spec.params[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise MeasureError(f"{name}({key}=...) must be True or False, found {value!r}")
        elif isinstance(default, int) and (not isinstance(value, int) or isinstance(value, bool)):
            raise MeasureError(f"{name}({key}=...) must be an integer, found {value!r}")
        # grade 0 is not relevant; negative: not judged
        elif key == "rel" and value < 1:
            raise MeasureError(f"{name}(rel=...) must be 1 or more (grade 0 is not relevant, "
                               f"a negative grade marks an unjudged document), found {value!r}")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise MeasureError(f"{name}({key}=...) must be a number, found {value!r}")
            params[key] = value = float(value)
            if key == "p" and not 0.0 < value < 1.0:
                raise MeasureError(f"{name}(p=...) must be between 0 and 1, found {value!r}")
            if key == "beta" and value < 0:
                raise MeasureError(f"{name}(beta=...) must be >= 0, found {value!r}")
        elif isinstance(default, str) and key in _STRING_FORMS:
            if not isinstance(value, str):
                raise MeasureError(f"{name}({key}=...) must be a quoted string, found {value!r}")
            _STRING_FORMS[key](value)
        if key in spec.choices and value not in spec.choices[key]:
            raise MeasureError(f"{name}({key}=...) must be one of "
                               f"{', '.join(map(repr, spec.choices[key]))}, found {value!r}")
    cutoff = None
    if m["cutoff"] is not None:
        if spec.cutoff == "none":
            raise MeasureError(f"{name} takes no cutoff (in {text!r})")
        if spec.cutoff in ("recall", "factor"):
            try:
                cutoff = float(m["cutoff"])
            except ValueError:
                cutoff = -1.0
            if spec.cutoff == "recall" and not 0.0 <= cutoff <= 1.0:
                raise MeasureError(f"{name}@r needs a recall level between 0 and 1, e.g. "
                                   f"{name}@0.1 (in {text!r})")
            if spec.cutoff == "factor" and not cutoff > 0.0:
                raise MeasureError(f"{name}@x needs a factor above 0, e.g. {name}@0.5 "
                                   f"(in {text!r})")
            ordered = tuple((k, params[k]) for k in spec.params if k in params)
            return Measure(name, ordered, cutoff)
        try:
            cutoff = int(m["cutoff"])
        except ValueError:
            raise MeasureError(f"cutoff of {text!r} must be a positive integer") from None
        if cutoff < 1:
            raise MeasureError(f"cutoff of {text!r} must be a positive integer")
    elif spec.cutoff in ("required", "recall", "factor"):
        example = {"recall": "0.1", "factor": "0.5"}.get(spec.cutoff, "10")
        raise MeasureError(f"{name} needs a cutoff, e.g. {name}@{example} (in {text!r})")
    ordered = tuple((k, params[k]) for k in spec.params if k in params)
    return Measure(name, ordered, cutoff)
