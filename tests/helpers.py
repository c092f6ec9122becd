"""Helpers shared by several test modules (no test imports another test module)."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, hash_grader


def unavailable(reason: str) -> NoReturn:
    """Skip the test because something it needs is not installed here; under CI=true (where
    .ci/run installs everything the tests need) fail instead: a missing install step shows."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: everything the tests need must be installed)",
                    pytrace=False)
    pytest.skip(reason)


# -- the hr-handbook pipeline against a scripted judge (test_pipeline, test_report, test_docs)
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hr-handbook"

#: the pipeline tests' scripted judge: the grade follows from the passage text
grader = partial(hash_grader, preamble="Intent: find the policy.\nM: 2\nT: 3\n", delay=0.01)


def run_pipelines(dests, cache, monkeypatch) -> None:
    """Copy the hr-handbook example to each folder and run it, all against one scripted
    server (its address is part of the answer cache's key) and one cache."""
    monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(cache))
    with FakeOpenAI(grader) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_MODEL", "fake-judge")
        for dest in dests:
            shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("out"))
            assert main(["run", str(dest / "pipeline.toml"), "--quiet"]) == 0


# -- a store with a sample and a running `reljudge assess` (test_assess*)
EVIL = ('<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
        "<b>bold?</b> & plain text after the tags")
ROOT = Path(__file__).resolve().parent.parent


def add_sample(store: LabelStore, name: str, pairs: list[tuple[str, str]],
               unit: str = "pair") -> None:
    """Insert a sample the way `reljudge sample` would (rows, in draw order)."""
    store.conn.execute("INSERT INTO samples (name, unit, design, seed, budget, created_at) "
                       "VALUES (?, ?, 'srs-pairs', 1, ?, 0)", (name, unit, len(pairs)))
    sid = store.conn.execute("SELECT id FROM samples WHERE name = ?", (name,)).fetchone()[0]
    for pos, (q, d) in enumerate(pairs):
        store.conn.execute(
            "INSERT INTO sample_items (sample, q, d, position, prob) VALUES "
            "(?, (SELECT id FROM queries WHERE qid = ?), (SELECT id FROM passages WHERE docid = ?),"
            " ?, 0.25)", (sid, q, d, pos))


PAIRS = [("q1", "d0"), ("q1", "d1"), ("q1", "evil"), ("q1", "d3"), ("q2", "d4"), ("q2", "d5"),
         ("q2", "d6"), ("q3", "d7"), ("q3", "d8"), ("q3", "d9")]


def make_store(path: Path, pairs: list[tuple[str, str]] = PAIRS) -> Path:
    """A store with query and passage texts, a few LLM labels, and sample 's1' of ``pairs``."""
    with LabelStore(path) as store:
        store.add_queries({**{q: f"query {q}" for q, _ in pairs},
                           "q1": "how do cats purr", "q2": "height of <b>Everest</b>",
                           "q3": "what is a relevance judgment"})
        store.add_passages({d: EVIL if d == "evil" else
                            f"Passage {d}. " + "Some words about the topic. " * 12
                            for _, d in pairs})
        store.add_events([LabelEvent("q1", "d0", 2, "llm", "gpt-judge"),
                          LabelEvent("q2", "d4", 0, "llm", "gpt-judge")])
        add_sample(store, "s1", pairs)
    return path


@contextmanager
def assess_server(*args: str, timeout: float = 60.0, port: int = 0, fresh: bool = False):
    """`reljudge assess ARGS --port PORT` in its own process; yields (url, process, first
    lines). Pairs are shown as the sample lists them (``--order given``) unless ARGS give an
    order, so that tests can name the pair at each position. The process is forked from a
    warm one (tests/fork_support.py); ``fresh``: ``python -m reljudge``, start-up and all."""
    from tests.fork_support import DEVNULL, PIPE, Forked, reljudge

    if "--order" not in args and "--adjudicate" not in args:
        args = (*args, "--order", "given")
    argv = ["assess", *args, "--port", str(port)]
    proc: subprocess.Popen | Forked
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if fresh:
        proc = subprocess.Popen([sys.executable, "-m", "reljudge", *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env, cwd=ROOT)
    else:
        proc = reljudge(*argv, stdout=PIPE, stderr=DEVNULL, env=env, cwd=ROOT)
    lines: list[str] = []
    got: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [got.put(x) for x in proc.stdout], daemon=True).start()
    try:
        deadline = time.monotonic() + timeout
        url = None
        while url is None or ("token=" in url and not lines[-1].startswith("token:")):
            try:
                line = got.get(timeout=0.2)
            except queue.Empty:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"assess did not start: {lines}") from None
                continue
            lines.append(line.rstrip("\n"))
            if line.startswith("open "):
                url = line.split()[1]
        yield url, proc, lines
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:  # generous: on a loaded 2-core machine the first start can be slow
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- a store with a judge's labels, human truth and two runs (test_cli_estimate, test_frames)
NQ, ND = 30, 12


