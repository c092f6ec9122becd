"""The judge: prompts, the LLM client, parsing, caching and the labeller."""

from reljudge.judge.config import JudgeConfig
from reljudge.judge.failures import CallFailed, FailureKind
from reljudge.judge.labeller import Estimate, Labeller, LabelReport, label_pairs
from reljudge.judge.parse import Parsed, parse_answer
from reljudge.judge.prompts import Template, builtin_names, load_template

__all__ = ["CallFailed", "Estimate", "FailureKind", "JudgeConfig", "LabelReport", "Labeller", "Parsed", "Template",
           "builtin_names", "label_pairs", "load_template", "parse_answer"]
