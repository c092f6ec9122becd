"""One judgment: from a pair's answer to its event. The answer is read; a refusal is a failure
of its own kind; an answer that cannot be read is asked again once, with a short repair
message in the form its prompt asks for; an answer cut off at the output token limit before
its grade is a failure of kind ``truncated``, not asked again (the same limit cuts it again);
a call that failed is a failure with its kind and detail. Never a grade invented."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

from reljudge.judge.budget import BudgetReached
from reljudge.judge.dispatch import Lane, NotSent
from reljudge.judge.http.client import Answer, CallFailed, grade_fields, refusal_failure
from reljudge.judge.parse import REPAIR, parse_answer
from reljudge.judge.prompts import Template
from reljudge.judge.report import LabelReport
from reljudge.judge.role import Judge
from reljudge.labels import FailureKind, LabelEvent


class Asks(Protocol):
    """What a judgment needs of its labelling job (a LabelJob is one)."""

    @property
    def lab(self) -> Judge: ...

    @property
    def report(self) -> LabelReport: ...

    @property
    def shown(self) -> dict[tuple[str, str], str]: ...

    def messages(self, qid: str, docid: str) -> list[dict[str, str]]: ...

    def params(self) -> dict[str, Any]: ...

    async def ask(self, lane: Lane, messages: list[dict], repeat: int, requeue: bool = False,
                  fresh: bool = False) -> tuple[Answer, bool, dict]: ...


async def judgment(job: Asks, lane: Lane, item: tuple[str, str, int],
                   requeue: bool = False) -> LabelEvent:
    """One item's event from the answer ``job`` gets on ``lane``: a grade, or
    a failure of the call, a refusal, or an answer unreadable even when re-asked once."""
    qid, docid, repeat = item
    lab, report = job.lab, job.report
    messages = job.messages(qid, docid)
    meta = lane.meta
    base = dict(qid=qid, docid=docid, source_kind="llm", source_name=lane.judge_id,
                repeat=repeat, meta=meta, shown=job.shown.get((qid, docid)))
    t0 = time.perf_counter()
    # asked again past the cache (--retry-failed: a cached answer that failed)
    fresh = False
    try:
        answer, cached, params = await job.ask(lane, messages, repeat, requeue)
        if cached and lab.config.retry_failed and _failed(answer, lab.template):
            fresh = True
            answer, cached, params = await job.ask(lane, messages, repeat, requeue, fresh=True)
    except CallFailed as e:
        return _event(base, job.params(), grade=None, failure=e.describe(),
                           failure_kind=e.kind.value)
    # which endpoint answered (or the cache: one did before)
    if lab.config.endpoints:
        base["meta"] = {**meta, "answered_by": "cache" if cached else lane.display}
    report.cached += cached
    tin, tout = answer.tokens_in, answer.tokens_out
    cost = 0.0 if cached else lane.price.cost(tin, tout)
    raw = answer.text
    refused = refusal_failure(answer)
    if refused is not None:
        return _event(base, params, grade=None, failure=refused,
                           failure_kind=FailureKind.REFUSED.value, raw=raw, tokens_in=tin,
                           tokens_out=tout, cost=cost, latency=answer.latency)
    output = lab.template.output
    parsed = parse_answer(answer.text, output, answer.cut_off)
    final = answer
    grade = parsed.grade
    # never re-asked: see the module doc
    if parsed.kind is FailureKind.TRUNCATED:
        return _event(base, params, grade=None,
                      failure=f"{cut_detail(params)}; not re-asked: the same limit would cut "
                              "it again", failure_kind=parsed.kind.value, raw=raw,
                      tokens_in=tin, tokens_out=tout, cost=cost, latency=answer.latency)
    # one re-ask with a short repair message
    if grade is None:
        repair = messages + [{"role": "assistant", "content": answer.text or ""},
                             {"role": "user", "content": REPAIR[output]}]
        try:
            final, cached2, params = await job.ask(lane, repair, repeat, requeue, fresh=fresh)
        except (CallFailed, BudgetReached, NotSent) as e:
            kind, why = ((e.kind, e.describe()) if isinstance(e, CallFailed) else
                         (FailureKind.BUDGET, "not re-asked: the job is stopping"))
            return _event(base, params, grade=None,
                               failure=f"{parsed.reason}; re-ask failed: {why}",
                               failure_kind=kind.value, raw=raw, tokens_in=tin,
                               tokens_out=tout, cost=cost)
        report.cached += cached2
        tin, tout = tin + final.tokens_in, tout + final.tokens_out
        cost += 0.0 if cached2 else lane.price.cost(final.tokens_in, final.tokens_out)
        raw = f"{raw}\n--- re-asked ---\n{final.text}"
        second = parse_answer(final.text, output, final.cut_off)
        if second.grade is None:
            again = (cut_detail(params) if second.kind is FailureKind.TRUNCATED
                     else second.reason)
            return _event(base, params, grade=None,
                               failure=f"{parsed.reason} (re-asked once: {again})",
                               failure_kind=(second.kind or FailureKind.UNPARSEABLE).value,
                               raw=raw, tokens_in=tin, tokens_out=tout, cost=cost,
                               latency=time.perf_counter() - t0)
        grade = second.grade
    return _event(base, params, grade=grade, raw=raw,
                       **grade_fields(final.logprobs, grade), tokens_in=tin,
                       tokens_out=tout, cost=cost, latency=answer.latency)


def cut_detail(params: Mapping[str, Any]) -> str:
    """The failure detail of an answer cut off at the output token limit of ``params`` (the
    parameters it was asked with), and what to do about it."""
    field = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
    return (f"truncated: the answer was cut off at {field}={params.get(field)} before it "
            "gave a grade (raise --max-tokens, or use a prompt whose answer ends sooner, and "
            "run again with --retry-failed)")


def _failed(answer: Answer, template: Template) -> bool:
    """Whether an answer gives no grade: refused, unreadable, or cut off before its grade."""
    return (refusal_failure(answer) is not None
            or parse_answer(answer.text, template.output, answer.cut_off).grade is None)


def _event(base: dict, params: dict, **kw: Any) -> LabelEvent:
    """An event of ``base``'s pair with the parameters sent in its provenance."""
    base = dict(base)
    return LabelEvent(meta={**base.pop("meta"), "params": params}, **base, **kw)
