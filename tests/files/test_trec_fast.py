"""The pyarrow fast path for large TREC files: same columns, same errors, same scores."""

from __future__ import annotations

import bz2
import functools
import gzip
import lzma
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reljudge.io.trec as trec
from reljudge import InputError, columns
from reljudge.io.trec import read_qrels, read_run
from reljudge.metrics import evaluate
from reljudge.metrics.ranking import rank_columns, rank_dicts

MEASURES = ["nDCG@5", "nDCG", "nDCG(dcg='exp-log2')@10", "nDCG(ideal='run')@3",
            "nDCG(judged_only=True)@5", "P@5", "P(rel=2)@5", "R@10", "RR", "RR@3", "AP", "AP@5",
            "Success@3", "ERR@5", "Judged@5", "NumRel", "NumRet"]


def read_both(path, reader, thresholds=(0, 1 << 62)):
    """(fast result, python result) of one reader on one file, or the errors they raise (with
    ``thresholds`` (1 << 62,): the python result alone)."""
    out = []
    try:
        for threshold in thresholds:
            trec.FAST_MIN_BYTES = threshold
            try:
                out.append(reader(path))
            except InputError as e:
                out.append(str(e))
    finally:
        trec.FAST_MIN_BYTES = 1 << 20
    return out


@pytest.mark.parametrize("line", [
    "q1 Q0 d3 3 0.25 tag",        # regular
    "q1 Q0 d3 3 2.5e-3 tag",      # exponent
    "q1 Q0 d3 +3 .5 tag",         # signed rank, bare fraction
    "q1 Q0 d3 03 -7 tag",         # leading zero, integer score
    "q1\tQ0 d3 3 0.25 tag",       # a tab: splits differently per reader -> python decides
    "q1 Q0  d3 3 0.25 tag",       # two spaces
    "q1 Q0 d3 3 0.25 tag ",       # trailing space
    "q1 Q0 d3 3 0.25",            # five fields
    "q1 Q0 d3 3 0.25 tag extra",  # seven fields
    "q1 Q0 dé 3 0.25 tag",        # non-ASCII docid
    "q1 Q0 d3 3 nan tag",         # not finite
    "q1 Q0 d3 3 inf tag",
    "q1 Q0 d3 3.0 0.25 tag",      # non-integer rank
    "q1 Q0 d3 3 1_0 tag",         # python's float() accepts underscores
    "q1 Q0 d3 3 0x10 tag",
    "q1 Q0 d1 3 0.25 tag",        # duplicate of the first line
    "q1 Q0 d3 3 0.25 tag\r",      # CRLF line ending
    "q1\x0bQ0 d3 3 0.25 tag",     # vertical tab (whitespace to python)
])
def test_fast_and_python_readers_agree_on_run_lines(tmp_path, line):
    text = "q1 Q0 d1 1 1.0 tag\nq2 Q0 d2 2 0.5 tag\n" + line + "\nq2 Q0 d9 4 0.1 tag\n"
    p = tmp_path / "x.run"
    p.write_bytes(text.encode())
    fast, python = read_both(p, read_run)
    if isinstance(python, str):
        assert fast == python
    else:
        assert fast.to_dict() == python.to_dict() and fast.name == python.name


@pytest.mark.parametrize("line", [
    "q1 0 d3 2", "q1 0 d3 -1", "q1 0 d3 +2", "q1 0 d3 2.0", "q1 0 d3 two", "q1 0 d1 2",
    "q1 0 d3", "q1  0 d3 2", "q1 0 d3 2 ", "q1 0 dé 2", "q9 0 d1 1",
])
def test_fast_and_python_readers_agree_on_qrels_lines(tmp_path, line):
    p = tmp_path / "x.qrels"
    p.write_bytes(("q1 0 d1 1\nq2 0 d2 0\n" + line + "\nq2 0 d9 3\n").encode())
    fast, python = read_both(p, read_qrels)
    if isinstance(python, str):
        assert fast == python
    else:
        assert fast == python


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
       st.sampled_from(["{!r}", "{:.17g}", "{:.6f}", "{:.3e}", "{:.20f}"]))