def estimate_world(tmp_path: Path):
    """A store with an LLM judge's labels on every pair, human truth, and two runs."""
    rng = np.random.default_rng(0)
    truth = {(f"q{q}", f"d{q}-{d}"): int(rng.integers(0, 4)) for q in range(NQ)
             for d in range(ND)}
    judge = {p: int(min(3, g + rng.binomial(1, 0.5))) for p, g in truth.items()}  # lenient
    store_path = tmp_path / "labels.sqlite"
    with LabelStore(store_path) as store:
        store.add_grades([(q, d, g) for (q, d), g in judge.items()], "llm", "judge-a")
        store.add_queries({f"q{q}": f"query {q}" for q in range(NQ)})
    runs = []
    for i, noise in enumerate((0.5, 2.0)):
        qs, ds, ss = [], [], []
        for (q, d), g in truth.items():
            qs.append(q)
            ds.append(d)
            ss.append(g + noise * rng.normal())
        path = tmp_path / f"r{i}.run"
        path.write_text("".join(f"{q} Q0 {d} 0 {s:.6f} sys{i}\n"
                                for q, d, s in zip(qs, ds, ss, strict=True)))
        runs.append(path)
    return tmp_path, store_path, truth, runs


def grade_sample(store_path, truth, name):
    """Grade sample ``name`` with the human truth, as annotator ann1."""
    with LabelStore(store_path) as store:
        pairs = store.sample_pairs(name)
        store.add_events([LabelEvent(q, d, truth[(q, d)], "human", "ann1",
                                     meta={"sample": name}) for q, d in pairs])


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write ``text`` to the file ``name`` in ``tmp_path``; its path."""
    p = tmp_path / name
    p.write_text(text)
    return p


def v1_store(path: Path) -> Path:
    """A store as reljudge's first schema wrote it: one human grade."""
    import sqlite3

    from reljudge.store.schema import V1

    conn = sqlite3.connect(path)
    conn.executescript(V1)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute("INSERT INTO queries (qid) VALUES ('q')")
    conn.execute("INSERT INTO passages (docid) VALUES ('a')")
    conn.execute("INSERT INTO sources (kind, name) VALUES ('human', 'ann')")
    conn.execute("INSERT INTO events (q, d, source, grade, created_at) VALUES (1, 1, 1, 2, 0)")
    conn.commit()
    conn.close()
    return path


def store_at_version(location, version: int, events, monkeypatch) -> None:
    """A store (a SQLite path or a PostgreSQL URL) as a reljudge of schema ``version`` made
    it: created by the migrations up to that version only, holding ``events``."""
    from reljudge.store import LabelStore, schema

    with monkeypatch.context() as m:
        m.setattr(schema, "SCHEMA_VERSION", version)
        # that reljudge wrote failures without a kind (a version 9 store infers them)
        m.setattr("reljudge.store.events.check_event", lambda event, where: None)
        with LabelStore(location) as s:
            assert s.db.version() == version
            s.add_events(events)


def kill_after_calls(server, argv: list[str], calls: int, wait: float, **popen) -> int:
    """Start ``argv``; SIGKILL it once ``server`` has had ``calls`` calls (or after ``wait``
    seconds); the server's count of calls at the kill."""
    proc = subprocess.Popen(argv, **popen)
    server.wait_for_calls(calls, wait)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return server.calls


class Lazy:
    """A module imported at the first read of one of its names: how a test module holds a
    heavy reference library (scikit-learn, scipy.stats, pandas, the openai SDK), so that
    collecting the suite, which every xdist worker does in full, imports it only in the
    worker that runs a test using it (sklearn.metrics alone is 2.6 s of CPU)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        # pytest looks for its markers (private names) on every name of a test module
        if attr.startswith("_"):
            raise AttributeError(attr)
        import importlib

        return getattr(importlib.import_module(self._name), attr)
