"""The batches a label store has recorded, as jobs again: rebuilt from the judge settings saved
at submission (never the key), to poll, collect or cancel them (``reljudge batch``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import cast

from reljudge.errors import ConfigError
from reljudge.judge.batch.job import BatchJob
from reljudge.judge.labeller import Labeller
from reljudge.judge.report import BatchResult
from reljudge.store import LabelStore
from reljudge.store.batches import BatchLog


def recorded_jobs(store: LabelStore, api_key: str | None = None, *, say: Callable[[str], None] | None = None,
                  on_warning: Callable[[str], None] | None = None,
                  open_only: bool = True) -> list[BatchJob]:
    """One BatchJob per judge settings recorded with the store's (open) batches, rebuilt
    from the settings saved at submission and this key (or OPENAI_API_KEY); ``say`` and
    ``on_warning`` as for BatchJob and Labeller."""
    from reljudge.judge.config import JudgeConfig

    configs: dict[str, dict] = {}
    for rec in BatchLog(store).batches(open_only=open_only):
        configs.setdefault(json.dumps(rec.config, sort_keys=True), rec.config)
    # without a key: OPENAI_API_KEY, read when the Labeller resolves its endpoint
    return [BatchJob(Labeller(JudgeConfig(**cfg, api_key=api_key), on_warning=on_warning), store,
                     say=say)
            for cfg in configs.values()]


async def collect_recorded(store: LabelStore, api_key: str | None = None, *, wait: bool = False,
                           say: Callable[[str], None] | None = None,
                           on_warning: Callable[[str], None] | None = None,
                           handle_sigint: bool = False) -> list[BatchResult]:
    """Poll and collect every open batch in a store into the cache and the store, with the
    query and passage texts the store holds; submits nothing (``handle_sigint``: as for
    ``Labeller.label``)."""
    results = []
    for job in recorded_jobs(store, api_key, say=say, on_warning=on_warning):
        log = job.log
        items = {(q, d) for rec in log.batches(job.labeller.judge_id, open_only=True)
                 for _, q, d, _ in log.items(rec.id)}
        pairs = sorted(items)
        queries, passages = store.texts(pairs, titles=True)
        missing = [q for q, _ in pairs if queries.get(q) is None] + \
            [d for _, d in pairs if passages.get(d) is None]
        if missing:
            raise ConfigError(f"{store.path}: no text for {len(missing)} query/passage id(s) "
                              f"of the recorded batches (e.g. {missing[:3]}): collect with "
                              "reljudge label --batch and the original inputs")
        # none is None: checked above
        texts = cast(dict[str, str], queries)
        results.append(await job.run(pairs, texts, passages, wait=wait, submit=False,
                                     handle_sigint=handle_sigint))
    return results