@pytest.mark.slow  # 300 hypothesis examples
def test_fast_path_parses_scores_exactly_as_python_float(tmp_path_factory, values, fmt):
    p = tmp_path_factory.mktemp("f") / "x.run"
    texts = [fmt.format(v) for v in values]
    assume(all(math.isfinite(float(t)) for t in texts))  # rounding up to inf is an error
    p.write_text("".join(f"q Q0 d{i} {i} {t} tag\n" for i, t in enumerate(texts)))
    trec.FAST_MIN_BYTES = 0
    try:
        run = read_run(p)
    finally:
        trec.FAST_MIN_BYTES = 1 << 20
    assert run.compact
    assert run.to_dict()["q"] == {f"d{i}": float(t) for i, t in enumerate(texts)}


docids = st.sampled_from([f"d{i}" for i in range(12)] + ["D1", "d1x", "a" * 17, "a" * 16])
qids = st.sampled_from(["q1", "q2", "q10", "q3"])
scores = st.integers(0, 6).map(lambda x: x / 4)  # coarse: many ties


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.dictionaries(qids, st.dictionaries(docids, st.integers(-1, 3), min_size=1, max_size=8),
                             min_size=1, max_size=4),
       run=st.lists(st.tuples(qids, docids, scores), min_size=1, max_size=40,
                    unique_by=lambda t: (t[0], t[1])),
       all_queries=st.booleans(), float32=st.booleans())
@pytest.mark.slow  # hypothesis, two paths (tests/files/test_trec.py runs both readers fast)
def test_compact_join_builds_the_same_matrices_as_the_dict_path(
        tmp_path_factory, qrels, run, all_queries, float32):
    folder = tmp_path_factory.mktemp("c")
    (folder / "x.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                            for d, g in docs.items()))
    # file order as generated: a query's lines may be split, the rank column is noise
    (folder / "x.run").write_text("".join(f"{q} Q0 {d} {i} {s} t\n"
                                          for i, (q, d, s) in enumerate(run)))
    trec.FAST_MIN_BYTES = 0
    try:
        fq, fr = read_qrels(folder / "x.qrels"), read_run(folder / "x.run")
    finally:
        trec.FAST_MIN_BYTES = 1 << 20
    assert fr.compact and fq.compact
    kw = {"all_queries": all_queries, "float32_scores": float32}
    q1, r1 = rank_columns(fq, fr, **kw)
    q2, r2 = rank_dicts(fq.to_dict(), fr.to_dict(), **kw)
    assert q1 == q2
    for a, b in ((r1.grades, r2.grades), (r1.length, r2.length), (r1.ideal, r2.ideal)):
        assert a.shape == b.shape and (a == b).all()
    if qrels.keys().isdisjoint(q for q, _, _ in run):  # both paths refuse to score nothing
        for qr, ru in ((fq, fr), (fq.to_dict(), fr.to_dict())):
            with pytest.raises(InputError, match="no query in common"):
                evaluate(qr, ru, MEASURES, **kw)
        return
    ours, theirs = evaluate(fq, fr, MEASURES, **kw), evaluate(fq.to_dict(), fr.to_dict(),
                                                               MEASURES, **kw)
    assert ours.query_ids == theirs.query_ids
    assert np.array_equal(ours.scores, theirs.scores)


def test_hash_collisions_cost_time_not_answers(tmp_path, monkeypatch):
    """Every docid hashes alike: joins and duplicate checks must confirm on the bytes."""
    monkeypatch.setattr(columns, "hash_bytes",
                        lambda arr, nwords=None: np.zeros(len(arr), dtype=np.uint64))
    monkeypatch.setattr(trec, "FAST_MIN_BYTES", 0)
    (tmp_path / "x.qrels").write_text("q1 0 a 1\nq1 0 b 2\nq2 0 a 3\nq2 0 c 0\n")
    (tmp_path / "x.run").write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.9 t\nq1 Q0 c 3 0.1 t\n"
                                    "q2 Q0 b 1 0.8 t\nq2 Q0 a 2 0.7 t\n")
    qrels, run = read_qrels(tmp_path / "x.qrels"), read_run(tmp_path / "x.run")
    assert run.compact
    got = evaluate(qrels, run, ["nDCG", "AP"])
    want = evaluate(qrels.to_dict(), run.to_dict(), ["nDCG", "AP"])
    assert np.array_equal(got.scores, want.scores)
    (tmp_path / "d.run").write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.9 t\nq2 Q0 a 1 0.5 t\n"
                                    "q1 Q0 c 3 0.1 t\nq1 Q0 b 4 0.2 t\n")
    with pytest.raises(InputError, match=r"d.run:5: duplicate document 'b' for query 'q1' "
                                         r"\(first on line 2\)"):
        read_run(tmp_path / "d.run")


