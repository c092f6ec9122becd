"""reljudge: an LLM as a relevance assessor, and trustworthy retrieval scores from its labels.

The front door: every call a notebook needs, one import away::

    import reljudge

    qrels = reljudge.read_qrels("human.qrels")
    runs = reljudge.read_runs(["bm25.run", "dense.run"])
    print(reljudge.evaluate(qrels, runs[0], ["nDCG@10", "P@5"]).mean())
    print(reljudge.compare(qrels, runs, ["nDCG@10"]))

Names are imported on first use, so that ``import reljudge`` (and every ``reljudge`` command)
stays quick: the LLM client, pyarrow and scipy load only when a call needs them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from reljudge.errors import (
    ConfigError,
    InputError,
    LLMError,
    MeasureError,
    ReljudgeError,
    StoreError,
)
from reljudge.grades import GRADE_MAX, GRADE_MIN
from reljudge.version import __version__

#: public name -> (module, name in that module)
_LAZY = {
    # plain data
    "Qrels": ("reljudge.trec_data", "Qrels"),
    "Run": ("reljudge.trec_data", "Run"),
    "LabelEvent": ("reljudge.labels", "LabelEvent"),
    # reading inputs
    "read_qrels": ("reljudge.io.trec", "read_qrels"),
    "read_judge": ("reljudge.io.label_files", "read_judge"),
    "read_run": ("reljudge.io.trec", "read_run"),
    "read_runs": ("reljudge.io.trec", "read_runs"),
    "write_qrels": ("reljudge.io.trec", "write_qrels"),
    "write_run": ("reljudge.io.trec", "write_run"),
    "read_queries": ("reljudge.io.texts", "read_queries"),
    "read_passages": ("reljudge.io.texts", "read_passages"),
    "read_pairs": ("reljudge.io.texts", "read_pairs"),
    "as_qrels": ("reljudge.io.coerce", "as_qrels"),
    "as_run": ("reljudge.io.coerce", "as_run"),
    # scoring
    "evaluate": ("reljudge.metrics.evaluate", "evaluate"),
    "evaluate_many": ("reljudge.metrics.evaluate", "evaluate_many"),
    "compare": ("reljudge.stats.compare", "compare"),
    # labels
    "LabelStore": ("reljudge.store", "LabelStore"),
    "build_pool": ("reljudge.pool", "build_pool"),
    "JudgeConfig": ("reljudge.judge.config", "JudgeConfig"),
    "label_pairs": ("reljudge.judge.labeller", "label_pairs"),
    "Labeller": ("reljudge.judge.labeller", "Labeller"),
    # trusting the labels
    "audit": ("reljudge.audit", "audit"),
    "draw_sample": ("reljudge.infer.sample", "draw"),
    "estimate": ("reljudge.infer.scores", "estimate"),
    "calibrate": ("reljudge.infer.derive", "calibrate_judge"),
    "probe": ("reljudge.probe", "probe"),
}

__all__ = [
    "ConfigError",
    "GRADE_MAX",
    "GRADE_MIN",
    "InputError",
    "JudgeConfig",
    "LLMError",
    "LabelEvent",
    "LabelStore",
    "Labeller",
    "MeasureError",
    "Qrels",
    "ReljudgeError",
    "Run",
    "StoreError",
    "__version__",
    "as_qrels",
    "as_run",
    "audit",
    "build_pool",
    "calibrate",
    "compare",
    "draw_sample",
    "estimate",
    "evaluate",
    "evaluate_many",
    "label_pairs",
    "probe",
    "read_judge",
    "read_pairs",
    "read_passages",
    "read_qrels",
    "read_queries",
    "read_run",
    "read_runs",
    "write_qrels",
    "write_run",
]

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.audit import audit
    from reljudge.infer.derive import calibrate_judge as calibrate
    from reljudge.infer.sample import draw as draw_sample
    from reljudge.infer.scores import estimate
    from reljudge.io.coerce import as_qrels, as_run
    from reljudge.io.label_files import read_judge
    from reljudge.io.texts import read_pairs, read_passages, read_queries
    from reljudge.io.trec import read_qrels, read_run, read_runs, write_qrels, write_run
    from reljudge.judge.config import JudgeConfig
    from reljudge.judge.labeller import Labeller, label_pairs
    from reljudge.labels import LabelEvent
    from reljudge.metrics.evaluate import evaluate, evaluate_many
    from reljudge.pool import build_pool
    from reljudge.probe import probe
    from reljudge.stats.compare import compare
    from reljudge.store import LabelStore
    from reljudge.trec_data import Qrels, Run


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'reljudge' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


class _FrontDoor(types.ModuleType):
    """This package: importing the subpackage ``reljudge.audit`` (``reljudge.probe``) sets the
    package's attribute ``audit`` (``probe``) to that subpackage; here the name stays the
    function of the same name, looked up on first use (so that importing the subpackage
    loads no more than it needs)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("audit", "probe") and isinstance(value, types.ModuleType):
            # __getattr__ finds the function when asked
            self.__dict__.pop(name, None)
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _FrontDoor
