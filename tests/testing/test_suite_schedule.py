"""The suite's schedule under pytest-xdist (tests/schedule.py), on a small suite of its own
run by two workers: the tests of a one-worker fixture share one worker and its one session
fixture, a module fixture is set up once, and the slow tests start first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import ROOT

CONFTEST = f"""
import json, os, sys

import pytest

sys.path.insert(0, {str(ROOT)!r})
from tests.schedule import Schedule


def pytest_configure(config):
    config.pluginmanager.register(Schedule(frozenset({{"server"}})), "reljudge-schedule")


def note(what):
    with open(os.environ["NOTES"], "a") as f:
        f.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER"), what]) + "\\n")


@pytest.fixture(scope="session")
def server():
    note("server")


@pytest.fixture(scope="module")
def shared():
    note("shared")


@pytest.fixture(autouse=True)
def each(request):
    note(request.node.name)
"""

SERVED = "".join(f"def test_served_{i}(server):\n    pass\n\n\n" for i in range(4))
SHARING = "".join(f"def test_sharing_{i}(shared):\n    pass\n\n\n" for i in range(4))
ALONE = "".join(f"def test_alone_{i}():\n    pass\n\n\n" for i in range(8))
SLOW = "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    pass\n"


@pytest.mark.slow  # a pytest run of three processes
def test_a_one_worker_fixture_and_a_module_fixture_are_set_up_once_and_slow_tests_go_first(
        tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    for name, text in (("a_served", SERVED), ("b_alone", ALONE), ("c_sharing", SHARING),
                       ("d_served", SERVED.replace("served", "served_too")),
                       ("e_slow", SLOW)):
        (suite / f"test_{name}.py").write_text(text)
    notes = tmp_path / "notes.jsonl"
    # pytest-xdist only: the other installed plugins (hypothesis, anyio, ...) have nothing to
    # do in this suite, and each of its three processes would load them
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "xdist.plugin", "-n", "2", "--dist", "loadgroup", str(suite)],
                          cwd=suite, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NOTES": str(notes),
                               "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [tuple(json.loads(line)) for line in notes.read_text().splitlines()]
    assert Counter(what for _, what in seen)["server"] == 1
    assert Counter(what for _, what in seen)["shared"] == 1
    served = {w for w, what in seen if what.startswith(("test_served", "server"))}
    assert len(served) == 1, seen  # one worker, one server
    sharing = {w for w, what in seen if what.startswith(("test_sharing", "shared"))}
    assert len(sharing) == 1, seen
    firsts = {next(what for w, what in seen if w == worker and what.startswith("test_"))
              for worker in ("gw0", "gw1")}
    assert "test_slow" in firsts, seen  # collected last, started first
