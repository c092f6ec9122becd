"""The labeller: grade (query, passage) pairs with an LLM, paying for each answer once.

A ``Labeller`` is one judge: its settings, prompt, endpoints, request shape and answer cache.
``label`` runs one ``LabelJob`` (``reljudge.judge.label_job``) over the pairs not yet settled
in the sink: each request is looked up in the answer cache, else sent (pre-flight checked,
rate limited, retried, within the budget) and cached at once, and its answer becomes a grade
or a failure with its kind (``reljudge.judge.judgment``). A paid answer is in the spend ledger
before it is cached, and a label store gets each event as soon as it is read. What a job would
do, and what is settled already, is ``reljudge.judge.planning``; several endpoints,
``reljudge.judge.dispatch``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from reljudge.errors import LLMError
from reljudge.judge.budget import Budget, BudgetReached, spending_limit
from reljudge.judge.cache import AnswerCache, cache_key, replica_key
from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price, price_for
from reljudge.judge.dispatch import Lane, open_lane
from reljudge.judge.http.capabilities import Capabilities
from reljudge.judge.http.client import JSON_SCHEMA, CallFailed
from reljudge.judge.http.endpoints import Endpoint, resolve_endpoints
from reljudge.judge.label_job import LabelJob
from reljudge.judge.planning import check_inputs, quote, settled, shown_now
from reljudge.judge.prompts import Template, load_template
from reljudge.judge.report import CostQuote, LabelReport
from reljudge.judge.role import Settled
from reljudge.judge.sink import EventSink, JudgmentSink
from reljudge.labels import passage_parts

_log = logging.getLogger(__name__)

__all__ = ["BudgetReached", "CostQuote", "JudgmentSink", "LabelReport", "Labeller",
           "label_pairs"]


class Labeller:
    """An LLM judge with a cache, a retry policy, rate limits, a budget and a breaker."""

    def __init__(self, config: JudgeConfig, template: Template | None = None, *,
                 on_warning: Callable[[str], None] | None = None):
        """``on_warning``: told each new warning of a run as it happens (the CLI prints it);
        by default it is logged (WARNING, this module's logger). Every warning is in the
        report too."""
        self.config = config
        self.on_warning = on_warning
        self.template = template or load_template(config.prompt)
        self.price: Price = price_for(config.model, override=(config.price_in, config.price_out))
        #: where calls go: one endpoint, or several (config.endpoints)
        self.specs: list[Endpoint] = resolve_endpoints(config)
        #: the first: the report and batch files name it
        self.endpoint = self.specs[0]
        self.answers = AnswerCache(config.resolved_cache_dir())
        self.caps = self.new_caps()
        self._judge_id = f"{self.specs[0].model}/{self.template.label}"
        self._meta = {"model": self.specs[0].model, "prompt": self.template.name,
                      "prompt_version": self.template.version, "prompt_hash": self.template.hash,
                      "endpoint": self.endpoint.display}

    # -- identity and request shape --------------------------------------------------------
    @property
    def judge_id(self) -> str:
        """The source name of this judge's labels: model/prompt@version#hash8 (with several
        endpoints serving different models: the first endpoint's)."""
        return self._judge_id

    @property
    def judge_ids(self) -> list[str]:
        """Every judge of this job: one per model its endpoints serve, first endpoint's first."""
        return list(dict.fromkeys(f"{s.model}/{self.template.label}" for s in self.specs))

    def params(self) -> dict[str, Any]:
        """Decoding parameters of the requests sent (after the last job's capability
        fall-backs; part of the cache key; shared: do not mutate)."""
        return self.caps.params

    def new_caps(self) -> Capabilities:
        """The request features to try first (each job starts from them)."""
        c = self.config
        base: dict[str, Any] = {"temperature": c.temperature,
                                "max_tokens": c.max_tokens or (300 if self.template.output ==
                                                               "json" else 600)}
        if c.seed is not None:
            base["seed"] = c.seed
        return Capabilities(base, json_schema=JSON_SCHEMA if self.template.output == "json"
                            else None, logprobs=c.logprobs, token_field=c.token_field)

    def messages(self, qid: str, docid: str, queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> list[dict[str, str]]:
        """The rendered prompt of one pair."""
        text, title = passage_parts(passages[docid])
        # str(): a passage given as None renders as "None"
        return self.template.render(queries[qid], str(text), title)

    def request_key(self, messages: list[dict], repeat: int) -> str:
        """The cache key of a request with the current parameters (a Batch API line's
        custom_id; the first endpoint's with several)."""
        return self.key(messages, repeat)

    def key(self, messages: list[dict], repeat: int, params: dict | None = None,
             spec: Endpoint | None = None) -> str:
        """The cache key of a request to an endpoint (default: the first): without its URL
        when it is one of several replicas, else with it."""
        spec = spec or self.specs[0]
        params = self.params() if params is None else params
        if spec.replica:
            return replica_key(spec.model, messages, params, repeat)
        return cache_key(spec.base_url, spec.model, messages, params, repeat)

    def keys(self, messages: list[dict], repeat: int) -> list[str]:
        """The request's cache key at every endpoint (one for replicas)."""
        return list(dict.fromkeys(self.key(messages, repeat, spec=s) for s in self.specs))

    def cache(self) -> Any:
        """The diskcache of answers (opened on first use)."""
        return self.answers.store()

    # -- planning (reljudge.judge.planning) ------------------------------------------------
    check_inputs = staticmethod(check_inputs)

    def settled(self, sink: object = None,
                current: Mapping[tuple[str, str], str] | None = None) -> Settled:
        """(qid, docid, repeat) already settled in the sink for this judge (graded, or a
        failure of the answer unless --retry-failed), the failures among them, and the stale
        ones: with ``current`` (digests of the current texts), labels given to other texts,
        handled by ``config.stale``."""
        return settled(self.judge_ids, self.config.retry_failed, sink, current,
                       self.config.stale)

    def check(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
              passages: Mapping[str, Any], sink: object = None) -> None:
        """Raise what ``label`` refuses before its first call (pairs without texts, a budget
        it cannot enforce, labels on changed texts under --stale fail), reading the sink only:
        a caller that writes for the run (its texts to the store) checks this first."""
        self.check_inputs(pairs, queries, passages)
        self.spending_limit(sink)
        if self.config.stale == "fail":
            self.settled(sink, shown_now(pairs, queries, passages))

    def quote(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
              passages: Mapping[str, Any], sink: object = None) -> CostQuote:
        """What a run would send after store and cache hits, and its rough cost (at the batch
        price with ``config.batch``)."""
        return quote(self, pairs, queries, passages, sink)

    def check_endpoints(self) -> None:
        """Raise LLMError when no endpoint of the job passes its pre-flight check (it answers,
        and accepts the key), naming the URL and the cause; sends no paid call."""
        from reljudge.judge.sync import run_sync

        run_sync(self._check_endpoints())

    async def _check_endpoints(self) -> None:
        lanes = [open_lane(spec, self.config, self.judge_id, {}) for spec in self.specs]
        try:
            found = await asyncio.gather(*(lane.client.preflight() for lane in lanes),
                                         return_exceptions=True)
        finally:
            for lane in lanes:
                await lane.client.close()
        for outcome in found:
            if isinstance(outcome, BaseException) and not isinstance(outcome, CallFailed):
                raise outcome
        if all(isinstance(outcome, CallFailed) for outcome in found):
            e, lane = found[0], lanes[0]
            assert isinstance(e, CallFailed)
            raise LLMError(f"{e.url or lane.client.url}: {e.kind}: {e.describe()}")

    # -- shared with the Batch API path (reljudge.judge.batch) ------------------------------
    def event_meta(self, params: dict) -> dict[str, Any]:
        """The provenance an event of this judge carries (model, prompt, endpoint, the
        parameters sent)."""
        return {**self._meta, "params": params}

    # -- running ---------------------------------------------------------------------------
    def tell(self, note: str) -> None:
        """Tell a warning as it happens (``on_warning``, else logged)."""
        if self.on_warning is not None:
            self.on_warning(note)
        else:
            # unconfigured logging shows it on stderr as "warning: ..."
            _log.warning("warning: %s", note)

    def open_lanes(self, store: JudgmentSink | None = None) -> list[Lane]:
        """Every endpoint ready for a job, each with its spend ledger line in ``store``."""
        return [open_lane(spec, self.config, f"{spec.model}/{self.template.label}",
                          self._lane_meta(spec), store) for spec in self.specs]

    def _lane_meta(self, spec: Endpoint) -> dict[str, Any]:
        """An endpoint's provenance (with one endpoint: the judge's own)."""
        if not self.config.endpoints:
            return self._meta
        return {**self._meta, "model": spec.model, "endpoint": spec.display,
                "cache_scope": "replicas" if spec.replica else "endpoint"}

    def spending_limit(self, sink: object = None) -> Budget:
        """A job's budget: --max-cost, and --max-total-cost given the sink's spend ledger."""
        return spending_limit(self.config, [s.model for s in self.specs], sink)

    async def label(self, pairs: Sequence[tuple[str, str]], queries: Mapping[str, str],
                    passages: Mapping[str, Any], sink: EventSink | None = None, *,
                    progress: bool = False,
                    only: Collection[tuple[str, str, int]] | None = None,
                    handle_sigint: bool = False) -> LabelReport:
        """Label every pair (x repeats) not yet settled in the sink; see the module doc.
        ``only``: just these (qid, docid, repeat) items. A sink that is a JudgmentSink (the
        LabelStore) also settles items, claims them and records spend. ``handle_sigint``: while it runs, the
        first Ctrl-C stops new calls and saves what was answered (the CLI asks for it; off, the
        process's SIGINT handling is left as it is)."""
        job = LabelJob(self, pairs, queries, passages, sink, progress=progress, only=only)
        # what follows (a batch built next) sends what the job learnt
        self.caps = job.caps
        return await job.run(handle_sigint)


def label_pairs(config: JudgeConfig, pairs: Sequence[tuple[str, str]],
                queries: Mapping[str, str], passages: Mapping[str, Any],
                sink: EventSink | None = None, *, progress: bool = False,
                handle_sigint: bool = False) -> LabelReport:
    """Synchronous wrapper around ``await Labeller(config).label(...)``; works inside a running
    event loop too (Jupyter), by running the job on its own loop in a worker thread (where
    ``handle_sigint`` cannot apply: signals reach the main thread only)."""
    from reljudge.judge.sync import run_sync

    return run_sync(Labeller(config).label(pairs, queries, passages, sink, progress=progress,
                                           handle_sigint=handle_sigint))

