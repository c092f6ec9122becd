"""Several labelling processes on one store pay once per pair: each claims the pairs it is about
to send (a lease it renews), skips those another live process holds, and takes over those of a
process that was killed once its lease runs out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from tests.backends import BACKENDS, store_location
from tests.fork_support import PIPE, python

ITEMS = [("q1", f"d{i}", 0) for i in range(6)]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with LabelStore(store_location(request, tmp_path)) as s:
        yield s


def test_a_claim_keeps_an_item_from_other_owners_until_its_lease_runs_out(store):
    since = time.time()
    got, held, settled = store.claim("judge", "A", ITEMS[:4], lease=30, since=since)
    assert (got, held, settled) == (ITEMS[:4], [], [])
    got, held, settled = store.claim("judge", "B", ITEMS[2:], lease=30, since=since)
    assert got == ITEMS[4:] and held == ITEMS[2:4] and settled == []
    # A stores d0 (graded) and d1 (failed) and releases them; A's d2, d3 expire
    store.add_events([LabelEvent("q1", "d0", 2, "llm", "judge"),
                      LabelEvent("q1", "d1", None, "llm", "judge", failure="HTTP 500",
                                 failure_kind="http_status")])
    store.release_claims("A", ITEMS[:2])
    store.conn.execute("UPDATE claims SET expires = 0 WHERE owner = 'A'")
    got, held, settled = store.claim("judge", "B", ITEMS[:4], lease=30, since=since)
    assert got == ITEMS[2:4] and held == []  # the expired ones are taken over
    assert settled == [(ITEMS[0], True), (ITEMS[1], False)]  # graded / answered elsewhere
    assert [(s, o, n) for s, o, n in store.live_claims()] == [("judge", "B", 4)]
    assert store.renew_claims("B", 60) == 4
    store.release_claims("B")
    assert store.live_claims() == []


WORKER = """
import sys
from reljudge.judge import JudgeConfig, label_pairs
from reljudge.store import LabelStore
base_url, cache, db, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pairs = [(f"q{i % 40}", f"d{i}") for i in range(n)]
queries = {f"q{i}": f"query {i}" for i in range(40)}
passages = {f"d{i}": f"passage number {i}" for i in range(n)}
cfg = JudgeConfig(model="m", base_url=base_url, api_key="k", cache_dir=cache, concurrency=4,
                  claim_lease=1.5, max_attempts=1)
with LabelStore(db) as store:
    report = label_pairs(cfg, pairs, queries, passages, store)
print("done", report.labelled, report.already_done, report.complete, flush=True)
"""

#: WORKER that says "ready" once its store is open and starts labelling when it reads a line:
#: processes told at once claim their first items at once (each a fork of a process that has
#: imported what labelling imports: tests/fork_support.py)
TOGETHER = WORKER.replace("with LabelStore(db) as store:\n", """
with LabelStore(db) as store:
    print("ready", flush=True)
    sys.stdin.readline()
