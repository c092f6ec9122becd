"""Benchmark: does the ranking `reljudge estimate` reports agree with the human ranking at
least as well as the LLM-only ranking, and is a supported order ever wrong?
bench/ppi.py's ranking columns for stratified-pairs' DCG@10, every draw ranked.

    python bench/ppi_rank.py                      # 5 judges, 20 ranked draws per budget
    python bench/ppi_rank.py --judges 2 --rank-draws 5

"tau ... / reported": Kendall's tau-b against the all-human ranking of the ranking `estimate`
reports (the LLM-only order changed only where a paired PPI difference, Holm-corrected over
all pairs of runs, supports another; infer.ranking); "supported orders (wrong, fwer)": per
draw, their share the all-human scores contradict, and the share of draws with any.
Any bench/ppi.py option may follow.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.ppi import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--designs", "stratified-pairs", "--measures", "DCG@10", "--rank-draws",
                   "20", *sys.argv[1:]]))
