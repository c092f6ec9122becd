"""``irds:DATASET_ID`` inputs (reljudge.io.irds) on a small dataset registered from local
files: no network. Skips when ir_datasets is not installed (the `test` extra has it)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.io import read_pairs, read_passages, read_queries
from reljudge.trec import read_qrels

ROOT = Path(__file__).resolve().parent.parent
HR = ROOT / "examples" / "hr-handbook"
RUNS = [str(HR / "runs" / "bm25.run"), str(HR / "runs" / "trigram.run")]
_names = itertools.count()


@pytest.fixture
def irds():
    return pytest.importorskip("ir_datasets")


@pytest.fixture
def tiny(irds, tmp_path):
    """The hr-handbook data as files and as a locally registered ir_datasets dataset."""
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    docs = tmp_path / "docs.tsv"
    docs.write_text("".join(f"{d}\t{' '.join(p['text'].split())}\n"
                            for d, p in read_passages(HR / "passages.jsonl").items()))
    queries, qrels = HR / "queries.tsv", HR / "human.qrels"
    name = f"reljudge-test/tiny-{next(_names)}"
    irds.registry.register(name, Dataset(
        TsvQueries(LocalDownload(queries)), TsvDocs(LocalDownload(docs)),
        TrecQrels(LocalDownload(qrels), {0: "not", 1: "related", 2: "relevant", 3: "perfect"})))
    return f"irds:{name}", {"queries": queries, "docs": docs, "qrels": qrels}


def test_queries_qrels_and_pairs_read_the_same_as_from_files(tiny):
    spec, files = tiny
    assert read_queries(spec) == read_queries(files["queries"])
    a, b = read_qrels(spec), read_qrels(files["qrels"])
    assert sorted(a) == sorted(b) and len(a) == len(b) > 0
    assert sorted(read_pairs(spec)) == sorted(read_pairs(files["qrels"]))


def test_passages_are_looked_up_by_id_and_only_those(tiny):
    spec, files = tiny
    whole = read_passages(files["docs"])
    want = sorted(whole)[:3] + ["not-in-the-corpus"]
    got = read_passages(spec, want)
    assert got == {d: whole[d] for d in want[:3]}  # an unknown id is simply absent


def test_passages_need_the_ids_a_command_wants(tiny):
    from reljudge.errors import InputError

    spec, _ = tiny
    with pytest.raises(InputError, match="whole corpus"):
        read_passages(spec)


class SpyStore:
    """A docs_store that records what it is asked for."""

    def __init__(self, docs):
        self.docs, self.asked = docs, []

    def get_many(self, ids):
        self.asked.append(list(ids))
        return {d: self.docs[d] for d in ids if d in self.docs}


def test_only_get_many_with_the_needed_ids_is_used_never_docs_iter(irds, tmp_path):
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import BaseDocs, GenericDoc

    store = SpyStore({f"d{i}": GenericDoc(f"d{i}", f"text {i}") for i in range(100)})

    class Docs(BaseDocs):
        def docs_iter(self):
            raise AssertionError("the whole corpus was iterated")

        def docs_store(self, *args, **kwargs):
            return store

        def docs_cls(self):
            return GenericDoc

    name = f"reljudge-test/spy-{next(_names)}"
    irds.registry.register(name, Dataset(Docs()))
    out = read_passages(f"irds:{name}", ["d7", "d3", "d7"])
    assert out == {"d3": {"text": "text 3"}, "d7": {"text": "text 7"}}
    assert store.asked == [["d3", "d7"]]


def test_eval_with_irds_qrels_prints_what_the_qrels_file_gives(tiny, capsys):
    spec, files = tiny
    argv = ["eval", *RUNS, "-m", "nDCG@10", "-m", "P@5", "--json"]
    assert main([argv[0], spec, *argv[1:]]) == 0
    from_irds = capsys.readouterr().out
    assert main([argv[0], str(files["qrels"]), *argv[1:]]) == 0
    assert from_irds == capsys.readouterr().out


def test_label_dry_run_from_irds_equals_the_files(tiny, tmp_path, capsys):
    spec, files = tiny
    rest = [*RUNS, "--depth", "5", "--model", "gpt-4o-mini", "--dry-run", "--json",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(["label", "--queries", spec, "--passages", spec, *rest]) == 0
    from_irds = json.loads(capsys.readouterr().out)
    assert main(["label", "--queries", str(files["queries"]), "--passages",
                 str(files["docs"]), *rest]) == 0
    assert from_irds == json.loads(capsys.readouterr().out) and from_irds["items"] > 0


def test_pool_estimate_and_audit_take_irds(tiny, capsys):
    spec, files = tiny
    rest = ["--depth", "5", "--model", "gpt-4o-mini", "--json"]
    assert main(["pool", *RUNS, "--queries", spec, "--passages", spec, *rest]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["pool", *RUNS, "--queries", str(files["queries"]), "--passages",
                 str(files["docs"]), *rest]) == 0
    assert a == json.loads(capsys.readouterr().out) and a["estimate"]["to_send"] > 0
    assert main(["audit", "--reference", spec, "--judge", str(files["qrels"]), *RUNS,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["judges"][0]["items"]["stats"]["exact"] == 1.0


def test_unknown_dataset_is_one_line_and_exit_2(irds, capsys):
    assert main(["eval", "irds:reljudge-test/no-such-thing", RUNS[0]]) == 2
    err = capsys.readouterr().err
    assert "irds:reljudge-test/no-such-thing: no ir_datasets dataset" in err
    assert err.count("\n") == 1


def test_without_ir_datasets_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import fails as if absent
    assert main(["eval", "irds:msmarco-passage/trec-dl-2019/judged", RUNS[0]]) == 2
    err = capsys.readouterr().err
    assert "pip install 'reljudge[irds]'" in err and err.count("\n") == 1


def test_labels_import_from_irds_is_named_by_the_dataset_and_imported_once(tiny, tmp_path,
                                                                            capsys):
    spec, files = tiny
    store = str(tmp_path / "s.sqlite")
    argv = ["labels", "import", spec, "--store", store, "--source-kind", "human", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)[0]
    assert first["name"] == spec[len("irds:"):] and first["events"] == len(read_qrels(spec))
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)[0]["skipped"] is True
    assert main(["labels", "export", "--store", store, "--source", first["name"], "--out",
                 str(tmp_path / "out.qrels")]) == 0
    assert sorted(read_qrels(tmp_path / "out.qrels")) == sorted(read_qrels(files["qrels"]))
