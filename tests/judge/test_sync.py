"""Labelling from notebooks: the sync wrapper inside a running event loop (as in Jupyter),
the documented async API, and the report's table display, against the local fake server."""

from __future__ import annotations

import asyncio
import threading

import pytest

from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.judge.sync import run_sync
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply

QUERIES = {"q1": "what is the maternity leave policy?", "q2": "how do I claim expenses?"}
PASSAGES = {"d0": {"text": "zq-three"}, "d1": {"text": "zq-zero"}, "d2": {"text": "zq-two"}}
PAIRS = [("q1", "d0"), ("q1", "d1"), ("q2", "d2")]
GRADE = {"zq-three": 3, "zq-zero": 0, "zq-two": 2}  # the grade each passage earns


def grader(req):
    text = req.body["messages"][-1]["content"]
    return Reply.text(f"final score: {next(g for t, g in GRADE.items() if t in text)}")


def config(server, tmp_path) -> JudgeConfig:
    return JudgeConfig(model="fake-model", base_url=server.base_url, api_key="sk-test",
                       cache_dir=tmp_path / "cache", timeout=2.0, backoff=0.01)


def test_label_pairs_inside_a_running_event_loop_grades_every_pair(tmp_path):
    async def notebook_cell():
        asyncio.get_running_loop()  # a loop is running here, as in Jupyter
        return label_pairs(cfg, PAIRS, QUERIES, PASSAGES, store)

    with FakeOpenAI(grader) as s, LabelStore(tmp_path / "l.sqlite") as store:
        cfg = config(s, tmp_path)
        report = asyncio.run(notebook_cell())
        assert s.calls == 3
        assert store.merge("llm-only").qrels.to_dict() == {"q1": {"d0": 3, "d1": 0},
                                                           "q2": {"d2": 2}}
    assert report.grades() == {("q1", "d0"): 3, ("q1", "d1"): 0, ("q2", "d2"): 2}
    assert report.complete and report.failed == 0


def test_the_async_api_is_awaited_in_the_callers_loop(tmp_path):
    with FakeOpenAI(grader) as s:
        async def cell():
            return (await Labeller(config(s, tmp_path)).label(PAIRS, QUERIES, PASSAGES),
                    threading.current_thread())
        report, thread = asyncio.run(cell())
    assert thread is threading.main_thread() and s.calls == 3
    assert report.grades()[("q2", "d2")] == 2


def test_run_sync_uses_a_worker_thread_only_when_a_loop_is_running():
    async def where():
        return threading.current_thread().name

    assert run_sync(where()) == threading.current_thread().name

    async def outer():
        return run_sync(where())
    assert asyncio.run(outer()).startswith("reljudge-label")

    async def boom():
        raise ValueError("from the job")

    async def outer_boom():
        return run_sync(boom())
    with pytest.raises(ValueError, match="from the job"):  # errors reach the caller as raised
        asyncio.run(outer_boom())


def test_label_report_prints_the_label_summary_and_frames_its_events(tmp_path):
    with FakeOpenAI(grader) as s:
        report = label_pairs(config(s, tmp_path), PAIRS, QUERIES, PASSAGES)
    text = str(report)
    assert text.splitlines()[0].split()[:3] == ["judge", "pairs", "x"]
    assert "failures: none" in text and "LabelEvent(" not in repr(report)
    assert "<table>" in report._repr_html_()
    import pandas as pd
    df = report.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert dict(zip(zip(df["qid"], df["docid"], strict=True), df["grade"], strict=True)) == \
        {("q1", "d0"): 3, ("q1", "d1"): 0, ("q2", "d2"): 2}
    assert df["raw"].str.startswith("final score:").all()
