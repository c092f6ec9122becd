"""Test helpers that users may reuse: a scriptable OpenAI-compatible server on 127.0.0.1.

Each name is imported from its module on first use, so that ``python -m
reljudge.testing.fake_openai`` runs that module once (imported here first, runpy would warn).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.testing.fake_openai import FakeOpenAI, Reply, chat_reply
    from reljudge.testing.graders import hash_grader
    from reljudge.testing.synthetic import synthetic_runs

#: each public name -> the module of this package that holds it
_HOMES = {"FakeOpenAI": "fake_openai", "Reply": "fake_openai", "chat_reply": "fake_openai",
          "synthetic_runs": "synthetic", "hash_grader": "graders"}

__all__ = ["FakeOpenAI", "Reply", "chat_reply", "hash_grader", "synthetic_runs"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"reljudge.testing.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'reljudge.testing' has no attribute {name!r}")
