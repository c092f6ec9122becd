"""A pytest plugin (``-p tests.deselected_support``): prints ``deselected ID`` for each test
that ``-m`` leaves out, so that one collection shows both sides of a mark expression."""

from __future__ import annotations

import pytest


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Print the tests left out."""
    for item in items:
        print(f"deselected {item.nodeid}")
