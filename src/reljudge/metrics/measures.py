"""Measures as data: a name, typed parameters with defaults, and an optional cutoff.

Parsed from the strings IR people already write (ir_measures syntax): ``nDCG@10``,
``nDCG(dcg='exp-log2')@10``, ``P(rel=2)@5``, ``RR``, ``AP@100``, ``Judged@10``, ``Bpref``,
``IPrec@0.1``, ``RBP(p=0.8)``, and our extensions ``nDCG(ideal='run')@10`` and
``RBP(residual=True)``. Computation lives in ``kernels``; nothing here does math.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

from reljudge.errors import MeasureError


@dataclass(frozen=True)
class MeasureSpec:
    """What a measure accepts: its parameters with defaults and whether a cutoff is required."""

    name: str
    doc: str
    params: dict[str, Any] = field(default_factory=dict)
    choices: dict[str, tuple] = field(default_factory=dict)
    cutoff: str = "optional"  # optional | required | none | recall (in [0, 1]) | factor (> 0)
    trec_eval: str | None = None  # the trec_eval measure name, for the mapping table
    bounds: tuple[float, float] = (0.0, 1.0)  # every value lies in it, whatever the parameters


def level_gains(text: str) -> dict[int, float]:
    """A gain per grade, as trec_eval's ndcg.1=3,2=9: {1: 3.0, 2: 9.0}; grades not named
    keep their own value as gain. A MeasureError names what is wrong."""
    out: dict[int, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, eq, gain = part.partition("=")
        try:
            out[int(level)] = float(gain)
        except ValueError:
            raise MeasureError(f"gains {text!r}: expected GRADE=GAIN pairs separated by "
                               f"commas, e.g. '1=3,2=9', found {part!r}") from None
        if not eq:
            raise MeasureError(f"gains {text!r}: expected GRADE=GAIN, found {part!r}")
        if not 0.0 <= out[int(level)] < math.inf:  # a negative gain puts nDCG outside [0, 1]
            raise MeasureError(f"gains {text!r}: a gain must be a number >= 0 (nDCG would "
                               f"leave [0, 1]), found {part!r}")
    return out


def recall_levels(text: str) -> tuple[float, ...]:
    """Recall levels as trec_eval's 11pt_avg..25,.5: (0.25, 0.5); each in [0, 1]."""
    try:
        levels = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise MeasureError(f"levels {text!r}: expected recall levels separated by commas, "
                           "e.g. '0.25,0.5,0.75'") from None
    if not levels or not all(0.0 <= v <= 1.0 for v in levels):
        raise MeasureError(f"levels {text!r}: expected recall levels between 0 and 1")
    return levels


