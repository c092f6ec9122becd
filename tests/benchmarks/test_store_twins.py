"""bench/store_twins.py's twins do the store commands' work from the exported files: given
the same labels, each prints or writes what its store command does. (The twins
of `estimate` and `report` read only the exported labels; `estimate`'s estimated nothing.)"""

from __future__ import annotations

import json

from bench.store_twins import HUMAN, JUDGE, merge, read_sample, sample_json
from bench.store_twins import estimate as estimate_twin
from bench.store_twins import sample as sample_twin

from reljudge.cli import main
from reljudge.io.trec import write_qrels
from reljudge.store import LabelStore


def _exported(tmp_path) -> tuple[str, list[str], list[str]]:
    """A store of NIST's and two judges' labels of 400 pairs, each source exported to
    NAME.qrels, and two runs over the pairs: (store, exported files, runs)."""
    store = str(tmp_path / "s.sqlite")
    pairs = [(f"q{i % 8}", f"d{i}") for i in range(400)]
    with LabelStore(store) as held:
        held.add_grades([(q, d, i % 4) for i, (q, d) in enumerate(pairs)], "human", HUMAN)
        for j, name in enumerate([JUDGE, "other"]):
            held.add_grades([(q, d, (i * (j + 2)) % 4) for i, (q, d) in enumerate(pairs)],
                            "llm", name)
        for source in held.sources():
            write_qrels(held.merge(f"source={source.name}").qrels,
                        tmp_path / f"{source.name}.qrels")
    runs = []
    for r in range(2):
        run = tmp_path / f"r{r}.run"
        run.write_text("".join(f"{q} Q0 {d} {i} {100 - (i * (r + 3)) % 97} r{r}\n"
                               for i, (q, d) in enumerate(pairs)))
        runs.append(str(run))
    return store, [str(tmp_path / f"{n}.qrels") for n in (HUMAN, JUDGE, "other")], runs


def test_the_merge_and_estimate_twins_give_what_the_store_commands_give(tmp_path, capsys):
    store, exported, runs = _exported(tmp_path)
    assert main(["labels", "merge", "--store", store, "--out", str(tmp_path / "m.qrels")]) == 0
    merge(str(tmp_path / "twin.qrels"), exported)
    assert (tmp_path / "twin.qrels").read_text() == (tmp_path / "m.qrels").read_text()

    assert main(["sample", "--store", store, "--judge", JUDGE, "--name", "s0", "--budget",
                 "300", "--seed", "1"]) == 0
    sample_twin(exported[1], str(tmp_path / "s.json"))
    with LabelStore(store) as held:
        drawn = held.sample("s0")
    twin_drawn = read_sample(str(tmp_path / "s.json"))
    assert twin_drawn.items == drawn.items and twin_drawn.params == drawn.params
    (tmp_path / "s0.json").write_text(sample_json(drawn))
    assert json.loads((tmp_path / "s0.json").read_text())["name"] == "s0"
    capsys.readouterr()

    assert main(["estimate", "--store", store, "--sample", "s0", "-m", "DCG@10", *runs]) == 0
    from_store = capsys.readouterr()
    estimate_twin(exported[1], exported[0], str(tmp_path / "s0.json"), runs)
    from_files = capsys.readouterr()
    assert from_files.out == from_store.out and "ppi" in from_store.out
    assert from_files.err == from_store.err
