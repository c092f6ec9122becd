"""The PPI benchmark scripts run end to end on the LLMJudge data (tiny settings): a helper
bench/ppi.py drops must not leave bench/ppi_active.py or bench/ppi_rank.py broken."""

import os
import subprocess
import sys

import pytest
from bench.ppi import DATA

from tests.helpers import ROOT

FAST = ["--judges", "1", "--budgets", "0.05", "--draws", "3", "--slow-draws", "1",
        "--rank-draws", "1", "--bootstrap", "20", "--count", "6", "--systems", "simulated",
        "--recheck", "3"]
SCRIPTS = {"ppi.py": FAST, "ppi_active.py": FAST, "ppi_rank.py": FAST,
           "ppi_ndcg.py": ["--judges", "1", "--budgets", "0.05", "--draws", "1",
                           "--replicates", "20", "--measure", "R@10"]}


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "human" / "test.qrels").exists(), reason="no LLMJudge data")
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_ppi_bench_script_runs(script: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *SCRIPTS[script]],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    if script != "ppi_ndcg.py":  # a table row per design x budget x measure
        assert "| simulated | stratified-pairs | 5% (221) | DCG@10 |" in done.stdout, \
            done.stdout
