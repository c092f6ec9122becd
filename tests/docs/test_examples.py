"""The bundled examples: regenerated exactly by their scripts, and consistent."""

from __future__ import annotations

import runpy
import shutil
import sys
from pathlib import Path

import pytest

from reljudge.io import read_passages, read_queries
from reljudge.io.trec import read_qrels, read_run

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def regenerate(name: str, scripts: list[str], files: list[str], tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch) -> None:
    """The example's copy without ``files``, its ``scripts`` run there as ``python SCRIPT``
    (in this process: they write beside their ``__file__``), gives the same bytes."""
    copy = tmp_path / name
    shutil.copytree(EXAMPLES / name, copy, ignore=shutil.ignore_patterns("out"))
    for f in files:
        (copy / f).unlink()
    monkeypatch.chdir(copy)
    for s in scripts:
        monkeypatch.setattr(sys, "argv", [s])
        runpy.run_path(str(copy / s), run_name="__main__")
    for f in files:
        assert (copy / f).read_bytes() == (EXAMPLES / name / f).read_bytes(), f


def test_hr_handbook_corpus_and_runs_regenerate_exactly(tmp_path, monkeypatch):
    regenerate("hr-handbook", ["make_corpus.py", "make_runs.py"],
               ["passages.jsonl", "queries.tsv", "runs/bm25.run", "runs/trigram.run"], tmp_path,
               monkeypatch)


def test_llmjudge_runs_regenerate_exactly(tmp_path, monkeypatch):
    regenerate("llmjudge-dl23", ["make_runs.py"],
               [f"runs/synthetic-{i}.run" for i in range(1, 9)], tmp_path, monkeypatch)


def test_hr_handbook_labels_fit_the_corpus():
    hr = EXAMPLES / "hr-handbook"
    passages = read_passages(hr / "passages.jsonl")
    queries = read_queries(hr / "queries.tsv")
    qrels = read_qrels(hr / "human.qrels")
    assert len(passages) == 46 and len(queries) == 12
    assert all(d in passages for _, d, _ in qrels)
    best = {}
    for q, _, g in qrels:
        best[q] = max(g, best.get(q, 0))
    assert set(best) == set(queries) and min(best.values()) >= 2
    for run in ("bm25", "trigram"):
        r = read_run(hr / "runs" / f"{run}.run")
        assert set(r.query_ids()) == set(queries) and len(r) == 120


def test_llmjudge_example_is_the_shared_data_slice(llmjudge):
    dl = EXAMPLES / "llmjudge-dl23"
    assert (dl / "human.qrels").read_bytes() == (llmjudge / "human" / "test.qrels").read_bytes()
    judges = sorted((dl / "judges").glob("*.txt"))
    assert judges  # else the loop below compares nothing
    for f in judges:
        assert f.read_bytes() == (llmjudge / "llm" / "labels" / f.name).read_bytes()
    assert len(read_queries(dl / "queries.tsv")) == 25
