"""The named choices and limits the library and its command line share, in a module that
imports nothing but ``typing``: ``reljudge CMD --help`` builds its flags from them without
loading numpy.

Each named set is a ``Literal`` type for signatures (``Compat``, ...) and the tuple of its
values for checks and ``--help`` (``COMPAT``, ...), the one derived from the other.
"""

from typing import Literal, get_args

#: whose rules ``evaluate`` follows where trec_eval's versions differ: trec_eval 10 (the
#: default) or trec_eval 9.0.8, which pytrec_eval and ir_measures embed
Compat = Literal["trec_eval-10", "trec_eval-9"]
COMPAT: tuple[Compat, ...] = get_args(Compat)
#: trec_eval's ``-R`` forms of judgments, beside its default qrels
Kind = Literal["prefs", "qrels_prefs", "qrels_jg"]
KINDS: tuple[Kind, ...] = get_args(Kind)
#: the sample designs (``infer.sample``)
Design = Literal["srs-queries", "srs-pairs", "stratified-pairs", "active"]
DESIGNS: tuple[Design, ...] = get_args(Design)
#: how a derived source (calibrated judge, panel) votes: the grade its derivation's rule
#: recorded, or a rule applied to its distributions when read
DerivedVote = Literal["recorded", "mode", "median", "expected"]
DERIVED: tuple[DerivedVote, ...] = get_args(DerivedVote)
#: the order pairs are shown in: a query at a time (queries shuffled, then each query's
#: passages: TREC's practice), all pairs shuffled, or as the sample or pairs file lists them
Order = Literal["query", "random", "given"]
ORDERS: tuple[Order, ...] = get_args(Order)
#: the paired significance tests (``stats.significance``)
Test = Literal["randomization", "t", "wilcoxon", "bootstrap"]
TESTS: tuple[Test, ...] = get_args(Test)
#: the multiple-comparison corrections (``stats.compare``): Holm, Benjamini-Hochberg, none
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)
#: the bootstrap intervals (``stats.bootstrap``)
CiMethod = Literal["percentile", "bca"]
CI_METHODS: tuple[CiMethod, ...] = get_args(CiMethod)
#: how several grades of one pair become one (``grades.aggregate_grades``)
Aggregate = Literal["majority", "mean", "median"]
AGGREGATES: tuple[Aggregate, ...] = get_args(Aggregate)
#: the most randomisation or bootstrap trials taken: p-values to 1e-6 in seconds per comparison
#: (10^10 would run for hours without a word of progress)
MAX_TRIALS = 1_000_000

#: the docs' page a message points to, by its title (mkdocs.yml's nav): an installed reljudge
#: has no docs/ folder
PPI_PAGE = "the reljudge docs: Scores from a few human labels"
