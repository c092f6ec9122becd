"""Token estimates and budget bounds against a real tokenizer (o200k_base, shipped offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.cost import Price, estimate_tokens, explicit_price, price_for
from reljudge.judge.prompts import builtin_names, load_template

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "hr-handbook"


def chats(name):
    queries = [line.split("\t", 1)[1] for line in
               (EXAMPLE / "queries.tsv").read_text(encoding="utf-8").splitlines() if line]
    passages = [json.loads(line) for line in
                (EXAMPLE / "passages.jsonl").read_text(encoding="utf-8").splitlines() if line]
    t = load_template(name)
    return [t.render(q, p["text"], p.get("title")) for q in queries for p in passages]


@pytest.mark.parametrize("name", sorted(builtin_names()))
def test_dry_run_estimate_is_within_15_percent_and_the_bound_is_an_upper_bound(name):
    import bpe_openai as bpe
    enc = bpe.get_encoding("o200k_base")
    real = est = 0
    for msgs in chats(name):
        n = sum(len(enc.encode(m["content"])) + 3 for m in msgs) + 3
        real += n
        est += estimate_tokens(msgs)
        assert prompt_tokens_bound(msgs) >= n  # the budget never under-reserves a prompt
    assert abs(est / real - 1) <= 0.15, (est, real)


def test_a_price_given_by_hand_costs_0_for_the_part_left_out_and_beats_the_list_price():
    assert explicit_price(None, None) is None
    assert explicit_price(1.5, None) == Price(1.5, 0.0) == price_for("gpt-4o",
                                                                     override=(1.5, None))
    assert explicit_price(None, 2.0) == Price(0.0, 2.0)
    assert price_for("gpt-4o", override=(None, None)) == Price(2.50, 10.00)
