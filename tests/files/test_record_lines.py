"""Lines are split on newline only, everywhere (JSONL inputs, batch output files): a JSON
string may hold U+2028, U+2029 or U+0085, which ``str.splitlines`` breaks on."""

from __future__ import annotations

import asyncio
import json
import re

from reljudge.io import read_passages, read_queries
from reljudge.judge import JudgeConfig, Labeller
from reljudge.judge.batch.job import BatchJob
from reljudge.store import LabelStore
from reljudge.testing import Reply
from reljudge.testing.fake_batch import FakeBatchAPI

ODD = "\u2028\u2029\u0085"  # valid raw inside a JSON string; line breaks to str.splitlines


def test_jsonl_inputs_keep_lines_that_hold_unicode_line_separators(tmp_path):
    p = tmp_path / "passages.jsonl"
    p.write_text(json.dumps({"docid": "d1", "text": f"one{ODD}two"}, ensure_ascii=False) + "\n"
                 + json.dumps({"docid": "d2", "text": "three"}) + "\n", encoding="utf-8")
    assert read_passages(p) == {"d1": {"text": f"one{ODD}two"}, "d2": {"text": "three"}}
    q = tmp_path / "queries.tsv"
    q.write_text(f"q1\twhat{ODD}is it\r\nq2\tsecond\n", encoding="utf-8")
    assert read_queries(q) == {"q1": f"what{ODD}is it", "q2": "second"}


def test_a_batch_answer_holding_a_line_separator_is_collected(tmp_path):
    queries = {"q1": "a question"}
    passages = {f"d{i}": {"text": f"passage {i}"} for i in range(3)}
    pairs = [("q1", d) for d in passages]

    def answer(req) -> Reply:
        n = int(re.search(r"passage (\d)", json.dumps(req.body)).group(1))
        return Reply.text(f"reasoning{ODD}more\n##final score: {n}")

    with FakeBatchAPI(answer) as batch, LabelStore(tmp_path / "s.sqlite") as store:
        cfg = JudgeConfig(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1",
                          batch_url=batch.base_url, api_key="k", cache_dir=tmp_path / "cache",
                          timeout=5.0, backoff=0.01, max_attempts=2, batch=True,
                          poll_interval=0.01)
        result = asyncio.run(BatchJob(Labeller(cfg), store).run(pairs, queries, passages,
                                                                  wait=True))
        outputs = [f["_content"] for f in batch.files.values() if f["purpose"] == "batch_output"]
        got = {e.docid: e.grade for e in store.events()}
    assert any(ODD.encode() in c for c in outputs)  # the server really sent them raw
    assert result.complete and got == {"d0": 0, "d1": 1, "d2": 2}