""")


# the sizes: a claim that reads before it locks (SQLite's deferred BEGIN) fails 3 of 3 runs of
# 300 pairs, started together; PostgreSQL without its advisory lock, 2 of 2 runs of 2,000 pairs
# but 1 of 3 of 500, started together or not
@pytest.mark.parametrize("backend, n", [("sqlite", 300), ("postgresql", 2000)])
@pytest.mark.slow  # four processes, one SIGKILLed
def test_four_processes_one_killed_pay_once_per_pair(request, tmp_path, backend, n):
    """4 processes started together, 300 pairs (2,000 on a PostgreSQL store, on a real
    server), one killed with SIGKILL mid-run: the server answers every pair once, plus at most
    the killed process's calls in flight; each pair gets one grade."""

    def answer(req):
        i = int(req.user_text.rsplit("passage number ", 1)[1].split()[0])
        return Reply.text(f"reasoning\n##final score: {i % 4}", delay=0.02)

    db = str(store_location(request, tmp_path, backend=backend))
    LabelStore(db).close()
    with FakeOpenAI(answer) as server:
        procs = [python(TOGETHER, server.base_url, str(tmp_path / "cache"), db, str(n),
                        stdin=PIPE, stdout=PIPE, stderr=PIPE) for _ in range(4)]
        assert [p.stdout.readline() for p in procs] == ["ready\n"] * 4
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        server.wait_for_calls(n // 4, 120)
        os.kill(procs[0].pid, signal.SIGKILL)
        outs = [p.communicate(timeout=180) for p in procs]
        calls = server.calls
    assert procs[0].returncode == -9
    assert [p.returncode for p in procs[1:]] == [0, 0, 0], outs
    assert all(o[0].split()[-1] == "True" for o in outs[1:]), outs  # each says complete
    assert n <= calls <= n + 4, calls  # the killed process had at most 4 calls in flight
    with LabelStore(db) as store:
        graded = [(e.qid, e.docid) for e in store.events() if e.grade is not None]
        assert len(graded) == len(set(graded)) == n  # every pair graded, none twice
        assert store.live_claims() == []  # the survivors released theirs; the dead one's ran out


def test_claims_of_an_ended_process_of_this_machine_are_taken_over_at_once(store):
    import socket

    from reljudge.judge.claiming import owner_gone

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    gone_owner = f"{socket.gethostname()}:{dead}:cafe0000"
    alive_owner = f"{socket.gethostname()}:{os.getppid()}:beef0000"
    elsewhere = f"another-host-{socket.gethostname()}:{dead}:cafe0000"
    assert owner_gone(gone_owner) and not owner_gone(alive_owner)
    assert not owner_gone(elsewhere)  # another machine: only its lease says it ended
    since = time.time()
    store.claim("judge", gone_owner, ITEMS[:2], lease=60, since=since)
    store.claim("judge", elsewhere, ITEMS[2:4], lease=60, since=since)
    got, held, _ = store.claim("judge", "me", ITEMS[:4], lease=60, since=since, gone=owner_gone)
    assert got == ITEMS[:2] and held == ITEMS[2:4]


#: WORKER with a cache of its own (another machine's) and an API key that tells it apart
MACHINE = WORKER.replace('api_key="k"', 'api_key=sys.argv[5]')


@pytest.mark.slow  # three processes, one SIGKILLed
def test_a_machine_killed_mid_run_leaves_only_its_calls_in_flight_to_ask_again(tmp_path):
    """3 machines (each its own answer cache) on one store, one killed once it has made 40
    calls: every answer it had read is in the store, so the others ask again only the calls it
    had in flight (at most its concurrency, 4)."""
    import collections
    import threading

    n = 300
    asked: collections.Counter = collections.Counter()
    by_key: collections.Counter = collections.Counter()
    busy = threading.Event()  # the first machine has made 40 calls
    lock = threading.Lock()

    def answer(req):
        i = int(req.user_text.rsplit("passage number ", 1)[1].split()[0])
        with lock:
            asked[i] += 1
            by_key[req.headers["authorization"]] += 1
            if by_key["Bearer k0"] >= 40:
                busy.set()
        return Reply.text(f"reasoning\n##final score: {i % 4}", delay=0.1)

    db = str(tmp_path / "team.sqlite")
    LabelStore(db).close()
    with FakeOpenAI(answer) as server:
        procs = [python(MACHINE, server.base_url, str(tmp_path / f"cache{k}"), db, str(n),
                        f"k{k}", stdout=PIPE, stderr=PIPE) for k in range(3)]
        assert busy.wait(120), "the first machine never made 40 calls"
        os.kill(procs[0].pid, signal.SIGKILL)
        outs = [p.communicate(timeout=180) for p in procs]
    assert procs[0].returncode == -9
    assert [p.returncode for p in procs[1:]] == [0, 0], outs
    again = sorted(i for i, times in asked.items() if times > 1)
    assert len(asked) == n and len(again) <= 4, (sum(asked.values()), again)
    with LabelStore(db) as store:
        graded = [(e.qid, e.docid) for e in store.events() if e.grade is not None]
        assert len(graded) == len(set(graded)) == n
