"""Can the judge be gamed? Probes of a judge's gullibility (``reljudge probe``).

From known grades, ``build`` makes control pairs: known non-relevant passages altered by a
kind of ``kinds`` (the query inserted, the rubric echoed, an instruction to the assessor,
word salad...), and known relevant ones padded; ``run`` asks the judge about them through the
``Labeller`` and keeps them in the store's probe tables, apart from every label; ``analysis``
reports flip rates with Wilson intervals, exact McNemar tests and what a run could gain by
the exploit.
"""

from reljudge.probe.analysis import KindResult, ProbeReport, RunGain
from reljudge.probe.kinds import DEFAULT_KINDS, KINDS
from reljudge.probe.run import probe

__all__ = ["DEFAULT_KINDS", "KINDS", "KindResult", "ProbeReport", "RunGain", "probe"]
