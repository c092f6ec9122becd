"""Row views of a real SQLite label store: conflicts with their texts and the judge's answers
(library and `labels conflicts --with-text` in every format), and the store as DataFrames,
each equal to what the CLI prints or writes for the same store."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.store.views import conflicts_with_text
from tests.backends import BACKENDS, empty_store

LONG = "The first paragraph of a long passage about parental leave.\n" + "More words. " * 20
QUERIES = {"q1": "how long is maternity leave?", "q2": "expense deadline"}
PASSAGES = {"d1": LONG, "d2": "Claims are due in 30 days.", "d3": "Parking rules."}


def human(q, d, g, name="nist"):
    return LabelEvent(q, d, g, "human", name)


def llm(q, d, g, raw, repeat=0, name="gpt"):
    return LabelEvent(q, d, g, "llm", name, repeat=repeat, raw=raw)


@pytest.fixture(params=BACKENDS)
def store_path(request, tmp_path):
    path = empty_store(request, tmp_path)
    with LabelStore(path) as store:
        store.add_queries(QUERIES)
        store.add_passages({d: t for d, t in PASSAGES.items() if d != "d3"})  # d3: no text
        store.add_events([
            human("q1", "d1", 0), llm("q1", "d1", 1, "an early answer, corrected below"),
            human("q2", "d2", 3), llm("q2", "d2", 3, "exact match"),   # agreement
            human("q2", "d3", 2), llm("q2", "d3", 0, "parking is off topic"),
            llm("q2", "d3", 0, "still off topic", name="claude"),
            LabelEvent("q2", "d1", None, "llm", "gpt", failure="no grade in the answer",
                       failure_kind="unparseable", raw="hmm"),
        ])
        store.add_events([llm("q1", "d1", 3, "Reasoning: the passage\nanswers it. Final: 3")])
    return path


def test_conflicts_carry_texts_sources_and_the_latest_llm_answers(store_path):
    with LabelStore(store_path, create=False) as store:
        found = conflicts_with_text(store)
    assert [(c.qid, c.docid, c.human, c.llm) for c in found] == [("q1", "d1", 0, 3),
                                                                ("q2", "d3", 2, 0)]
    first, second = found
    assert first.query == QUERIES["q1"] and first.passage == LONG
    assert first.human_sources == ("nist",) and first.llm_sources == ("gpt",)
    assert first.answers == ({"source": "gpt", "repeat": 0, "grade": 3,
                              "raw": "Reasoning: the passage\nanswers it. Final: 3"},)
    assert first.reasoning() == "Reasoning: the passage\nanswers it. Final: 3"
    assert second.passage is None and second.llm_sources == ("claude", "gpt")
    assert second.reasoning() == "[claude #0] still off topic\n\n[gpt #0] parking is off topic"
    with LabelStore(store_path, create=False) as store:
        assert len(conflicts_with_text(store, limit=1)) == 1
        assert conflicts_with_text(store, min_diff=3) == [first]


def test_with_text_table_cuts_long_text_and_json_csv_keep_it_whole(store_path, capsys):
    base = ["labels", "conflicts", "--store", str(store_path), "--with-text"]
    assert main(base) == 0
    table = capsys.readouterr().out
    assert "how long is maternity leave?" in table and LONG not in table
    assert "The first paragraph of a long passage about parental leave.…" in table
    assert "Reasoning: the passage answers it. Final: 3" in table  # one line in the table
    assert "2 conflicting pairs" in table
    assert main([*base, "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got[0]["passage"] == LONG and got[0]["human_sources"] == ["nist"]
    assert got[0]["answers"][0]["raw"] == "Reasoning: the passage\nanswers it. Final: 3"
    assert got[1]["passage"] is None and got[1]["llm - human"] == -2
    assert main([*base, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["passage"] == LONG and rows[0]["llm_sources"] == "gpt"
    assert rows[1]["llm_sources"] == "claude,gpt" and rows[1]["passage"] == ""
    assert main(["labels", "conflicts", "--store", str(store_path), "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert [(r["qid"], r["docid"]) for r in plain] == [(r["qid"], r["docid"]) for r in got]


def test_conflicts_dataframe_equals_the_cli_json(store_path, capsys):
    import pandas as pd
    assert main(["labels", "conflicts", "--store", str(store_path), "--with-text",
                 "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    with LabelStore(store_path, create=False) as store:
        df = store.conflicts_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) == len(got)
    for r, w in zip(df.to_dict("records"), got, strict=True):
        assert (r["qid"], r["docid"], r["query"], r["human"], r["llm"], r["llm - human"]) == \
            (w["qid"], w["docid"], w["query"], w["human"], w["llm"], w["llm - human"])
        assert r["llm_sources"].split(",") == w["llm_sources"]
        assert (r["passage"] if isinstance(r["passage"], str) else None) == w["passage"]


def test_provenance_dataframe_equals_the_merge_provenance_file(store_path, tmp_path, capsys):
    out = tmp_path / "prov.jsonl"
    assert main(["labels", "merge", "--store", str(store_path), "--policy", "llm-only",
                 "--aggregate", "mean", "--provenance", str(out)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    with LabelStore(store_path, create=False) as store:
        df = store.provenance_dataframe("llm-only", "mean")
    assert df.to_dict("records") == written


def test_labels_and_failures_dataframes_hold_every_event_and_failure(store_path, capsys):
    with LabelStore(store_path, create=False) as store:
        events = store.labels_dataframe()
        current = store.failures_dataframe()
        history = store.failures_dataframe(history=True)
        count = store.count()
    assert len(events) == count == 9
    assert events["grade"].isna().sum() == 1 and events["raw"].iloc[-1].startswith("Reasoning")
    assert main(["labels", "stats", "--store", str(store_path), "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)["failures"]
    assert len(current) == stats["current"] and len(history) == stats["history"] == 1
    assert current.to_dict("records") == [{"qid": "q2", "docid": "d1", "source": "gpt",
                                           "repeat": 0, "kind": "unparseable",
                                           "detail": "no grade in the answer"}]
    assert history["raw"].tolist() == ["hmm"]


@given(st.text(st.sampled_from("ab \n…"), max_size=80), st.integers(2, 40))
def test_table_cells_fit_their_width_on_one_line_and_start_the_text(text, width):
    from reljudge.cli.labels_show import _cut

    line = " ".join(text.split())
    got = _cut(text, width)
    assert len(got) <= width and "\n" not in got
    assert got == line or (got.endswith("…") and line.startswith(got[:-1]))
