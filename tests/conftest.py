"""Shared fixtures: paths to the shared real data (skipped cleanly when absent), and the
fixtures several test modules use (their helpers are in tests/helpers.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# Bytecode. Where PYTHONDONTWRITEBYTECODE is set (some containers and CI images set it), every
# test process and every `reljudge` command a test starts would compile the package and the
# test modules from source again: about 9 s of CPU for each worker's collection, 0.2-0.5 s for
# each command. Their bytecode goes to .pytest_cache/pycache instead, so nothing is written
# beside the sources, which is what the setting asks for.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and sys.pycache_prefix is None:
    PYCACHE = str(ROOT / ".pytest_cache" / "pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = PYCACHE  # the commands and xdist workers started later
    sys.dont_write_bytecode = False
    sys.pycache_prefix = PYCACHE

# No test is timed: a loaded machine, or a neighbour on another xdist worker, must not fail an
# example for its speed (hypothesis's default deadline is 200 ms an example).
settings.register_profile("reljudge", deadline=None)
settings.load_profile("reljudge")

SHARED = ROOT.parent / "shared"
LLMJUDGE = SHARED / "data" / "llmjudge"
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def llmjudge() -> Path:
    """The shared TREC DL 2023 LLMJudge data folder; skips the test when it is absent."""
    if not (LLMJUDGE / "human" / "test.qrels").exists():
        pytest.skip("../shared/data/llmjudge is not present")
    return LLMJUDGE


@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    """One headless Chromium process for the session (tests/browser.py; skips without
    Debian's chromium)."""
    from tests.browser import Chromium, chromium_path

    chromium_path()
    process = Chromium(tmp_path_factory.mktemp("chromium") / "profile")
    yield process
    process.close()


@pytest.fixture
def browser(chromium):
    """A page in a browser context of its own (no cookies, storage or cache of another test's
    page), in the session's Chromium."""
    from tests.browser import Browser

    b = Browser(chromium)
    yield b
    b.close()


@pytest.fixture
def world(tmp_path):
    """A store with an LLM judge's labels on every pair, human truth, and two runs."""
    from tests.helpers import estimate_world

    return estimate_world(tmp_path)


@pytest.fixture
def labelled_example(tmp_path, monkeypatch):
    """The hr-handbook pipeline run against the scripted local server."""
    from tests.helpers import run_pipelines

    run_pipelines([tmp_path / "hr"], tmp_path / "cache", monkeypatch)
    return tmp_path / "hr"


@pytest.fixture(params=["python-path", "arrow-path"])
def both_readers(request, monkeypatch):
    """Run a test twice: on the small-file Python reader, and on the pyarrow fast path (forced
    on for small files; it hands irregular files back to the Python reader)."""
    import reljudge.io.trec as trec

    monkeypatch.setattr(trec, "FAST_MIN_BYTES", 0 if request.param == "arrow-path" else 1 << 62)
    return request.param


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the session (tests/pg.py; skips with one line where none
    can be started, fails under CI=true). Needs psycopg (the test extra)."""
    from tests.pg import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_server():
    """A real llama.cpp server with a small model for the session (tests/llama_server.py):
    ``.base_url`` and ``.model`` to label against. Skips without the llm-server extra (fails
    under CI=true)."""
    from tests.llama_server import LlamaServer

    server = LlamaServer()
    yield server
    server.stop()


#: fixtures that start a server or a browser: every test using one is slow
SLOW_FIXTURES = frozenset({"pg_server", "browser", "chromium", "llama_server"})


#: fixtures whose server takes long to start: under pytest-xdist their tests share one worker
#: (tests/schedule.py), so the session starts one server, not one per worker
ONE_WORKER_FIXTURES = frozenset({"llama_server"})


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow the tests that start PostgreSQL, Chromium or llama.cpp, directly
    (``pg_server``, ``browser``, ``llama_server``) or through a backend parameter
    (``"postgresql"``, tests/backends.py)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures or \
                any(isinstance(p, str) and p == "postgresql" for p in params):
            item.add_marker(pytest.mark.slow)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the workers' plan of which tests share a worker and which go
    first (tests/schedule.py)."""
    from tests.schedule import Schedule

    config.pluginmanager.register(Schedule(ONE_WORKER_FIXTURES), "reljudge-schedule")
