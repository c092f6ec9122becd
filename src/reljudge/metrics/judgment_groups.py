"""trec_eval's judgment-group averages (``-R qrels_jg``, ``-m qrels_jg``): ``map_avgjg``,
``P_avgjg`` and ``Rprec_mult_avgjg`` are ``map``, ``P`` and ``Rprec_mult`` computed against
each judgment group's qrels (say one per assessor) and averaged over a query's groups
(trec_eval's ``m_*_avgjg.c``). The groups' qrels come from the second column of a qrels file,
read with ``reljudge.io.prefs.read_prefs(path, "qrels_jg")``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reljudge.errors import InputError, MeasureError
from reljudge.io.prefs import Prefs
from reljudge.metrics.measures import Measure

#: trec_eval's group measures, each the measure it averages
GROUP_MEASURES = {"map_avgjg": "map", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}
_SUFFIX = "_avgjg"


def group_measures(texts: Sequence[str], rel: int = 1) -> list[tuple[str, Measure]]:
    """(trec_eval name, the measure averaged) of ``qrels_jg`` or the names and parameter
    forms of its measures (``P_avgjg.5,10``, ``Rprec_mult_avgjg_0.20``), in trec_eval's
    order; a MeasureError names an unknown one."""
    from reljudge.metrics.trec_names import trec_measures

    plain = []
    for text in texts:
        text = text.strip()
        if text == "qrels_jg":
            plain += list(GROUP_MEASURES.values())
        elif text in ("runid", "num_q"):
            continue
        elif any(text.startswith(name) for name in GROUP_MEASURES):
            plain.append(text.replace(_SUFFIX, "", 1))
        else:
            raise MeasureError(f"{text!r} is not a judgment-group measure; with qrels_jg "
                               f"judgments: qrels_jg or {', '.join(GROUP_MEASURES)}")
    found = trec_measures(plain, rel) or []
    out = []
    for tm in found:
        base = next(b for b in GROUP_MEASURES.values() if tm.name.startswith(b))
        out.append((base + _SUFFIX + tm.name[len(base):], tm.measure))
    return out


def evaluate_groups(judgments: Prefs, run, measures: Sequence[str] | str = "qrels_jg", *,
                    rel: int = 1, all_queries: bool = False, compat: str = "trec_eval-10",
                    float32_scores: bool | None = None, max_docs: int | None = None):
    """Per-query values of trec_eval's judgment-group measures for one run: each measure
    against every judgment group's qrels, averaged over the query's groups. Queries, options
    and ranking as in ``evaluate`` (``rel``: trec_eval's -l)."""
    from reljudge.io import coerce
    from reljudge.metrics.evaluate import Evaluation, evaluate
    from reljudge.types import Qrels, Run

    named = group_measures([measures] if isinstance(measures, str) else list(measures), rel)
    if not named:
        raise MeasureError("no judgment-group measure asked for")
    run = coerce.as_run(run)
    keys = np.char.add(np.char.add(judgments.qid.astype(str), "\t"),
                       judgments.jg.astype(str))
    qrels = Qrels.from_arrays(keys, judgments.docid, judgments.level.astype(np.int64))
    qids, bounds, docid, score = run.groups()
    where = {q: (bounds[k], bounds[k + 1]) for k, q in enumerate(qids)}
    groups = sorted(set(keys.tolist()), key=str.encode)
    present = [k for k in groups if k.split("\t", 1)[0] in where]
    if not present:
        raise InputError(f"run {run.name!r} has no query with judgments")
    rows = np.concatenate([np.arange(*where[k.split("\t", 1)[0]]) for k in present])
    copies = np.repeat(np.array(present, dtype=object),
                       [np.subtract(*where[k.split("\t", 1)[0]][::-1]) for k in present])
    per_group = Run.from_arrays(copies, np.asarray(docid, dtype=object)[rows],
                                np.asarray(score)[rows], name=run.name)
    ev = evaluate(qrels, per_group, [m for _, m in named], all_queries=all_queries,
                  compat=compat, float32_scores=float32_scores, max_docs=max_docs)
    by_group = dict(zip(ev.query_ids, ev.scores, strict=True))
    wanted = sorted({k.split("\t", 1)[0] for k in by_group}, key=str.encode)
    scores = np.zeros((len(wanted), len(named)))
    for i, q in enumerate(wanted):
        mine = [by_group[k] for k in groups if k.split("\t", 1)[0] == q and k in by_group]
        total = np.zeros(len(named))
        for row in mine:  # trec_eval adds group by group, then divides
            total += row
        scores[i] = total / len(mine)
    return Evaluation(run.name, [name for name, _ in named], wanted, scores, compat)
