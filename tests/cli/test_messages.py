"""Messages that name what was expected and where, and leave nothing behind."""

from __future__ import annotations

import pytest

from reljudge import InputError
from reljudge.cli import main
from reljudge.io import read_pairs


@pytest.mark.parametrize(("argv", "want"), [
    (["eval", "q", "r", "--foo"],
     "reljudge: error: eval: unrecognized arguments: --foo (see reljudge eval --help)\n"),
    (["labels", "merge", "--store", "s", "--foo", "x"],
     "reljudge: error: labels merge: unrecognized arguments: --foo x "
     "(see reljudge labels merge --help)\n"),
    (["--foo"], "reljudge: error: unrecognized arguments: --foo (see reljudge --help)\n"),
    (["eval"], "reljudge: error: eval: the following arguments are required: qrels, RUN "
               "(see reljudge eval --help)\n"),
])
def test_an_argument_error_names_the_command_used_and_its_help(argv, want, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and capsys.readouterr().err == want


@pytest.mark.parametrize("line", ["hr01 chunk_01 extra stuff", "hr01 chunk_01 extra",
                                  "q 0 d grade"])
def test_a_pairs_line_that_is_no_known_form_names_the_forms_and_the_line(tmp_path, line):
    p = tmp_path / "pairs.txt"
    p.write_text("hr01 chunk_00\n" + line + "\n")
    with pytest.raises(InputError, match=r"pairs\.txt:2: expected 'QID DOCID', 'QID 0 DOCID' "
                                         r"or 'QID 0 DOCID GRADE'"):
        read_pairs(p)


def test_pairs_in_qrels_and_run_like_forms_still_read(tmp_path):
    p = tmp_path / "pairs.txt"
    p.write_text("q1 0 d1 2\nq1 Q0 d2\nq2 d3\nq2 1 d4 -1\n")
    assert read_pairs(p) == [("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d4")]


# --- source names as users type them -----------------------------------------------------

from reljudge.errors import StoreError  # noqa: E402
from reljudge.labels import LabelEvent  # noqa: E402
from reljudge.store import LabelStore, resolve_source, short_names  # noqa: E402
from tests.helpers import v1_store  # noqa: E402

JUDGE = "gpt-4o-mini/umbrela@1#f8e67d3b"
OTHER = "gpt-4o-mini/umbrela@2#0a1b2c3d"
BIG = "gpt-4o/umbrela@1#99990000"


@pytest.fixture
def named_store(tmp_path):
    path = tmp_path / "labels.sqlite"
    with LabelStore(path) as store:
        store.add_events([LabelEvent("q1", "d1", 2, "human", "hr-team"),
                          LabelEvent("q1", "d2", 0, "human", "hr-team"),
                          LabelEvent("q1", "d1", 3, "llm", JUDGE),
                          LabelEvent("q1", "d2", 1, "llm", JUDGE),
                          LabelEvent("q1", "d1", 1, "llm", BIG)])
    return path


def test_a_source_is_named_by_full_name_model_prefix_or_name_without_hash(named_store):
    with LabelStore(named_store, create=False) as store:
        known = store.sources()
    assert resolve_source(known, JUDGE).name == JUDGE
    assert resolve_source(known, "gpt-4o-mini").name == JUDGE  # the model alone
    assert resolve_source(known, "gpt-4o").name == BIG  # a model, not a prefix of another
    assert resolve_source(known, "gpt-4o-mini/umbrela@1").name == JUDGE
    assert resolve_source(known, "hr").name == "hr-team"
    with pytest.raises(StoreError, match=r"'gpt' names 2 sources .*give more of the name"):
        resolve_source(known, "gpt")
    with pytest.raises(StoreError, match=r"no source named 'nist'; known sources: "
                                         r"hr-team \(human\)"):
        resolve_source(known, "nist")
    with pytest.raises(StoreError, match=r"'human' is a kind of source, not a name"):
        resolve_source(known, "human")
    with pytest.raises(StoreError, match=r"--human-source 'gpt-4o' is the llm source .* takes "
                                         r"a human source"):
        resolve_source(known, "gpt-4o", kind="human", option="--human-source")
    assert short_names(known) == {"hr-team": "hr-team", JUDGE: "gpt-4o-mini", BIG: "gpt-4o"}


def test_short_names_fall_back_when_a_model_has_two_sources(named_store):
    with LabelStore(named_store, create=False) as store:
        store.add_events([LabelEvent("q1", "d1", 0, "llm", OTHER)])
        known = store.sources()
    short = short_names(known)
    assert short[JUDGE] == "gpt-4o-mini/umbrela@1" and short[OTHER] == "gpt-4o-mini/umbrela@2"
    for name, typed in short.items():
        assert resolve_source(known, typed).name == name


def test_pool_with_an_unknown_source_exits_2_naming_the_known_ones(named_store, tmp_path, capsys):
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq1 Q0 d3 3 0.5 a\n")
    for name in ("nist", "human"):
        assert main(["pool", str(run), "--store", str(named_store), "--source", name]) == 2
        err = capsys.readouterr().err
        assert f"no source named '{name}' (given to --source)" in err
        assert "hr-team (human)" in err
    assert main(["pool", str(run), "--store", str(named_store), "--source", "hr",
                 "--format", "json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out)["judged"] == 2


def test_labels_sources_lists_kinds_counts_and_short_names(named_store, capsys):
    assert main(["labels", "sources", "--store", str(named_store), "--format", "json"]) == 0
    import json

    got = {s["name"]: s for s in json.loads(capsys.readouterr().out)["sources"]}
    assert got[JUDGE]["short"] == "gpt-4o-mini" and got[JUDGE]["kind"] == "llm"
    assert got["hr-team"]["graded"] == 2 and got["hr-team"]["grades"] == {"0": 1, "2": 1}
    assert main(["labels", "sources", "--store", str(named_store)]) == 0
    assert "gpt-4o-mini" in capsys.readouterr().out


def test_sample_takes_the_judge_by_its_model_name(named_store, capsys):
    assert main(["sample", "--store", str(named_store), "--judge", "gpt-4o-mini", "--name", "w1",
                 "--design", "srs-pairs", "--budget", "2"]) == 0
    with LabelStore(named_store, create=False) as store:
        assert store.sample("w1").params["judge"] == JUDGE


# --- nothing written means nothing written --------------------------------------------------

HR = __import__("tests.helpers", fromlist=["EXAMPLE"]).EXAMPLE


def label_argv(store, *extra):
    return ["label", "--queries", str(HR / "queries.tsv"), "--passages",
            str(HR / "passages.jsonl"), "--pairs", str(HR / "human.qrels"), "--store", str(store),
            "--model", "m", "--api-key", "k", "--max-attempts", "1", "--timeout", "2", *extra]


@pytest.mark.parametrize("case", ["dead endpoint", "texts missing", "dry run"])
def test_a_label_command_that_writes_no_label_leaves_no_new_store(tmp_path, case, capsys):
    store = tmp_path / "new.sqlite"
    if case == "dead endpoint":
        argv, want = label_argv(store, "--base-url", "http://127.0.0.1:9/v1"), 2
    elif case == "texts missing":
        pairs = tmp_path / "pairs.txt"
        pairs.write_text("hr01 no-such-passage\n")
        argv = label_argv(store, "--base-url", "http://127.0.0.1:9/v1")
        argv[argv.index("--pairs") + 1] = str(pairs)
        want = 2
    else:
        argv, want = label_argv(store, "--base-url", "http://127.0.0.1:9/v1", "--dry-run"), 0
    assert main(argv) == want
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir() if "sqlite" in p.name) == []


def test_an_existing_store_is_kept_when_a_label_command_fails(tmp_path, named_store, capsys):
    before = named_store.read_bytes()
    assert main(label_argv(named_store, "--base-url", "http://127.0.0.1:9/v1")) == 2
    capsys.readouterr()
    with LabelStore(named_store, create=False) as store:
        assert sum(s.events for s in store.sources()) == 5
    assert len(before) > 0


def test_calibrate_refuses_an_llm_source_as_the_human_one_and_takes_short_names(named_store,
                                                                                capsys):
    argv = ["calibrate", "--store", str(named_store), "--judge-source", "gpt-4o-mini"]
    assert main([*argv, "--human-source", "gpt-4o"]) == 2
    err = capsys.readouterr().err
    assert "--human-source 'gpt-4o' is the llm source" in err and "takes a human source" in err
    assert err.count("\n") == 1
    assert main(["audit", "--store", str(named_store), "--human-source", "hr",
                 "--judge-source", "gpt-4o-mini", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["reference"] == "hr-team" and data["judges"][0]["name"] == JUDGE


def test_estimate_names_an_unknown_human_source_instead_of_an_ungraded_sample(named_store,
                                                                              tmp_path, capsys):
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    assert main(["sample", "--store", str(named_store), "--judge", "gpt-4o-mini", "--name", "w1",
                 "--design", "srs-pairs", "--budget", "2"]) == 0
    capsys.readouterr()
    argv = ["estimate", "--store", str(named_store), "--sample", "w1", str(run), "-m", "P@2"]
    assert main([*argv, "--human-source", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "no source named 'nosuch' (given to --human-source)" in err and "not fully graded" not in err
    assert main([*argv, "--human-source", "hr", "--judge", "gpt-4o-mini"]) == 0  # short names work


# --- an older store: read-only commands never upgrade it, writing ones copy it aside first ---



def test_reading_commands_never_upgrade_an_older_store(tmp_path, capsys):
    path = v1_store(tmp_path / "old.sqlite")
    before = path.read_bytes()
    for argv in (["labels", "stats", "--store", str(path)],
                 ["labels", "merge", "--store", str(path)],
                 ["labels", "sources", "--store", str(path)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "schema version 1" in err and "reljudge labels upgrade --store" in err
        assert err.count("\n") == 1
    assert path.read_bytes() == before and not list(tmp_path.glob("*.bak*"))


@pytest.mark.parametrize("how", ["upgrade", "import"])
def test_writing_commands_copy_an_older_store_aside_before_upgrading(tmp_path, capsys, how):
    import sqlite3

    from reljudge.store.schema import SCHEMA_VERSION

    path = v1_store(tmp_path / "old.sqlite")
    if how == "upgrade":
        assert main(["labels", "upgrade", "--store", str(path)]) == 0
        said = capsys.readouterr().out
    else:
        labels = tmp_path / "more.qrels"
        labels.write_text("q 0 b 1\n")
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-m", "reljudge", "labels", "import", str(labels),
                               "--store", str(path), "--source-kind", "human", "--source-name",
                               "ann"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        said = done.stderr  # the note reaches a person's terminal
    backup = tmp_path / "old.sqlite.v1.bak"
    assert f"upgraded from schema 1 to {SCHEMA_VERSION}" in said and str(backup) in said
    old = sqlite3.connect(backup)
    assert old.execute("SELECT value FROM meta").fetchone()[0] == "1"
    assert old.execute("SELECT count(*) FROM events").fetchone()[0] == 1
    old.close()
    assert main(["labels", "stats", "--store", str(path), "--format", "json"]) == 0


def _message_strings():
    """(file:line, text) of every string in src that a user may read: string constants and
    the text of f-strings, docstrings left out (they are read with the source)."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent.parent / "src" / "reljudge"
    for path in sorted(src.rglob("*.py")):
        docstrings, strings = set(), []
        for node in ast.walk(ast.parse(path.read_text())):  # one walk finds both
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)) \
                    and node.body and isinstance(node.body[0], ast.Expr) \
                    and isinstance(node.body[0].value, ast.Constant):
                docstrings.add(id(node.body[0].value))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.append(node)
        for node in strings:
            if id(node) not in docstrings:
                yield f"{path.relative_to(src)}:{node.lineno}", node.value


def test_messages_name_docs_pages_an_installed_user_can_find():
    """An installed reljudge has no docs/ folder: messages and --help texts name a page by its
    title in the docs (mkdocs.yml's nav), never by a path under docs/."""
    import re
    from pathlib import Path

    nav = Path(__file__).resolve().parent.parent.parent / "mkdocs.yml"
    titles = re.findall(r"^  - (.+?): [\w-]+\.md$", nav.read_text(), re.M)
    strings = list(_message_strings())
    assert not [(at, text) for at, text in strings if re.search(r"docs/\w+\.md", text)]
    named = [(at, text.split("the reljudge docs: ", 1)[1]) for at, text in strings
             if "the reljudge docs: " in text]
    assert named
    for at, rest in named:
        assert any(re.sub(r"\s+", " ", rest).startswith(t) for t in titles), (at, rest)


# --- one resolver for every command that takes a source ---------------------------------------

def _short(store_path, capsys) -> dict[str, str]:
    """{full name: the short name `labels sources` prints}."""
    import json

    assert main(["labels", "sources", "--store", str(store_path), "--format", "json"]) == 0
    return {s["name"]: s["short"] for s in json.loads(capsys.readouterr().out)["sources"]}


@pytest.mark.parametrize("typed", ["short", "gpt-4o-mini/umbrela@1", "gpt-4o-mini/umb"])
def test_labels_export_merge_and_stats_take_a_source_as_every_command_does(named_store,
                                                                          tmp_path, capsys,
                                                                          typed):
    import json

    typed = _short(named_store, capsys)[JUDGE] if typed == "short" else typed
    store = str(named_store)
    whole = tmp_path / "whole.qrels"
    assert main(["labels", "export", "--store", store, "--source", JUDGE, "--out",
                 str(whole)]) == 0
    for argv, out in ((["labels", "export", "--source", typed], tmp_path / "export.qrels"),
                      (["labels", "merge", "--policy", f"source={typed}"],
                       tmp_path / "merge.qrels")):
        capsys.readouterr()
        assert main([*argv, "--store", store, "--out", str(out)]) == 0, capsys.readouterr().err
        assert out.read_text() == whole.read_text() == "q1 0 d1 3\nq1 0 d2 1\n"
    capsys.readouterr()
    assert main(["labels", "stats", "--store", store, "--policy", f"source={typed}",
                 "--format", "json"]) == 0
    assert sum(c["judged"] for c in json.loads(capsys.readouterr().out)["coverage"]) == 2
    with LabelStore(named_store, create=False) as s:
        assert s.resolve_policy(f"source={typed}") == f"source={JUDGE}"  # the API too


def test_a_source_named_by_no_source_or_by_two_is_one_line_in_export_and_merge(named_store,
                                                                              tmp_path, capsys):
    store = str(named_store)
    out = tmp_path / "x.qrels"
    for argv, needle in ((["labels", "export", "--source", "gpt"], "'gpt' names 2 sources"),
                         (["labels", "merge", "--policy", "source=nist"],
                          "no source named 'nist' (given to --policy source=)")):
        assert main([*argv, "--store", store, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and needle in err, err
        assert not out.exists()


# --- a name is one source: not taken again by a source of another kind --------------------

@pytest.mark.parametrize(("kind", "name"), [("llm", "hr-team"), ("human", JUDGE),
                                            ("human", "gpt-4o-mini"), ("import", "hr-team")])
def test_labels_import_refuses_a_name_a_source_of_another_kind_has(named_store, tmp_path,
                                                                   capsys, kind, name):
    labels = tmp_path / "more.qrels"
    labels.write_text("q1 0 d3 2\n")
    with LabelStore(named_store, create=False) as s:
        before = (s.count(), s.source_list())
    assert main(["labels", "import", str(labels), "--store", str(named_store), "--source-kind",
                 kind, "--source-name", name]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{name!r} names the " in err, err
    assert f"give this {kind} source another name" in err
    with LabelStore(named_store, create=False) as s:
        assert (s.count(), s.source_list()) == before


def test_assess_refuses_an_annotator_named_as_a_judge(named_store, tmp_path, capsys,
                                                      monkeypatch):
    def serve(*args, **kwargs):
        raise AssertionError("the grading page was served")

    monkeypatch.setattr("reljudge.assess.server.serve", serve)
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("q1 d1\n")
    (tmp_path / "q.tsv").write_text("q1\tquery one\n")
    (tmp_path / "p.jsonl").write_text('{"docid": "d1", "text": "a passage"}\n')
    for name in ("gpt-4o-mini", JUDGE):
        assert main(["assess", "--store", str(named_store), "--pairs", str(pairs),
                     "--annotator", name, "--queries", str(tmp_path / "q.tsv"),
                     "--passages", str(tmp_path / "p.jsonl")]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "names the llm source" in err, err