_STRING_FORMS = {"gains": level_gains, "levels": recall_levels}  # str params read further
COUNT = (0.0, math.inf)  # the bounds of DCG and the counting measures
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
                {"dcg": ("log2", "exp-log2"), "ideal": ("qrels", "run")}, trec_eval="ndcg_cut"),
    MeasureSpec("DCG", "Discounted cumulative gain, discount 1/log2(rank+1). " + _JUDGED_ONLY,
                {"dcg": "log2", "judged_only": False}, {"dcg": ("log2", "exp-log2")}, bounds=COUNT),
    MeasureSpec("P", "Precision: relevant (grade >= rel) in the top k, divided by k. "
                + _JUDGED_ONLY, dict(_CONDENSED), cutoff="required", trec_eval="P"),
    MeasureSpec("R", "Recall: relevant in the top k, divided by all relevant in the qrels. "
                + _JUDGED_ONLY, dict(_CONDENSED), trec_eval="recall"),
    MeasureSpec("RR", "Reciprocal rank of the first relevant document (0 when none). "
                + _JUDGED_ONLY, dict(_CONDENSED), trec_eval="recip_rank"),
    MeasureSpec("AP", "Average precision; with a cutoff, trec_eval's map_cut (still divided "
                "by all relevant documents). " + _JUDGED_ONLY, dict(_CONDENSED),
                trec_eval="map"),
    MeasureSpec("Success", "1 when a relevant document is in the top k, else 0.",
                dict(_REL), cutoff="required", trec_eval="success"),
    MeasureSpec("ERR", "Expected reciprocal rank (Chapelle et al. 2009), stop probability "
                "(2^grade-1)/2^max_grade; max_grade=4 as gdeval/ir_measures.",
                {"max_grade": 4}),
    MeasureSpec("Judged", "Share of the top k that is judged (divided by min(k, retrieved)), "
                "as ir_measures.", {}),
    MeasureSpec("NumRel", "Number of relevant documents (grade >= rel) in the qrels.",
                dict(_REL), cutoff="none", trec_eval="num_rel", bounds=COUNT),
    MeasureSpec("NumRet", "Number of documents the run returned.", {}, cutoff="none",
                trec_eval="num_ret", bounds=COUNT),
    MeasureSpec("NumRelRet", "Number of relevant documents retrieved (in the top k).",
                dict(_REL), trec_eval="num_rel_ret", bounds=COUNT),
    MeasureSpec("Rprec", "Precision at rank R, R the number of relevant documents in the "
                "qrels (0 when R is 0); ranks past the run's end count as not relevant.",
                dict(_REL), cutoff="none", trec_eval="Rprec"),
    MeasureSpec("Bpref", "Binary preference (Buckley & Voorhees 2004), trec_eval's bpref: for "
                "each retrieved relevant document, 1 - min(n, R) / min(N, R), n the judged "
                "non-relevant (0 <= grade < rel) ranked above it, R and N the relevant and "
                "judged non-relevant documents in the qrels; summed and divided by R. "
                "Unjudged documents and negative grades are skipped.",
                dict(_REL), cutoff="none", trec_eval="bpref"),
    MeasureSpec("infAP", "Inferred AP (Yilmaz & Aslam 2006), trec_eval's infAP: documents "
                "absent from the qrels are not in the pool (counted as not relevant), a "
                "negative grade marks a pooled but unjudged document (its relevance is "
                "estimated from the judged ones above it, epsilon 0.00001).",
                dict(_REL), cutoff="none", trec_eval="infAP"),
    MeasureSpec("IPrec", "Interpolated precision at recall r (IPrec@0.1): the highest "
                "precision at any rank whose recall reaches r: at or after the c-th relevant "
                "document, c = lround(r x R) as trec_eval 10 (int(r x R + 0.9) under "
                "compat='trec_eval-9').",
                dict(_REL), cutoff="recall", trec_eval="iprec_at_recall"),
    MeasureSpec("IPrecAvg", "trec_eval's 11pt_avg: the mean of IPrec at recall 0.0, 0.1, ..., "
                "1.0, or at levels='0.25,0.5' (trec_eval's 11pt_avg..25,.5).",
                {"rel": 1, "levels": ""}, cutoff="none", trec_eval="11pt_avg"),
    MeasureSpec("RprecMult", "trec_eval's Rprec_mult (RprecMult@0.5): precision at rank "
                "int(x R + 0.9), R the relevant documents in the qrels.", dict(_REL),
                cutoff="factor", trec_eval="Rprec_mult"),
    MeasureSpec("RelP", "trec_eval's relative_P: relevant in the top k over min(k, R), the "
                "most there could be (0 when R is 0).", dict(_REL), cutoff="required",
                trec_eval="relative_P"),
    MeasureSpec("Unjudged", "trec_eval's unj: documents of the top k absent from the qrels or "
                "graded negative, over k (ranks past the run's end count as judged).", {},
                cutoff="required", trec_eval="unj"),
    MeasureSpec("NumNonRelJudgedRet", "Retrieved documents judged not relevant "
                "(0 <= grade < rel).", dict(_REL), cutoff="none",
                trec_eval="num_nonrel_judged_ret", bounds=COUNT),
    MeasureSpec("Utility", "trec_eval's linear utility: a x relevant retrieved + b x "
                "non-relevant retrieved + c x relevant missed + d x non-relevant missed, "
                "num_docs the documents in the collection (trec_eval -N).",
                {"rel": 1, "a": 1.0, "b": -1.0, "c": 0.0, "d": 0.0, "num_docs": 0},
                cutoff="none", trec_eval="utility", bounds=(-math.inf, math.inf)),
    MeasureSpec("SetP", "Precision of the whole retrieved set: relevant retrieved / retrieved.",
                dict(_REL), cutoff="none", trec_eval="set_P"),
    MeasureSpec("SetR", "Recall of the whole retrieved set: relevant retrieved / relevant.",
                dict(_REL), cutoff="none", trec_eval="set_recall"),
    MeasureSpec("SetRelP", "trec_eval's set_relative_P: relevant retrieved over "
                "min(retrieved, R) (0 when either is 0).", dict(_REL), cutoff="none",
                trec_eval="set_relative_P"),
    MeasureSpec("SetAP", "trec_eval's set_map: relevant retrieved squared over retrieved x R "
                "(SetP x SetR; 0 when either is 0).", dict(_REL), cutoff="none",
                trec_eval="set_map"),
    MeasureSpec("SetF", "F-measure of SetP and SetR: (1+beta^2) P R / (beta^2 P + R), 0 when "
                "both are 0.", {"rel": 1, "beta": 1.0}, cutoff="none", trec_eval="set_F"),
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
                {"p": 0.8, "rel": 1, "residual": False, "graded": False, "tail": False}),
    MeasureSpec("G", "trec_eval's G: the sum over retrieved documents of gain / log2(2 + "
                "cost - gained), cost the ideal gains so far (each at least 1), gained the "
                "run's gains so far, over the sum of the ideal gains; gain = grade.", {},
                cutoff="none", trec_eval="G"),
    MeasureSpec("nDCGRel", "trec_eval's ndcg_rel: DCG / ideal DCG at each retrieved document "
                "with a gain, and the final ratio for each relevant one not retrieved, "
                "averaged over the documents with a gain in the qrels.", {}, cutoff="none",
                trec_eval="ndcg_rel"),
    MeasureSpec("RnDCG", "trec_eval's Rndcg: DCG / ideal DCG averaged over the ranks where the "
                "ideal gain drops (and the run's end when it runs more than one rank past the "
                "ideal ones); 0 when no document is relevant (grade >= rel).", dict(_REL),
                cutoff="none", trec_eval="Rndcg"),
    MeasureSpec("BinG", "trec_eval's binG: the sum over retrieved relevant documents of "
                "1 / log2(2 + n), n the non-relevant documents above it, divided by R.",
                dict(_REL), cutoff="none", trec_eval="binG"),
]}

