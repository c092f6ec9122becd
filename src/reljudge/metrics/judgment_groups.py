"""trec_eval's judgment-group averages (``-R qrels_jg``, ``-m qrels_jg``): ``map_avgjg``,
``P_avgjg`` and ``Rprec_mult_avgjg`` are ``map``, ``P`` and ``Rprec_mult`` computed against
each judgment group's qrels (say one per assessor) and averaged over a query's groups
(trec_eval's ``m_*_avgjg.c``). The groups' qrels come from the second column of a qrels file,
read with ``reljudge.io.prefs.read_prefs(path, "qrels_jg")``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from reljudge.choices import Compat
from reljudge.errors import InputError, MeasureError
from reljudge.io.prefs import Prefs
from reljudge.metrics.measures import Measure
from reljudge.metrics.ranking import RunLike

if TYPE_CHECKING:
    from reljudge.metrics.evaluate import Evaluation

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
    try:
        found = trec_measures(plain, rel) or []
    except MeasureError as e:
        # in the words the user gave, not the measure it averages
        raise MeasureError(f"cannot read {', '.join(texts)}: {e}") from None
    out = []
    for tm in found:
        # runid and num_q compute nothing
        if not isinstance(tm.measure, Measure):
            continue
        base = next(b for b in GROUP_MEASURES.values() if tm.name.startswith(b))
        out.append((base + _SUFFIX + tm.name[len(base):], tm.measure))
    return out


def evaluate_groups(judgments: Prefs, run: RunLike, measures: Sequence[str] | str = "qrels_jg", *,
                    rel: int = 1, all_queries: bool = False, compat: Compat = "trec_eval-10",
                    float32_scores: bool | None = None, max_docs: int | None = None
                    ) -> Evaluation:
    """Per-query values of trec_eval's judgment-group measures for one run: each measure
    against every judgment group's qrels, averaged over the query's groups. Queries, options
    and ranking as in ``evaluate`` (``rel``: trec_eval's -l)."""
    from reljudge.io import coerce
    from reljudge.metrics.evaluate import Evaluation, evaluate
    from reljudge.trec_data import Qrels, Run

    named = group_measures([measures] if isinstance(measures, str) else list(measures), rel)
    if not named:
        raise MeasureError("no judgment-group measure asked for")
    run = coerce.as_run(run)
    keys = np.char.add(np.char.add(judgments.qid.astype(str), "\t"),
                       judgments.jg.astype(str))
    qrels = Qrels.from_arrays(keys, judgments.docid, judgments.level.astype(np.int64))
    # query -> its groups' keys ("QID\tJG"), byte order
    groups: dict[str, list[str]] = {}
    for key in sorted(set(keys.tolist()), key=str.encode):
        groups.setdefault(key.split("\t", 1)[0], []).append(key)
    qids, bounds, docid, score = run.groups()
    where = {q: np.arange(bounds[k], bounds[k + 1]) for k, q in enumerate(qids)}
    ranked = [(key, where[q]) for q, keys_q in groups.items() if q in where for key in keys_q]
    if not ranked:
        raise InputError(f"run {run.name!r} has no query with judgments")
    # each group ranks its query's documents
    rows = np.concatenate([r for _, r in ranked])
    copies = np.repeat(np.array([k for k, _ in ranked], dtype=object), [len(r) for _, r in ranked])
    per_group = Run.from_arrays(copies, np.asarray(docid, dtype=object)[rows],
                                np.asarray(score)[rows], name=run.name)
    ev = evaluate(qrels, per_group, [m for _, m in named], all_queries=all_queries,
                  compat=compat, float32_scores=float32_scores, max_docs=max_docs)
    by_key = dict(zip(ev.query_ids, ev.scores, strict=True))
    wanted = [q for q in sorted(groups, key=str.encode) if any(k in by_key for k in groups[q])]
    scores = np.zeros((len(wanted), len(named)))
    for i, q in enumerate(wanted):
        mine = [by_key[k] for k in groups[q] if k in by_key]
        total = np.zeros(len(named))
        # trec_eval adds group by group, then divides
        for row in mine:
            total += row
        scores[i] = total / len(mine)
    return Evaluation(run.name, [name for name, _ in named], wanted, scores, compat)
