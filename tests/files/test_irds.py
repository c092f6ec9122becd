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
from reljudge.io.trec import read_qrels

ROOT = Path(__file__).resolve().parent.parent.parent
HR = ROOT / "examples" / "hr-handbook"
RUNS = [str(HR / "runs" / "bm25.run"), str(HR / "runs" / "trigram.run")]
_names = itertools.count()


@pytest.fixture
def irds():
    import ir_datasets

    return ir_datasets


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


def test_pool_quote_and_audit_take_irds(tiny, capsys):
    spec, files = tiny
    rest = ["--depth", "5", "--model", "gpt-4o-mini", "--json"]
    assert main(["pool", *RUNS, "--queries", spec, "--passages", spec, *rest]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["pool", *RUNS, "--queries", str(files["queries"]), "--passages",
                 str(files["docs"]), *rest]) == 0
    assert a == json.loads(capsys.readouterr().out) and a["quote"]["to_send"] > 0
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


def write_pipeline(path: Path, queries, passages, human, out: Path) -> Path:
    path.write_text(f'[inputs]\nqueries = "{queries}"\npassages = "{passages}"\n'
                    f'runs = {json.dumps(RUNS)}\nhuman_qrels = "{human}"\n'
                    'human_source = "hr-team"\n[pool]\ndepth = 5\n[judge]\nprice_in = 0.0\n'
                    f'price_out = 0.0\n[audit]\nbootstrap = 50\n[output]\ndir = "{out}"\n')
    return path


def test_pipeline_takes_irds_inputs_reads_pooled_passages_only_and_scores_as_files(
        tiny, tmp_path, monkeypatch, capsys):
    from reljudge.io.trec import read_runs
    from reljudge.pool import build_pool
    from reljudge.store import LabelStore
    from reljudge.testing import FakeOpenAI
    from reljudge.testing import hash_grader as grader  # the grade follows from the prompt

    spec, files = tiny
    by_irds = write_pipeline(tmp_path / "irds.toml", spec, spec, spec, tmp_path / "irds-out")
    by_file = write_pipeline(tmp_path / "file.toml", files["queries"], files["docs"],
                             files["qrels"], tmp_path / "file-out")
    with FakeOpenAI(grader) as server:
        for k, v in {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
                     "OPENAI_MODEL": "fake-judge",
                     "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")}.items():
            monkeypatch.setenv(k, v)
        assert main(["run", str(by_irds), "--quiet"]) == 0
        assert main(["run", str(by_file), "--quiet"]) == 0
    capsys.readouterr()
    for name in ("pool.tsv", "qrels.txt", "qrels.provenance.jsonl", "scores.tsv",
                 "audit.json"):
        assert ((tmp_path / "irds-out" / name).read_text()
                == (tmp_path / "file-out" / name).read_text()), name
    pooled = {d for _, d in build_pool(read_runs(RUNS), 5).pairs}
    with LabelStore(tmp_path / "irds-out" / "labels.sqlite") as store:
        assert store.passages_with_text() == pooled  # the pooled passages, never the corpus
    with LabelStore(tmp_path / "file-out" / "labels.sqlite") as store:
        assert len(store.passages_with_text()) == len(read_passages(files["docs"])) > len(pooled)
    inputs = json.loads((tmp_path / "irds-out" / "manifest.json").read_text())["inputs"]
    dataset = spec[len("irds:"):]
    assert [(i["role"], i.get("dataset")) for i in inputs] == [
        ("queries", dataset), ("passages", dataset), ("run", None), ("run", None),
        ("human labels", dataset)]
    assert all(len(i["sha256"]) == 64 and i["size"] > 0 for i in inputs if i["role"] == "run")
    assert inputs[0]["ir_datasets"]  # the version that read it
    report = tmp_path / "report.html"
    assert main(["report", "--pipeline", str(by_irds), "--out", str(report), "--quiet"]) == 0
    page = report.read_text()
    assert spec in page and "ir_datasets " in page


def test_pipeline_with_an_unknown_dataset_fails_before_writing(irds, tmp_path):
    from reljudge.errors import ConfigError
    from reljudge.pipeline import load_config

    cfg = write_pipeline(tmp_path / "p.toml", "irds:reljudge-test/no-such-thing",
                         HR / "passages.jsonl", HR / "human.qrels", tmp_path / "out")
    with pytest.raises(ConfigError, match=r"p\.toml: \[inputs\] queries: .*no ir_datasets "
                                          r"dataset 'reljudge-test/no-such-thing'"):
        load_config(cfg)
    assert main(["run", str(cfg)]) == 2
    assert not (tmp_path / "out").exists()


def test_report_with_irds_qrels_lists_the_dataset_where_a_file_has_a_checksum(tiny, tmp_path):
    spec, _ = tiny
    out = tmp_path / "r.html"
    assert main(["report", spec, *RUNS, "--out", str(out), "--quiet"]) == 0
    page = out.read_text()
    assert f"<td>{spec}</td>" in page and "ir_datasets " in page


def test_pipeline_whose_dataset_lacks_pooled_passages_fails_before_writing(
        irds, tmp_path, monkeypatch, capsys):
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TsvDocs
    from ir_datasets.util import LocalDownload

    docs = tmp_path / "docs.tsv"
    whole = read_passages(HR / "passages.jsonl")
    docs.write_text("".join(f"{d}\t{' '.join(p['text'].split())}\n"
                            for d, p in sorted(whole.items())[:10]))  # most are missing
    name = f"reljudge-test/part-{next(_names)}"
    irds.registry.register(name, Dataset(TsvDocs(LocalDownload(docs))))
    cfg = write_pipeline(tmp_path / "p.toml", HR / "queries.tsv", f"irds:{name}",
                         HR / "human.qrels", tmp_path / "out")
    for k, v in {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "test-key",
                 "OPENAI_MODEL": "fake-judge",
                 "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(k, v)
    assert main(["run", str(cfg)]) == 2
    last = capsys.readouterr().err.splitlines()[-1]  # (ir_datasets logs what it builds)
    assert last.startswith("reljudge: error: cannot label: 32 passage id(s) without text")
    assert f"passages = irds:{name} (pool depth 5)" in last
    assert not (tmp_path / "out").exists()  # nothing written


class _Offline:
    """An ir_datasets download that fails as it does with no network."""

    def stream(self):
        raise RuntimeError("All download sources failed")

    def path(self, force=True):
        raise RuntimeError("All download sources failed")


@pytest.mark.parametrize("command", ["eval", "label"])
def test_a_dataset_ir_datasets_cannot_fetch_is_one_line_naming_it_exit_2(irds, command, capsys,
                                                                         tmp_path):
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvQueries

    name = f"reljudge-test/offline-{next(_names)}"
    irds.registry.register(name, Dataset(TsvQueries(_Offline()), TrecQrels(_Offline(), {})))
    if command == "eval":
        argv = ["eval", f"irds:{name}", RUNS[0]]
    else:
        argv = ["label", "--queries", f"irds:{name}", "--passages", str(HR / "passages.jsonl"),
                "--pairs", str(HR / "human.qrels"), "--dry-run"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"irds:{name}: ir_datasets could not provide the " in err
    assert "All download sources failed" in err and "Traceback" not in err
    assert err.count("\n") == 1
