"""report.facts: input checksums equal hashlib's, and a judge's cost splits into money spent
now and the value of answers the cache gave (a real SQLite store)."""

from __future__ import annotations

import hashlib

from reljudge.judge.cost import Price, price_for
from reljudge.labels import LabelEvent
from reljudge.report.facts import cost_line, input_file, input_files, judges_and_costs
from reljudge.store import LabelStore

META = {"model": "gpt-4o-mini", "endpoint": "https://api.openai.com/v1", "prompt": "umbrela",
        "prompt_version": "1", "prompt_hash": "f8e67d3b1216"}


def test_input_checksums_and_sizes_equal_hashlibs(tmp_path):
    a = tmp_path / "a.run"
    a.write_bytes(b"q1 Q0 d1 1 2.0 x\n" * 10_000 + b"\xff\x00")
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * 9000)  # more than one 1 MiB block
    for path in (a, big):
        f = input_file("run", path)
        data = path.read_bytes()
        assert f.sha256 == hashlib.sha256(data).hexdigest() and f.size == len(data)
    same = input_files([("run", a), ("again", tmp_path / "." / "a.run"), ("x", big)])
    assert [f.role for f in same] == ["run", "x"]  # each file once, first role kept


def event(i: int, cost: float | None, model: str = "gpt-4o-mini", tin: int = 1000,
          tout: int = 20) -> LabelEvent:
    return LabelEvent(f"q{i}", f"d{i}", i % 4, "llm", f"{model}/umbrela", tokens_in=tin,
                      tokens_out=tout, cost=cost, meta={**META, "model": model})


def test_cost_splits_paid_calls_from_cached_answers(tmp_path):
    price = price_for("gpt-4o-mini")
    assert price.known and price.cost(1000, 20) > 0
    with LabelStore(tmp_path / "s.sqlite") as store:
        store.add_events([event(0, price.cost(1000, 20)), event(1, price.cost(1000, 20)),
                          event(2, 0.0), event(3, None, tin=500, tout=10),
                          event(4, 0.0, model="my-local-llama")])
        judges, costs = judges_and_costs(store)
    by = {c.source: c for c in costs}
    paid = by["gpt-4o-mini/umbrela"]
    assert paid.spent == 2 * price.cost(1000, 20) and paid.spent_tokens == 2 * 1020
    assert paid.cached_value == price.cost(1000, 20) + price.cost(500, 10)
    assert paid.cached_tokens == 1020 + 510 and paid.unpriced_tokens == 0
    local = by["my-local-llama/umbrela"]
    assert (local.spent, local.cached_value, local.unpriced_tokens) == (0.0, 0.0, 1020)
    j = next(j for j in judges if j.model == "gpt-4o-mini")
    assert (j.endpoint_host, j.prompt, j.prompt_hash, j.events) == (
        "api.openai.com", "umbrela", "f8e67d3b1216", 4)
    line = cost_line(costs)
    assert line.startswith(f"${paid.spent:.4f} spent now (2,040 tokens) / "
                           f"${paid.cached_value:.4f} from the cache (1,530 tokens")
    assert line.endswith("; 1,020 more tokens at no known price (a free or unpriced model)")


def test_answers_all_from_the_cache_show_zero_spent_and_their_value(tmp_path):
    with LabelStore(tmp_path / "s.sqlite") as store:
        store.add_events([event(i, 0.0, model="fake-judge", tin=100, tout=10)
                          for i in range(174)])
        _, unpriced = judges_and_costs(store)
        _, priced = judges_and_costs(store, Price(0.15, 0.60))  # the pipeline's price
    assert cost_line(unpriced).startswith("$0.0000 spent now (0 tokens) / $0.0000 from the "
                                          "cache (0 tokens")
    assert "19,140 more tokens at no known price" in cost_line(unpriced)
    value = 174 * Price(0.15, 0.60).cost(100, 10)
    assert cost_line(priced) == (f"$0.0000 spent now (0 tokens) / ${value:.4f} from the cache "
                                 "(19,140 tokens answered by the answer cache, not charged "
                                 f"again) / ${value:.4f} total")


def test_an_irds_input_is_recorded_by_dataset_id_once_per_role(tmp_path):
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    got = input_files([("queries", "irds:beir/scifact/test"), ("run", run),
                       ("passages", "irds:beir/scifact/test"),
                       ("queries", "irds:beir/scifact/test")])
    assert [f.role for f in got] == ["queries", "run", "passages"]
    q = got[0]
    assert (q.dataset, q.sha256, q.size) == ("beir/scifact/test", None, None)
    assert q.record() == {"role": "queries", "dataset": "beir/scifact/test",
                          "ir_datasets": q.ir_datasets}
    assert got[1].record() == {"role": "run", "path": str(run), "size": run.stat().st_size,
                               "sha256": hashlib.sha256(run.read_bytes()).hexdigest()}
