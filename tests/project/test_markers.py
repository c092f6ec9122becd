"""The slow marker: which tests `python -m pytest -q -m "not slow"` leaves out without a mark
written on them (tests/conftest.py marks the users of pg_server, browser and the postgresql
backend)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
#: none of these tests carries a hand-written slow mark
FILES = ["tests/store/test_pg_server.py", "tests/judge/test_claims.py", "tests/report/test_browser.py"]


def collected(*args: str) -> tuple[list[str], list[str]]:
    """The test ids pytest collects with these arguments, in a fresh process: those it keeps
    and those its ``-m`` leaves out."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-s",
                           "-p", "no:cacheprovider", "-p", "tests.deselected_support", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    return ([line for line in lines if "::" in line and not line.startswith("deselected ")],
            [line.split(" ", 1)[1] for line in lines if line.startswith("deselected ")])


@pytest.mark.slow  # a pytest process
def test_postgresql_and_chromium_tests_are_slow_without_a_hand_written_mark():
    fast, slow = collected("-m", "not slow", *FILES)  # what "not slow" leaves out is slow
    lease = "tests/judge/test_claims.py::test_a_claim_keeps_an_item_from_other_owners_until_its_lease"
    assert f"{lease}_runs_out[sqlite]" in fast and f"{lease}_runs_out[postgresql]" in slow
    assert [t for t in fast if "postgresql" in t or "pg_server" in t or "browser" in t] == []
    assert any(t.startswith("tests/store/test_pg_server.py::") for t in slow)  # uses pg_server
    assert any(t.startswith("tests/report/test_browser.py::") for t in slow)  # uses browser
