"""The named choices and limits the library and its command line share, in a module that
imports nothing: ``reljudge CMD --help`` builds its flags from them without loading numpy.

The modules that check them import them from here: ``metrics.ranking`` (and
``metrics.evaluate``) ``COMPAT``, ``io.prefs`` ``KINDS``, ``infer.sample`` ``DESIGNS``,
``store.events`` ``DERIVED``, ``assess.task`` ``ORDERS``, ``stats.significance``
``MAX_TRIALS``.
"""

#: whose rules ``evaluate`` follows where trec_eval's versions differ: trec_eval 10 (the
#: default) or trec_eval 9.0.8, which pytrec_eval and ir_measures embed
COMPAT = ("trec_eval-10", "trec_eval-9")
#: trec_eval's ``-R`` forms of judgments, beside its default qrels
KINDS = ("prefs", "qrels_prefs", "qrels_jg")
#: the sample designs (``infer.sample``)
DESIGNS = ("srs-queries", "srs-pairs", "stratified-pairs", "active")
#: how a derived source (calibrated judge, panel) votes: the grade its derivation's rule
#: recorded, or a rule applied to its distributions now
DERIVED = ("recorded", "mode", "median", "expected")
#: the order pairs are shown in: a query at a time (queries shuffled, then each query's
#: passages: TREC's practice), all pairs shuffled, or as the sample or pairs file lists them
ORDERS = ("query", "random", "given")
#: the most randomisation or bootstrap trials taken: p-values to 1e-6, seconds per comparison;
#: 10^10 ran for hours without a word
MAX_TRIALS = 1_000_000

#: the docs' page a message points to, by its title (mkdocs.yml's nav): an installed reljudge
#: has no docs/ folder
PPI_PAGE = "the reljudge docs: Scores from a few human labels"
