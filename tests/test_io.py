"""Labeller inputs: queries, passages and pairs, with file:line errors for bad lines."""

from __future__ import annotations

import pytest

from reljudge.errors import InputError
from reljudge.io import read_pairs, read_passages, read_queries


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_inputs_in_every_format(tmp_path):
    assert read_queries(write(tmp_path, "q.tsv", "q1\twhat is x\n\nq2\ty?\n")) == {
        "q1": "what is x", "q2": "y?"}
    assert read_queries(write(tmp_path, "q.jsonl", '{"qid": "q1", "query": "x"}\n')) == {
        "q1": "x"}
    p = read_passages(write(tmp_path, "p.jsonl", '{"docid": "d1", "text": "t", "title": "T"}\n'))
    assert p == {"d1": {"text": "t", "title": "T"}}
    assert read_pairs(write(tmp_path, "a.txt", "q1 d1\nq1 0 d2\nq2 0 d3 2\n")) == [
        ("q1", "d1"), ("q1", "d2"), ("q2", "d3")]


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("q.tsv", "q1\tok\nq2 no tab\n", "q.tsv:2: expected 'QID<TAB>QUERY TEXT'"),
    ("q.tsv", "q1\ta\nq1\tb\n", "q.tsv:2: duplicate query id 'q1' (first on line 1)"),
    ("q.jsonl", '{"qid": "q1"}\n', "q.jsonl:1: expected a JSON object with the query text"),
    ("q.jsonl", '{"qid": "q1", "query": "x"}\n[1]\n', "q.jsonl:2: expected a JSON object, found list"),
    ("q.jsonl", "{oops\n", "q.jsonl:1: expected a JSON object, found invalid JSON"),
])
def test_bad_queries(tmp_path, name, text, needle):
    with pytest.raises(InputError) as e:
        read_queries(write(tmp_path, name, text))
    assert needle in str(e.value)


def test_bad_passages_and_pairs(tmp_path):
    with pytest.raises(InputError, match=r"p.jsonl:2: duplicate document id 'd1'"):
        read_passages(write(tmp_path, "p.jsonl", '{"docid": "d1", "text": "a"}\n'
                                                 '{"docid": "d1", "text": "b"}\n'))
    with pytest.raises(InputError, match=r"pairs.txt:2: expected 'QID DOCID'"):
        read_pairs(write(tmp_path, "pairs.txt", "q1 d1\nq1 0 d2 1 extra\n"))
    with pytest.raises(InputError, match=r"pairs.txt:2: duplicate pair q1 d1"):
        read_pairs(write(tmp_path, "pairs.txt", "q1 d1\nq1 0 d1\n"))
