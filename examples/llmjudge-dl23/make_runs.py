"""Write 8 synthetic runs (top 20 per query) from the NIST labels, deterministically.

They are NOT TREC DL 2023 submissions: each ranks the judged passages by grade plus noise
of growing spread, mixed with unjudged filler, so that the audit can show how LLM labels
would reorder systems of known quality. Run: python make_runs.py
"""

from pathlib import Path

from reljudge.io.trec import read_qrels, write_run
from reljudge.testing import synthetic_runs

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    for run in synthetic_runs(read_qrels(HERE / "human.qrels"), 8, seed=2023):
        write_run(run, HERE / "runs" / f"{run.name}.run")
