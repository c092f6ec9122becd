"""Benchmark: import 1,000,000 label events into the label store and export merged qrels.

    python bench/store.py              # 1,000,000 events
    python bench/store.py --events 100000
Half the events are human labels, half LLM labels of the same pairs (so the merge has work).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from reljudge.io.trec import write_qrels
from reljudge.store import LabelStore, import_labels


def main() -> None:
    """Generate, import, merge, export; print one table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=5_000)
    args = p.parse_args()
    half = args.events // 2
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in ("human", "llm"):
            grades = rng.integers(0, 4, half)
            with open(tmp / f"{name}.qrels", "w") as f:
                f.writelines(f"q{i % args.queries} 0 doc{i} {g}\n"
                             for i, g in enumerate(grades.tolist()))
        store = LabelStore(tmp / "labels.sqlite")
        t = time.perf_counter()
        for name in ("human", "llm"):
            import_labels(store, tmp / f"{name}.qrels", name, name)
        t_import = time.perf_counter() - t
        t = time.perf_counter()
        merged = store.merge("human-first")
        write_qrels(merged.qrels, tmp / "final.qrels")
        t_export = time.perf_counter() - t
        n = store.count()
        store.close()
        size = sum(f.stat().st_size for f in tmp.glob("labels.sqlite*"))
    print(f"{'step':<28} {'events':>10} {'seconds':>8} {'events/s':>10}")
    print(f"{'import (2 files)':<28} {n:>10,} {t_import:>8.2f} {n / t_import:>10,.0f}")
    print(f"{'merge human-first + export':<28} {n:>10,} {t_export:>8.2f} {n / t_export:>10,.0f}")
    print(f"store file size: {size / 1e6:.1f} MB ({size / n:.0f} bytes per event); "
          f"final labels: {len(merged.labels):,}")


if __name__ == "__main__":
    main()
