"""Ctrl-C and the library: a labelling call from Python leaves the process's SIGINT handler
alone; only a caller that asks (the CLI, the pipeline runner) gets the labeller's handler."""

from __future__ import annotations

import asyncio
import signal

from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.testing import FakeOpenAI, Reply

QUERIES = {"q1": "what is the maternity leave policy?"}
PASSAGES = {"d0": {"text": "leave policy"}, "d1": {"text": "expenses"}}
PAIRS = [("q1", "d0"), ("q1", "d1")]


class SeesHandler:
    """A sink that notes the SIGINT handler in force each time events arrive."""

    def __init__(self) -> None:
        self.handlers: list[object] = []

    def add_events(self, events) -> int:
        self.handlers.append(signal.getsignal(signal.SIGINT))
        return len(events)


def _mine(signum, frame) -> None:  # pragma: no cover - never called
    raise AssertionError("not expected to run")


def _config(server, tmp_path) -> JudgeConfig:
    return JudgeConfig(model="fake-model", base_url=server.base_url, api_key="sk-test",
                       cache_dir=tmp_path / "cache", timeout=2.0, backoff=0.01)


def test_a_library_label_call_leaves_the_sigint_handler_as_it_found_it(tmp_path):
    before = signal.signal(signal.SIGINT, _mine)
    try:
        sink = SeesHandler()
        with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
            report = label_pairs(_config(s, tmp_path), PAIRS, QUERIES, PASSAGES, sink)
        assert report.labelled == 2
        assert sink.handlers and all(h is _mine for h in sink.handlers)  # also during the run
        assert signal.getsignal(signal.SIGINT) is _mine
    finally:
        signal.signal(signal.SIGINT, before)


def test_labeller_label_installs_the_ctrl_c_handler_only_when_asked(tmp_path):
    before = signal.signal(signal.SIGINT, _mine)
    try:
        with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
            lab = Labeller(_config(s, tmp_path))
            during = SeesHandler()
            asyncio.run(lab.label(PAIRS, QUERIES, PASSAGES, during))
            assert during.handlers and all(h is _mine for h in during.handlers)
            assert signal.getsignal(signal.SIGINT) is _mine
            asked = SeesHandler()
            lab = Labeller(_config(s, tmp_path / "again"))
            asyncio.run(lab.label(PAIRS, QUERIES, PASSAGES, asked, handle_sigint=True))
            assert asked.handlers and all(h is not _mine for h in asked.handlers)
            assert signal.getsignal(signal.SIGINT) is _mine  # given back as it was
    finally:
        signal.signal(signal.SIGINT, before)


def test_label_pairs_passes_the_ctrl_c_option_on(tmp_path):
    before = signal.signal(signal.SIGINT, _mine)
    try:
        asked = SeesHandler()
        with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
            label_pairs(_config(s, tmp_path), PAIRS, QUERIES, PASSAGES, asked,
                        handle_sigint=True)
        assert asked.handlers and all(h is not _mine for h in asked.handlers)
    finally:
        signal.signal(signal.SIGINT, before)
