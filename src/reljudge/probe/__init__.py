"""Can the judge be gamed? Probes of a judge's gullibility (``reljudge probe``).

From known grades, ``build`` makes control pairs: known non-relevant passages altered by a
kind of ``kinds`` (the query inserted, the rubric echoed, an instruction to the assessor,
word salad...), and known relevant ones padded; ``run`` asks the judge about them through the
``Labeller`` and keeps them in the store's probe tables, apart from every label; ``analysis``
reports flip rates with Wilson intervals, exact McNemar tests and what a run could gain by
the exploit; ``stored`` reads a store's probes back for ``audit`` and ``report``. Names load
on first use: ``reljudge probe --help`` needs the kinds only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {"probe": "reljudge.probe.run", "ProbeReport": "reljudge.probe.analysis",
         "KindResult": "reljudge.probe.analysis", "RunGain": "reljudge.probe.analysis",
         "KINDS": "reljudge.probe.kinds", "DEFAULT_KINDS": "reljudge.probe.kinds"}

__all__ = ["DEFAULT_KINDS", "KINDS", "KindResult", "ProbeReport", "RunGain", "probe"]

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.probe.analysis import KindResult, ProbeReport, RunGain
    from reljudge.probe.kinds import DEFAULT_KINDS, KINDS
    from reljudge.probe.run import probe


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'reljudge.probe' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
