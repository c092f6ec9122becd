"""Labeller inputs: queries, passages and pairs, with file:line errors for bad lines."""

from __future__ import annotations

import bz2
import gzip
import lzma

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


WRAPS = {
    "plain": lambda b: b,
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "crlf": lambda b: b.replace(b"\n", b"\r\n"),
    "gzip+bom+crlf": lambda b: gzip.compress(b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n")),
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


@pytest.mark.parametrize("wrap", sorted(WRAPS))
@pytest.mark.parametrize(("reader", "name", "text", "want"), [
    (read_queries, "q.tsv", "hr01\twhat is x\nq2\ty?\n", {"hr01": "what is x", "q2": "y?"}),
    (read_queries, "q.jsonl", '{"qid": "hr01", "query": "x"}\n', {"hr01": "x"}),
    (read_passages, "p.tsv", "d1\tsome text\n", {"d1": {"text": "some text"}}),
    (read_passages, "p.jsonl", '{"docid": "d1", "text": "t"}\n', {"d1": {"text": "t"}}),
    (read_pairs, "a.txt", "hr01 d1\nq2 0 d2 1\n", [("hr01", "d1"), ("q2", "d2")]),
    (read_pairs, "a.jsonl", '{"qid": "hr01", "docid": "d1"}\n', [("hr01", "d1")]),
])
def test_bom_crlf_and_compressed_inputs_read_like_plain_ones(tmp_path, reader, name, text, want,
                                                              wrap):
    """A BOM must not make a phantom id ('\\ufeffhr01'), nor CRLF a trailing '\\r'."""
    suffix = {"gzip+bom+crlf": ".gz", "bz2": ".bz2", "xz": ".xz"}.get(wrap, "")
    p = tmp_path / (name + suffix)
    p.write_bytes(WRAPS[wrap](text.encode()))
    assert reader(p) == want


def test_errors_in_compressed_and_bom_inputs_name_the_line(tmp_path):
    p = tmp_path / "q.tsv.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbfq1\tok\r\nq2 no tab\r\n"))
    with pytest.raises(InputError, match=r"q.tsv.gz:2: expected 'QID<TAB>QUERY TEXT'"):
        read_queries(p)