_ALIASES = {"ndcg": "nDCG", "ndcg_cut": "nDCG", "dcg": "DCG", "p": "P", "precision": "P",
            "r": "R", "recall": "R", "rr": "RR", "mrr": "RR", "recip_rank": "RR", "ap": "AP",
            "map": "AP", "success": "Success", "err": "ERR", "judged": "Judged",
            "numrel": "NumRel", "num_rel": "NumRel", "numret": "NumRet", "num_ret": "NumRet",
            "numrelret": "NumRelRet", "num_rel_ret": "NumRelRet", "rprec": "Rprec",
            "bpref": "Bpref", "infap": "infAP", "iprec": "IPrec", "setp": "SetP",
            "set_p": "SetP", "setr": "SetR", "set_recall": "SetR", "setf": "SetF",
            "set_f": "SetF", "rbp": "RBP"}

_SYNTAX = re.compile(r"^\s*(?P<name>[A-Za-z_]+)\s*(?:\((?P<params>.*)\))?\s*"
                     r"(?:@\s*(?P<cutoff>[^\s]+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """One measure with its parameters fixed, e.g. ``nDCG(dcg='exp-log2')@10``."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    cutoff: int | float | None = None  # a rank; for IPrec, a recall level

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
        if kw.arg is None:  # f(**x)
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
        text = str(text)  # ir_measures objects print in the syntax parsed here
    m = _SYNTAX.match(text)
    if not m:
        raise MeasureError(f"cannot parse measure {text!r}: expected NAME, NAME@K or "
                           "NAME(param=value)@K, e.g. nDCG@10 or P(rel=2)@5 (or trec_eval's "
                           "words, e.g. map, P_10, ndcg_cut.10)")
    name = _ALIASES.get(m["name"].lower(), m["name"])
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
        elif key == "rel" and value < 1:  # grade 0 is not relevant; negative: not judged
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