def test_split_query_in_a_large_run_is_regrouped_and_duplicates_found_across_parts(
        tmp_path, monkeypatch):
    monkeypatch.setattr(trec, "FAST_MIN_BYTES", 0)
    (tmp_path / "x.run").write_text("q2 Q0 a 1 1 t\nq1 Q0 b 1 1 t\nq2 Q0 c 2 0.5 t\n")
    run = read_run(tmp_path / "x.run")
    assert run.compact and run.query_ids() == ["q2", "q1"]
    assert run.to_dict() == {"q2": {"a": 1.0, "c": 0.5}, "q1": {"b": 1.0}}
    (tmp_path / "d.run").write_text("q2 Q0 a 1 1 t\nq1 Q0 b 1 1 t\nq2 Q0 a 2 0.5 t\n")
    with pytest.raises(InputError, match=r"d.run:3: .*first on line 1"):
        read_run(tmp_path / "d.run")


def test_large_files_take_the_fast_path_by_default(tmp_path):
    lines = [f"q{i // 1000} Q0 doc{i} {i % 1000} {1 / (i + 1)!r} big\n" for i in range(40_000)]
    (tmp_path / "x.run").write_text("".join(lines))
    assert (tmp_path / "x.run").stat().st_size >= trec.FAST_MIN_BYTES
    run = read_run(tmp_path / "x.run")
    assert run.compact and len(run) == 40_000 and run.name == "big"
    assert run.docid[123] == "doc123" and run.qid[39_999] == "q39"


# each at its fastest level (xz's default took 4.5 s for 3 MB): the readers decompress any
COMPRESS = {"": lambda b: b, ".gz": lambda b: gzip.compress(b, 1),
            ".bz2": lambda b: bz2.compress(b, 1), ".xz": lambda b: lzma.compress(b, preset=0)}


def wrap(text: str, bom: bool, crlf: bool, suffix: str) -> bytes:
    """The bytes of ``text`` as other tools write it: with a BOM, CRLF ends, compressed."""
    data = (text.replace("\n", "\r\n") if crlf else text).encode()
    return COMPRESS[suffix]((b"\xef\xbb\xbf" if bom else b"") + data)


RUN_LINES = ["{q} Q0 {d} {i} {s} tag", "{q} Q0 {d} {i} {s} tag", "{q} Q0 {d} {i} {s} tag",
             "{q} Q0 {d} {i} {s}", "{q} Q0 {d} x {s} tag", "{q} Q0 {d} {i} nan tag",
             "{q}  Q0 {d} {i} {s} tag", "{q} Q0 {d}é {i} {s} tag", ""]
QRELS_LINES = ["{q} 0 {d} {g}", "{q} 0 {d} {g}", "{q} 0 {d} {g}", "{q} 0 {d}", "{q} 0 {d} 1.5",
               "{q}\t0 {d} {g}", ""]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(qids, docids, scores, st.integers(-1, 3), st.integers(0, 8)),
                     min_size=1, max_size=30),
       bom=st.booleans(), crlf=st.booleans(), suffix=st.sampled_from(sorted(COMPRESS)),
       kind=st.sampled_from(["run", "qrels"]))
@pytest.mark.slow  # both readers on every encoding (tests/files/test_trec.py and test_io_files are fast)
def test_both_readers_agree_on_bom_crlf_and_compressed_files(tmp_path_factory, rows, bom, crlf,
                                                            suffix, kind):
    """Same columns, scores and errors from both readers, and the same as from the plain file
    (a BOM, CRLF ends and compression change nothing, not even a line number in an error)."""
    lines, reader = (RUN_LINES, read_run) if kind == "run" else (QRELS_LINES, read_qrels)
    text = "".join(lines[t % len(lines)].format(q=q, d=d, s=s, g=g, i=i) + "\n"
                   for i, (q, d, s, g, t) in enumerate(rows))
    folder = tmp_path_factory.mktemp("w")
    (folder / "plain").mkdir()
    plain, wrapped = folder / "plain" / f"x.{kind}", folder / f"x.{kind}{suffix}"
    plain.write_text(text)
    wrapped.write_bytes(wrap(text, bom, crlf, suffix))
    fast, python = read_both(wrapped, reader)
    [want] = read_both(plain, reader, (1 << 62,))
    if isinstance(want, str):
        assert fast == python == want.replace(str(plain), str(wrapped))
    else:
        assert fast.to_dict() == python.to_dict() == want.to_dict()
        if kind == "run":
            assert fast.name == python.name == want.name


