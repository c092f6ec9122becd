"""``reljudge probe`` end to end against a real OpenAI-compatible server: llama.cpp's server
with Gemma 3 270M (tests/llama_server.py), the ``json`` template beside ``guarded-json`` on
the same probes of examples/hr-handbook. A base model that small grades almost at random; what
is checked is the plumbing: the dry run sends nothing and writes no store, every probed pair
ends as a 0-3 grade its raw answer gives or as a failure with its reason and raw text, the
exit code says which, every count is a recount of the --out file, report and audit show the
store's probes, and a rerun pays nothing and reports the same."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.grades import SCALE
from reljudge.labels import FailureKind
from reljudge.store import LabelStore
from tests.helpers import EXAMPLE
from tests.llama_server import answered_grade

TEMPLATES = ("json", "guarded-json")  # both answer JSON, which this base model can do
KINDS = ("query-insert", "salad")  # an attack and the control: 3 calls a template
#: room for the short JSON answers (25 to 32 tokens) this model gives to some of the probes;
#: the longer ones are cut and recorded as truncated (each generated token costs the server
#: about six prompt tokens' time, so a rambling answer is cut early)
MAX_TOKENS = "40"
COUNTS = ("n", "unanswered", "clean_zero", "flips1", "flips2", "changed", "rose", "fell")


def probe_argv(server, where: Path, *flags: str) -> list[str]:
    """``reljudge probe`` of one known non-relevant pair of hr-handbook, per template."""
    prompts = [a for t in TEMPLATES for a in ("--prompt", t)]
    return ["probe", "--queries", str(EXAMPLE / "queries.tsv"),
            "--passages", str(EXAMPLE / "passages.jsonl"),
            "--qrels", str(EXAMPLE / "human.qrels"), "--kinds", ",".join(KINDS),
            "--per-kind", "1", "--base-url", server.base_url, "--model", server.model,
            *prompts, "--max-tokens", MAX_TOKENS, "--concurrency", "1", "--timeout", "600",
            "--cache-dir", str(where / "cache"), "--quiet", *flags]


def run(argv: list[str]) -> tuple[int, str]:
    """The CLI's exit code and what it printed (module fixtures have no capsys)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@dataclass
class Probed:
    """One probe run into a store, shared by the tests below."""

    argv: list[str]
    code: int
    report: dict
    rows: list[dict]
    store: Path
    before: tuple[int, int]
    after: tuple[int, int]


@pytest.fixture(scope="module")
def probed(llama_server, tmp_path_factory) -> Probed:
    where = tmp_path_factory.mktemp("probe-llama")
    store, out = where / "probes.sqlite", where / "probes.jsonl"
    argv = probe_argv(llama_server, where, "--store", str(store), "--out", str(out), "--json")
    before = llama_server.tokens()
    code, printed = run(argv)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return Probed(argv, code, json.loads(printed), rows, store, before, llama_server.tokens())


def test_a_dry_run_prints_the_estimate_sends_nothing_and_writes_no_store(llama_server,
                                                                         tmp_path):
    store = tmp_path / "probes.sqlite"
    before = llama_server.tokens()
    code, table = run(probe_argv(llama_server, tmp_path, "--store", str(store), "--dry-run"))
    assert code == 0 and "dry run: nothing was sent" in table
    code, printed = run(probe_argv(llama_server, tmp_path, "--store", str(store), "--dry-run",
                                   "--json"))
    assert code == 0
    estimates = json.loads(printed)
    assert [e["judge"].split("/")[1].split("@")[0] for e in estimates] == list(TEMPLATES)
    for e in estimates:  # one clean pair and one probe per kind, none asked before
        assert e["items"] == e["to_send"] == 1 + len(KINDS) and e["tokens_in"] > 0
    assert llama_server.tokens() == before  # the model processed no token
    assert not store.exists()


