"""What a `reljudge label` process killed with SIGKILL leaves in its store (SQLite, or a real
PostgreSQL server): every answer it received in the spend ledger (--max-total-cost sees the
money a killed run spent), and every answer it had read as an event, at once (a dead
machine of a team store loses only its calls in flight: ``test_claims``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from reljudge.cli import main
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from tests.backends import BACKENDS, store_location
from tests.fork_support import reljudge

CONCURRENCY = 4  # the calls a killed run can have in flight: the bound on what is not seen
PAIRS = 60


def _answered(server: FakeOpenAI) -> int:
    """Requests the server has finished answering (received, no longer being answered)."""
    with server._lock:
        return len(server.requests) - server.inflight


def _label(server: FakeOpenAI, tmp_path, store: object) -> list[str]:
    """The arguments of a `reljudge label` of PAIRS pairs, after the program's name."""
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\twhat is the maternity leave policy?\n")
    passages = tmp_path / "passages.tsv"
    passages.write_text("".join(f"d{i}\tpassage number {i}\n" for i in range(PAIRS)))
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("".join(f"q1 d{i}\n" for i in range(PAIRS)))
    return ["label", "--queries", str(queries),
            "--passages", str(passages), "--pairs", str(pairs),
            "--store", str(store), "--model", "m",
            "--base-url", server.base_url, "--api-key", "k",
            "--cache-dir", str(tmp_path / "cache"), "--concurrency", str(CONCURRENCY),
            "--price-in", "1", "--price-out", "2", "--quiet"]


def _held_after(n: int, release: threading.Event):
    """A handler answering the first ``n`` requests at once and the others once released."""
    lock, seen = threading.Lock(), [0]

    def handler(req):
        with lock:
            seen[0] += 1
            first = seen[0] <= n
        if not first:
            release.wait(60)
        return Reply.text("final score: 2", delay=0.01)
    return handler


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow  # a SIGKILLed process, then a rerun
def test_kill_9_of_a_label_run_leaves_every_answer_it_received_in_the_ledger(
        request, tmp_path, backend, capsys):
    store = store_location(request, tmp_path, backend=backend)
    release = threading.Event()  # the calls after the 20th wait for the kill: in flight then
    with FakeOpenAI(_held_after(20, release)) as server:
        argv = _label(server, tmp_path, store)
        proc = reljudge(*argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while _answered(server) < 20 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # the answers sent reach the process
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        answered_at_kill = _answered(server)
        release.set()
        assert answered_at_kill == 20
        with LabelStore(store) as s:
            ((_, runs, killed_calls, *_),) = s.spend()
        assert runs == 1
        # every answer the server sent (and the process had half a second to read) is in the
        # ledger; the calls held in flight were never answered
        assert killed_calls >= answered_at_kill
        # the rerun in this process: the killed run is the process this test is about
        assert main(argv) == 0, capsys.readouterr().err
        asked = [r.user_text for r in server.requests]
    with LabelStore(store) as s:
        ((_, runs, calls, tokens_in, _, cost),) = s.spend()
        assert s.count() == PAIRS
    assert runs == 2
    assert calls >= len(asked) - CONCURRENCY  # the server's count, less the in-flight bound
    assert len(asked) - len(set(asked)) <= CONCURRENCY  # only calls in flight were asked twice
    assert cost == pytest.approx(calls * (100 * 1 + 10 * 2) / 1e6) and tokens_in == 100 * calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow  # a SIGKILLed process
def test_answers_reach_the_store_within_a_second_not_only_every_64(request, tmp_path, backend):
    store = store_location(request, tmp_path, backend=backend)
    release = threading.Event()  # the calls after the 5th wait: no event comes after them
    with FakeOpenAI(_held_after(5, release)) as server:
        proc = reljudge(*_label(server, tmp_path, store), stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while _answered(server) < 5 and time.time() < deadline:
                time.sleep(0.01)
            answered = time.time()
            stored = 0
            while stored < 5 and time.time() < answered + 5:
                time.sleep(0.1)
                with LabelStore(store) as s:
                    stored = s.count()
            waited = time.time() - answered
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            release.set()
    assert stored == 5, "the answers received did not reach the store"
    assert waited < 2.5  # about a second (FLUSH_SECONDS), plus this machine's slack
