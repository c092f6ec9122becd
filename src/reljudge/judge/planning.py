"""Before a labelling job: its inputs checked, what the store settles already, what it would
send and cost (a dry run)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from reljudge.errors import InputError
from reljudge.judge.cost import estimate_tokens
from reljudge.judge.failures import asked_again
from reljudge.judge.report import CostQuote
from reljudge.judge.role import Item, Judge, Settled
from reljudge.judge.sink import JudgmentSink


def check_inputs(pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> None:
    """Raise InputError naming the pairs' query and passage ids that have no text, or an
    empty one (a judge shown nothing would still answer)."""
    from reljudge.labels import passage_parts

    parts = []
    for what, ids, texts in (("query", {q for q, _ in pairs}, queries),
                             ("passage", {d for _, d in pairs}, passages)):
        missing = sorted(i for i in ids if i not in texts)
        empty = sorted(i for i in ids if i in texts and not _has_text(
            texts[i] if what == "query" else passage_parts(texts[i])[0]))
        if missing:
            parts.append(f"{len(missing)} {what} id(s) without text (e.g. {missing[:3]})")
        if empty:
            parts.append(f"{len(empty)} {what} id(s) with an empty text (e.g. {empty[:3]})")
    if parts:
        raise InputError("cannot label: " + "; ".join(parts))


def _has_text(text: object) -> bool:
    """Whether a text holds something to read (None renders as "None")."""
    return not isinstance(text, str) or bool(text.strip())


#: what a job does with labels given to changed texts
STALE = ("relabel", "keep", "fail")


def shown_now(pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
              passages: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """{(qid, docid): the digest of what a judge is shown} from a job's input texts."""
    from reljudge.labels import passage_parts, shown_digest

    return {(q, d): shown_digest(queries.get(q), *passage_parts(passages.get(d)))
            for q, d in pairs}


def stale_note(count: int, stale: str) -> str:
    """What a run says of the stale items it found (``stale``: relabel or keep)."""
    what = "asked again" if stale == "relabel" else "kept (--stale keep)"
    return (f"{count} pair(s) x repeats were labelled on query or passage texts that have "
            f"changed since: {what}")


def settled(judge_ids: Sequence[str], retry_failed: bool, sink: object = None,
            current: Mapping[tuple[str, str], str] | None = None, stale: str = "relabel"
            ) -> Settled:
    """Items already settled in the sink for these judges: graded, or a failure of the answer
    (refused, unparseable) unless ``retry_failed``; the settled ones that are such failures
    (they still have no grade); and the stale ones: graded on texts other than ``current``
    (digests of the current texts). Stale items are not settled when ``stale`` is "relabel"; with
    "fail" they are an InputError; with "keep" they stay settled."""
    # a sink that only takes events settles nothing
    if not isinstance(sink, JudgmentSink):
        return Settled(set(), set(), set())
    latest: dict[Item, Any] = {}
    # several models: a pair graded by any of them is done
    for judge in judge_ids:
        # every event of this judge, lean
        for e in sink.outcomes(judge):
            key = (e.qid, e.docid, e.repeat)
            if e.grade is not None or key not in latest or latest[key].grade is None:
                # a grade, once given, settles the item
                latest[key] = e
    done = {k for k, e in latest.items()
            if e.grade is not None or not asked_again(e.failure_kind, retry_failed)}
    old = set()
    if current is not None:
        old = {k for k in done if latest[k].grade is not None
               and getattr(latest[k], "shown", None) is not None
               and k[:2] in current and latest[k].shown != current[k[:2]]}
    if old and stale == "fail":
        q, d, _ = min(old)
        raise InputError(f"{len(old)} pair(s) were labelled on query or passage texts that "
                         f"have changed since (e.g. {q} {d}); --stale relabel asks them again, "
                         "--stale keep keeps the old labels")
    if stale == "relabel":
        done -= old
    return Settled(done, {k for k in done if latest[k].grade is None}, old)


def plan(pairs: Sequence[tuple[str, str]], repeats: int, done: set[Item], failed: set[Item],
         only: Collection[Item] | None = None) -> tuple[list[Item], int, int]:
    """The items to ask, how many are settled already, and how many of those failed."""
    items = [(q, d, s) for q, d in pairs for s in range(repeats)]
    if only is not None:
        items = [it for it in items if it in only]
    todo = [it for it in items if it not in done]
    return todo, len(items) - len(todo), sum(1 for it in items if it in failed)


def quote(labeller: Judge, pairs: Sequence[tuple[str, str]],
          queries: Mapping[str, str], passages: Mapping[str, Any],
          sink: object = None) -> CostQuote:
    """What a run of this labeller would send after store and cache hits, and its rough cost
    (at the batch price with ``config.batch``)."""
    check_inputs(pairs, queries, passages)
    config, template, price = labeller.config, labeller.template, labeller.price
    done, failed, _ = labeller.settled(sink, shown_now(pairs, queries, passages))
    todo, n_done, _ = plan(pairs, config.repeats, done, failed)
    cache = labeller.cache()
    cached = tin = 0
    seen: set[str] = set()
    for q, d, s in todo:
        msgs = labeller.messages(q, d, queries, passages)
        keys = labeller.keys(msgs, s)
        if any(k in cache or k in seen for k in keys):
            cached += 1
            continue
        seen.update(keys)
        tin += estimate_tokens(msgs)
    to_send = len(todo) - cached
    out_each = 150 if template.output == "text" and "M (match)" in template.user else 40
    tout = to_send * out_each
    paid = price.scaled(config.batch_discount) if config.batch else price
    return CostQuote(labeller.judge_id, len(todo) + n_done, n_done, cached, to_send, tin, tout,
                     paid.cost(tin, tout), price.known)