def test_every_probe_has_its_answers_grade_or_a_failure_and_the_exit_code_says_which(probed):
    report = probed.report
    assert probed.after[0] > probed.before[0] and probed.after[1] > probed.before[1]
    assert len(report["judges"]) == len(TEMPLATES) and report["stop_reason"] is None
    failed = sum(lab["failed"] for lab in report["labelling"])
    assert report["complete"] == (failed == 0)
    assert probed.code == (0 if failed == 0 else 4)
    for lab in report["labelling"]:
        assert lab["labelled"] + lab["failed"] == lab["items"] == 1 + len(KINDS)
        assert lab["warnings"] == []  # llama.cpp's server takes response_format: json_schema

    with LabelStore(probed.store, readonly=True) as store:
        answers = store.probe_grades()
        assert store.count() == 0  # probes only: no label
    graded: dict[tuple[str, str, str], int] = {}
    for a in answers:
        assert a.raw, a  # the model's answer, kept whatever became of it
        if a.grade is not None:  # the grade its (last) JSON answer gives
            assert a.grade in SCALE and answered_grade(a.raw) == a.grade, a
            graded[(a.judge, a.qid, a.docid)] = a.grade
        else:  # never a grade made up: the reason and what the model said
            assert a.failure_kind in (FailureKind.UNPARSEABLE, FailureKind.TRUNCATED), a
    assert failed == len({(a.judge, a.qid, a.docid) for a in answers}) - len(graded)

    assert {(r["judge"], r["kind"]) for r in probed.rows} == \
        {(j, k) for j in report["judges"] for k in KINDS}
    for r in probed.rows:  # the --out file's grades are the store's
        clean = f"probe:clean:{r['qid']}:{r['docid']}:"  # then the text's SHA-256
        (clean_id,) = {a.docid for a in answers if a.docid.startswith(clean)}
        assert r["clean_grade"] == graded.get((r["judge"], r["qid"], clean_id))
        assert r["probe_grade"] == graded.get((r["judge"], r["qid"], r["probe"]))


def recount(rows: list[dict]) -> dict:
    """The counts of one template and kind from its --out rows."""
    both = [(r["clean_grade"], r["probe_grade"]) for r in rows
            if r["clean_grade"] is not None and r["probe_grade"] is not None]
    zero = [p for c, p in both if c == 0]
    return {"n": len(both), "unanswered": len(rows) - len(both), "clean_zero": len(zero),
            "flips1": sum(p >= 1 for p in zero), "flips2": sum(p >= 2 for p in zero),
            "changed": sum(p != c for c, p in both),
            "rose": sum(c == 0 and p >= 1 for c, p in both),
            "fell": sum(c >= 1 and p == 0 for c, p in both)}


def test_every_reported_count_is_a_recount_of_the_out_file(probed):
    kinds = probed.report["kinds"]
    assert len(kinds) == len(TEMPLATES) * len(KINDS)
    for k in kinds:
        mine = [r for r in probed.rows if (r["judge"], r["kind"]) == (k["template"], k["kind"])]
        assert {c: k[c] for c in COUNTS} == recount(mine), k


def test_report_and_audit_show_the_judges_probes(probed, tmp_path):
    runs = [str(EXAMPLE / "runs" / r) for r in ("bm25.run", "trigram.run")]
    page = tmp_path / "report.html"
    code, _ = run(["report", str(EXAMPLE / "human.qrels"), *runs, "--store", str(probed.store),
                   "--out", str(page)])
    assert code == 0
    html = page.read_text()
    section = html[html.index("Can the judge be gamed?"):]
    for judge in probed.report["judges"]:
        assert judge in section
    assert "salad (control)" in section

    # audit needs labels of a human and a judge source: hr-handbook's, in a copy of the store
    store = tmp_path / "audited.sqlite"
    shutil.copy(probed.store, store)
    for kind, name in (("human", "nist"), ("llm", "same-as-nist")):
        assert run(["labels", "import", "--store", str(store), str(EXAMPLE / "human.qrels"),
                    "--source-kind", kind, "--source-name", name])[0] == 0
    code, printed = run(["audit", "--store", str(store), "--human-source", "nist", *runs])
    assert code == 0
    lines = printed[printed.index("probes (reljudge probe"):].splitlines()[1:]
    assert len(lines) == len(TEMPLATES)
    for judge, line in zip(sorted(probed.report["judges"]), lines, strict=True):  # by name
        mine = [k for k in probed.report["kinds"] if k["template"] == judge]
        assert line.strip().startswith(f"{judge}: {sum(k['n'] for k in mine)} probe pairs")
        control = next(k for k in mine if k["kind"] == "salad")
        if control["clean_zero"]:
            assert f"control salad {control['flips1']}/{control['clean_zero']}" in line


def test_a_rerun_pays_nothing_and_reports_the_same(probed, llama_server):
    before = llama_server.tokens()
    code, printed = run(probed.argv)
    again = json.loads(printed)
    assert llama_server.tokens() == before  # the server saw no call
    assert code == probed.code and all(lab["calls"] == 0 for lab in again["labelling"])
    for key in ("judges", "kinds", "gains", "skipped_queries", "warnings", "complete"):
        assert again[key] == probed.report[key], key
