"""Token estimates and budget bounds against a real tokenizer (o200k_base, shipped offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.cost import estimate_tokens
from reljudge.judge.prompts import builtin_names, load_template

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hr-handbook"


def chats(name):
    queries = [line.split("\t", 1)[1] for line in
               (EXAMPLE / "queries.tsv").read_text(encoding="utf-8").splitlines() if line]
    passages = [json.loads(line) for line in
                (EXAMPLE / "passages.jsonl").read_text(encoding="utf-8").splitlines() if line]
    t = load_template(name)
    return [t.render(q, p["text"], p.get("title")) for q in queries for p in passages]


@pytest.mark.parametrize("name", sorted(builtin_names()))
def test_dry_run_estimate_is_within_15_percent_and_the_bound_is_an_upper_bound(name):
    bpe = pytest.importorskip("bpe_openai")
    enc = bpe.get_encoding("o200k_base")
    real = est = 0
    for msgs in chats(name):
        n = sum(len(enc.encode(m["content"])) + 3 for m in msgs) + 3
        real += n
        est += estimate_tokens(msgs)
        assert prompt_tokens_bound(msgs) >= n  # the budget never under-reserves a prompt
    assert abs(est / real - 1) <= 0.15, (est, real)
