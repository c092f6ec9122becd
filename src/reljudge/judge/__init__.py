"""The judge: prompts, the LLM client, parsing, caching and the labeller.

Names are imported on first use, so that reading the judge's settings (``JudgeConfig``, as
the CLI and the pipeline do) does not import the openai SDK and the HTTP libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {"JudgeConfig": "config", "EndpointConfig": "config", "CallFailed": "failures", "FailureKind": "failures",
          "CostQuote": "report", "LabelReport": "report", "Labeller": "labeller",
          "label_pairs": "labeller", "Parsed": "parse", "parse_answer": "parse",
          "Template": "prompts", "builtin_names": "prompts", "load_template": "prompts"}

__all__ = ["CallFailed", "CostQuote", "EndpointConfig", "FailureKind", "JudgeConfig",
           "LabelReport", "Labeller", "Parsed", "Template", "builtin_names", "label_pairs", "load_template",
           "parse_answer"]

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.judge.config import EndpointConfig, JudgeConfig
    from reljudge.judge.failures import CallFailed
    from reljudge.judge.labeller import Labeller, label_pairs
    from reljudge.judge.parse import Parsed, parse_answer
    from reljudge.judge.prompts import Template, builtin_names, load_template
    from reljudge.judge.report import CostQuote, LabelReport
    from reljudge.labels import FailureKind


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'reljudge.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"reljudge.judge.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