@functools.cache
def _large_lines() -> list[str]:
    """60,000 run lines (3.4 MB) that compress poorly (random docids and scores), built once."""
    rng = np.random.default_rng(7)
    docs, scores = rng.integers(1 << 40, size=60_000).tolist(), rng.random(60_000).tolist()
    return [f"q{i // 500} Q0 doc{d}-{i} {i % 500} {s!r} big\n"
            for i, (d, s) in enumerate(zip(docs, scores, strict=True))]


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
@pytest.mark.slow  # large files
def test_large_compressed_files_read_like_plain_ones(tmp_path, suffix):
    """Over the fast threshold after decompression; gzip also over it compressed (the size
    pyarrow used to decompress by extension). Errors name the line as in the plain file."""
    lines = _large_lines()
    text = "".join(lines)
    (tmp_path / "x.run").write_text(text)
    (tmp_path / f"x.run{suffix}").write_bytes(wrap(text, True, False, suffix))
    if suffix == ".gz":
        assert (tmp_path / f"x.run{suffix}").stat().st_size >= trec.FAST_MIN_BYTES
    plain, packed = read_run(tmp_path / "x.run"), read_run(tmp_path / f"x.run{suffix}")
    assert plain.compact and packed.compact  # both on the Arrow path
    assert packed.to_dict() == plain.to_dict() and packed.name == plain.name == "big"
    bad = text.replace(lines[41_234], lines[41_234].replace(" big", ""))
    (tmp_path / f"bad.run{suffix}").write_bytes(wrap(bad, True, True, suffix))
    with pytest.raises(InputError, match=rf"bad.run{suffix}:41235: expected 'QID Q0 DOCID"):
        read_run(tmp_path / f"bad.run{suffix}")


def test_a_small_compressed_file_with_large_content_takes_the_fast_path(tmp_path):
    text = "".join(f"q1 0 doc{i} {i % 4}\n" for i in range(100_000))
    (tmp_path / "x.qrels.gz").write_bytes(gzip.compress(text.encode()))
    assert (tmp_path / "x.qrels.gz").stat().st_size < trec.FAST_MIN_BYTES <= len(text)
    qrels = read_qrels(tmp_path / "x.qrels.gz")
    assert qrels.compact and len(qrels) == 100_000 and qrels.get("q1", "doc7") == 3


PAD = "".join(f"p{i // 400} Q0 pad{i} {i % 400} {1 / (i + 1)!r} tag\n" for i in range(24_000))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(qids, docids, scores, st.integers(-1, 3), st.integers(0, 8)),
                     min_size=1, max_size=10),
       at=st.floats(0, 1), bom=st.booleans(), crlf=st.booleans(),
       suffix=st.sampled_from(sorted(COMPRESS)))
@pytest.mark.slow  # large files
def test_large_wrapped_runs_read_like_plain_ones_at_the_default_threshold(
        tmp_path_factory, rows, at, bom, crlf, suffix):
    """Over 1 MB once decompressed, generated lines (some bad) anywhere among regular ones:
    the default choice of reader gives what the Python reader gives on the plain file."""
    assert len(PAD) >= trec.FAST_MIN_BYTES
    lines = "".join(RUN_LINES[t % len(RUN_LINES)].format(q=q, d=d, s=s, i=i) + "\n"
                    for i, (q, d, s, _, t) in enumerate(rows))
    cut = PAD.index("\n", int(at * (len(PAD) - 1))) + 1
    text = PAD[:cut] + lines + PAD[cut:]
    folder = tmp_path_factory.mktemp("L")
    (folder / "plain").mkdir()
    plain, wrapped = folder / "plain" / "x.run", folder / f"x.run{suffix}"
    plain.write_text(text)
    wrapped.write_bytes(wrap(text, bom, crlf, suffix))
    [want] = read_both(plain, read_run, (1 << 62,))
    try:
        got = read_run(wrapped)
    except InputError as e:
        got = str(e)
    if isinstance(want, str):
        assert got == want.replace(str(plain), str(wrapped))
    else:
        assert got.to_dict() == want.to_dict() and got.name == want.name
        if all(t % len(RUN_LINES) < 3 for *_, t in rows):  # only regular lines: Arrow read it
            assert got.compact
