"""The PPI benchmark scripts run end to end on the LLMJudge data (tiny settings): a helper
bench/ppi.py drops must not leave bench/ppi_active.py or bench/ppi_rank.py broken."""

import pytest
from bench.ppi import DATA

from tests.bench_support import run_script
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
def test_ppi_bench_script_runs(script: str, monkeypatch, capsys) -> None:
    run_script(ROOT / "bench" / script, SCRIPTS[script], monkeypatch)
    out = capsys.readouterr().out
    if script != "ppi_ndcg.py":  # a table row per design x budget x measure
        assert "| simulated | stratified-pairs | 5% (221) | DCG@10 |" in out, out
