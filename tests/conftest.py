"""Shared fixtures: paths to the shared real data (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
LLMJUDGE = SHARED / "data" / "llmjudge"
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def llmjudge() -> Path:
    """The shared TREC DL 2023 LLMJudge data folder; skips the test when it is absent."""
    if not (LLMJUDGE / "human" / "test.qrels").exists():
        pytest.skip("../shared/data/llmjudge is not present")
    return LLMJUDGE


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium page with its own profile (tests/browser.py; skips without
    Debian's chromium)."""
    from tests.browser import Browser, chromium_path

    chromium_path()
    b = Browser(tmp_path / "profile")
    yield b
    b.close()
