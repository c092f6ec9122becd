"""Ctrl-C and the library: a labelling call from Python leaves the process's SIGINT handler
alone; only a caller that asks (the CLI, the pipeline runner) gets the labeller's handler."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.testing import FakeOpenAI, Reply
from tests.fork_support import PIPE, reljudge

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


# -- Ctrl-C in the command line, against an endpoint that answers slowly or not at all ---------
N_PAIRS = 12


def _label_inputs(tmp_path):
    """queries, passages and pairs files of N_PAIRS pairs."""
    (tmp_path / "q.tsv").write_text("q1\twhat is the leave policy?\n")
    (tmp_path / "p.jsonl").write_text("".join(
        json.dumps({"docid": f"d{i}", "text": f"passage {i}"}) + "\n" for i in range(N_PAIRS)))
    (tmp_path / "pairs.txt").write_text("".join(f"q1 d{i}\n" for i in range(N_PAIRS)))


def _label_args(tmp_path, server, *flags) -> list[str]:
    """The arguments of a `reljudge label` of N_PAIRS pairs, after the program's name."""
    _label_inputs(tmp_path)
    return ["label", "--queries", str(tmp_path / "q.tsv"), "--passages",
            str(tmp_path / "p.jsonl"), "--pairs", str(tmp_path / "pairs.txt"), "--store",
            str(tmp_path / "s.sqlite"), "--model", "fake-model", "--base-url", server.base_url,
            "--cache-dir", str(tmp_path / "cache"), "--quiet", *flags]


def _start_label(tmp_path, server, *flags, fresh: bool = False):
    """`reljudge label` in a child process that handles SIGINT as a terminal's would (a
    runner started in the background ignores SIGINT, and the child would inherit that):
    a fresh ``python -m reljudge`` (``fresh``), else a fork of a process that has imported
    reljudge (tests/fork_support.py), for the tests about a run, not its start-up."""
    args = _label_args(tmp_path, server, *flags)
    if fresh:
        ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "reljudge", *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finally:
            signal.signal(signal.SIGINT, ignored)
    else:
        proc = reljudge(*args, stdout=PIPE, stderr=PIPE)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    return proc, lines, reader


def _until(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _hanging_after(answered: int, gate: threading.Event):
    """A handler that answers the first ``answered`` requests, then holds each one until the
    gate opens (a busy one-slot server)."""
    count = itertools.count()

    def handler(req):
        if next(count) >= answered:
            gate.wait(60)
        return Reply.text("final score: 2")
    return handler


def _graded(tmp_path) -> int:
    from reljudge.store import LabelStore

    with LabelStore(tmp_path / "s.sqlite", create=False, readonly=True) as store:
        return sum(1 for e in store.events() if e.grade is not None)


@contextlib.contextmanager
def _label_on_hung_server(tmp_path, answered: int, *flags):
    """`reljudge label` against a server that answers ``answered`` calls and holds the rest:
    (server, process, its stderr lines so far); the held calls are let go at the end."""
    gate = threading.Event()
    with FakeOpenAI(_hanging_after(answered, gate)) as server:
        proc, lines, reader = _start_label(tmp_path, server, *flags)
        try:
            yield server, proc, lines
            reader.join(5)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()


@pytest.mark.slow  # a SIGINTed process
def test_first_ctrl_c_says_what_it_waits_for_and_the_second_stops_now_with_exit_3(tmp_path):
    with _label_on_hung_server(tmp_path, 3, "--concurrency", "4", "--timeout", "50") as (
            server, proc, lines):
        assert _until(lambda: server.calls >= 7), "the calls never hung"
        assert _until(lambda: _stored(tmp_path) >= 3), "the answers were never stored"
        proc.send_signal(signal.SIGINT)
        said = _until(lambda: any("waiting for 4 call(s) in flight" in x for x in lines), 5)
        assert said, lines
        assert server.base_url in "".join(lines) and "Ctrl-C again" in "".join(lines)
        calls = server.calls
        time.sleep(1.0)
        assert server.calls == calls  # no call started after the first Ctrl-C
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        proc.wait(30)
        took = time.monotonic() - start
    err = "".join(lines)
    assert proc.returncode == 3, err
    assert took < 10, took  # not the 50 s the calls in flight could take
    assert "Traceback" not in err and "abandoned" in err
    assert _graded(tmp_path) == 3  # every answer received is in the store


@pytest.mark.slow  # a SIGINTed process
def test_first_ctrl_c_stops_retries_and_the_run_ends_with_exit_3_not_the_breakers_2(tmp_path):
    """Calls that time out are retried (backoff 3 s); after Ctrl-C no attempt starts, the
    waits end, and the failures that follow do not turn the stop into a fatal one."""
    with _label_on_hung_server(tmp_path, 1, "--concurrency", "6", "--timeout", "1",
                               "--backoff", "3") as (server, proc, lines):
        assert _until(lambda: server.calls >= 1 + 6 + 1), "no call was retried"
        proc.send_signal(signal.SIGINT)
        assert _until(lambda: any("Ctrl-C: stopping" in x for x in lines), 5), lines
        calls = server.calls
        proc.wait(30)
        assert server.calls == calls  # no retry after the first Ctrl-C
    err = "".join(lines)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "stopped:" not in err


def _stored(tmp_path) -> int:
    """Graded events in the store so far (0 before it exists)."""
    if not (tmp_path / "s.sqlite").exists():
        return 0
    try:
        return _graded(tmp_path)
    except Exception:  # the store is being created
        return 0


@pytest.mark.slow  # a SIGINTed process
def _wait_until_loaded(pid: int, library: str, timeout: float = 60) -> None:
    """Wait until process ``pid`` has mapped a shared library whose path holds ``library``."""
    deadline = time.monotonic() + timeout
    while library not in Path(f"/proc/{pid}/maps").read_text():
        assert time.monotonic() < deadline, f"{library} not loaded in {timeout} s"
        time.sleep(0.005)


def test_ctrl_c_during_start_up_exits_130_without_a_traceback(tmp_path):
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as server:
        proc, lines, reader = _start_label(tmp_path, server, fresh=True)
        # inside reljudge's start-up (numpy loaded, the handlers' imports under way), long
        # before the first call; the interpreter's own start-up is no part of the guarantee
        _wait_until_loaded(proc.pid, "_multiarray_umath")
        assert not server.gets and not server.calls
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        reader.join(5)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


def test_most_calls_timing_out_on_a_local_server_says_to_lower_concurrency(tmp_path):
    """A one-slot server (each answer 0.2 s, one at a time) sent 8 calls at once with a
    timeout of 0.5 s: most time out, and one warning names the flag to lower."""
    slot = threading.Lock()

    def one_slot(req):
        with slot:
            time.sleep(0.2)
        return Reply.text("final score: 2")

    passages = {f"d{i}": {"text": f"passage {i}"} for i in range(N_PAIRS)}
    pairs = [("q1", d) for d in passages]
    warnings: list[str] = []
    with FakeOpenAI(one_slot) as s:
        config = JudgeConfig(model="fake-model", base_url=s.base_url, api_key="sk-test",
                             cache_dir=tmp_path / "cache", timeout=0.5, backoff=0.01,
                             max_attempts=1, concurrency=8, breaker_after=0)
        lab = Labeller(config, on_warning=warnings.append)
        report = asyncio.run(lab.label(pairs, QUERIES, passages))
    assert report.failure_reasons.get("timeout", 0) > report.labelled
    said = [w for w in warnings if "time out" in w]
    assert len(said) == 1, warnings
    assert "--concurrency" in said[0] and s.base_url in said[0]
