"""Benchmark: the active pair design against stratified-pairs at the same budget:
bench/ppi.py's rows for those two designs (its "width / strat" column is the ratio).

    python bench/ppi_active.py                    # 5 judges, both system kinds
    python bench/ppi_active.py --judges 2 --slow-draws 10 --systems simulated

Any bench/ppi.py option may follow (a later --designs or --measures replaces these).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.ppi import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--designs", "stratified-pairs", "active", "--measures", "DCG@10", "P@10",
                   *sys.argv[1:]]))
