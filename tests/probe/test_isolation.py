"""Probes never reach real labels: every reader of a label store (its methods, and the commands
that merge, export, count, sample, estimate, calibrate and audit) gives the same output after a
probe run added probes, their grades, claims and spend to the store, on SQLite and on
PostgreSQL."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.judge import JudgeConfig
from reljudge.labels import LabelEvent
from reljudge.probe import probe
from reljudge.store import LabelStore
from reljudge.store.merge import POLICIES
from reljudge.testing import FakeOpenAI
from reljudge.testing.graders import hash_grader
from tests.backends import BACKENDS, store_location
from tests.helpers import ND, NQ, grade_sample

#: methods of LabelStore that write (never called by a snapshot)
WRITERS = {"add_events", "add_grades", "add_queries", "add_passages", "add_sample",
           "assign_sample", "add_derived", "open_spend", "update_spend", "claim",
           "renew_claims", "release_claims", "close", "add_probes", "add_probe_events",
           "claim_probes", "renew_probe_claims", "release_probe_claims", "open_probe_spend",
           "update_probe_spend"}
#: readers of the probe tables themselves, and the one reader that counts probes by design:
#: total_spend, the money --max-total-cost caps (tested on its own below)
PROBE_READERS = {"probe_texts", "probe_grades", "probe_judges", "probe_outcomes", "probe_spend",
                 "total_spend"}


def reader_calls(store: LabelStore) -> dict[str, list[tuple]]:
    """Every reader of real labels, with the arguments it is called with."""
    pairs = sorted(store.judged_pairs())[:40]
    qids, docids = sorted({q for q, _ in pairs}), sorted({d for _, d in pairs})
    policies = [p for p in POLICIES if "=" not in p] + ["source=judge-a"]
    return {
        "count": [()], "fingerprint": [()], "judged_pairs": [(), (["judge-a"],)],
        "events": [()], "cost_rows": [("llm",), ("human",)], "meta_counts": [("llm",)],
        "outcomes": [("judge-a",), ("ann1",)], "label_rows": [()],
        "standing": [("human",), ("llm",)], "standing_columns": [("human",), ("llm",)],
        "stale_labels": [()], "source_list": [()],
        "standing_ids": [(p,) for p in policies], "sources": [()], "failures": [()],
        "current_failures": [()], "source_grades": [("judge-a",), ("ann1",)],
        "merge": [(p,) for p in policies], "conflicts": [()], "votes": [()],
        "id_names": [()], "pair_ids": [()], "source_kinds": [()], "source_counts": [()],
        "qrels": [("judge-a",), ("ann1",)], "source_qrels": [(["judge-a", "ann1"],)],
        "text_history": [("passage", "d0-0"), ("query", "q0")], "shown_now": [(pairs,)],
        "queries": [()], "query_texts": [(qids,)], "passage_texts": [(docids,)],
        "passage_titles": [(docids,)], "passages_with_text": [()], "texts": [(pairs,)],
        "sample_names": [()], "sample_pairs": [("q10",)], "sample": [("q10",)],
        "sample_assignment": [("q10",)], "derivations": [()],
        "distributions": [("judge-a",)], "labels_dataframe": [()],
        "provenance_dataframe": [(p,) for p in policies], "failures_dataframe": [()],
        "conflicts_dataframe": [()], "spend": [()], "live_claims": [()],
        "find_import": [("0" * 64, "human", "ann1")],
        "resolve_policy": [(p,) for p in policies] + [("source=judge",)],
    }


def canon(x):
    """A value as plain, comparable data."""
    if hasattr(x, "to_dict") and hasattr(x, "columns"):  # a DataFrame
        return canon(x.to_dict("list"))
    if isinstance(x, np.ndarray):  # NaN (a grade without seconds) equal to itself
        return canon(x.tolist())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return canon(dataclasses.asdict(x))
    if isinstance(x, dict):
        return sorted((repr(k), canon(v)) for k, v in x.items())
    if isinstance(x, set | frozenset):
        return sorted(map(repr, x))
    if isinstance(x, list | tuple) or inspect.isgenerator(x) or hasattr(x, "__next__"):
        return [canon(v) for v in x]
    if hasattr(x, "to_dict"):
        return canon(x.to_dict())
    if hasattr(x, "__dict__"):
        return canon(vars(x))
    return repr(x)


def store_readers(location) -> dict[str, object]:
    with LabelStore(location) as store:
        return {f"{name}{args!r}": canon(getattr(store, name)(*args))
                for name, calls in reader_calls(store).items() for args in calls}


def command_outputs(location, tmp_path, runs, capsys, tag: str) -> dict[str, object]:
    """What the commands that read labels print and write."""
    out: dict[str, object] = {}
    store = str(location)

    def run(name, *argv, files=()):
        capsys.readouterr()
        code = main(list(argv))
        printed = capsys.readouterr()
        out[name] = (code, same_places(printed.out),
                     [same_places(p.read_text()) if p.exists() else None for p in files])

    def same_places(text: str) -> str:  # the two stores and folders have different names
        return text.replace(str(tmp_path), "DIR").replace(store, "STORE")

    run("stats", "labels", "stats", "--store", store, "--json")
    run("sources", "labels", "sources", "--store", store, "--json")
    run("conflicts", "labels", "conflicts", "--store", store, "--json")
    for policy in [p for p in POLICIES if "=" not in p] + ["source=judge-a"]:
        q, prov = tmp_path / f"{tag}-{policy}.qrels", tmp_path / f"{tag}-{policy}.jsonl"
        run(f"merge {policy}", "labels", "merge", "--store", store, "--policy", policy,
            "--out", str(q), "--provenance", str(prov), "--json", files=(q, prov))
    for source in ("judge-a", "ann1"):
        q = tmp_path / f"{tag}-{source}.qrels"
        run(f"export {source}", "labels", "export", "--store", store, "--source", source,
            "--out", str(q), files=(q,))
    run("estimate", "estimate", "--store", store, "--sample", "q10", *map(str, runs),
        "-m", "nDCG@10", "-m", "P@5", "--json")
    run("audit", "audit", "--store", store, "--human-source", "ann1", "--judge-source",
        "judge-a", *map(str, runs), "--json")
    # commands that write: a sample drawn and a calibration fitted under a name of this pass
    run("sample", "sample", "--store", store, "--judge", "judge-a", "--name", f"s-{tag}",
        "--design", "stratified-pairs", "--budget", "60", "--seed", "5")
    with LabelStore(location) as s:
        out["sample pairs"] = s.sample_pairs(f"s-{tag}")
    cal = tmp_path / f"{tag}-cal.tsv"
    run("calibrate", "calibrate", "--store", store, "--human-source", "ann1",
        "--judge-source", "judge-a", "--folds", "2", "--out", str(cal), "--force", "--json",
        files=(cal,))
    return out


def real_store(location, tmp_path, capsys):
    """A store with an LLM judge's labels (and failures) on every pair, texts, a human sample
    of ten queries graded, spend; and two runs."""
    rng = np.random.default_rng(0)
    truth = {(f"q{q}", f"d{q}-{d}"): int(rng.integers(0, 4)) for q in range(NQ)
             for d in range(ND)}
    judge = {p: int(min(3, g + rng.binomial(1, 0.5))) for p, g in truth.items()}
    with LabelStore(location) as store:
        store.add_queries({f"q{q}": f"query {q} about topic{q} things" for q in range(NQ)})
        store.add_passages({d: f"passage {d} on topic{q[1:]} and more words {g}"
                            for (q, d), g in truth.items()})
        store.add_grades([(q, d, g) for (q, d), g in judge.items()], "llm", "judge-a")
        store.add_events([LabelEvent("q0", "d0-1", None, "llm", "judge-a",
                                     failure="no grade", failure_kind="unparseable")])
        run = store.open_spend("judge-a", "http://x/v1")
        store.update_spend(run, 5, 100, 10, 0.25)
    runs = []
    for i, noise in enumerate((0.5, 2.0)):
        path = tmp_path / f"r{i}.run"
        path.write_text("".join(f"{q} Q0 {d} 0 {g + noise * rng.normal():.6f} sys{i}\n"
                                for (q, d), g in truth.items()))
        runs.append(path)
    assert main(["sample", "--store", str(location), "--judge", "judge-a", "--name", "q10",
                 "--design", "srs-queries", "--query-count", "10", "--seed", "3"]) == 0
    grade_sample(location, truth, "q10")
    capsys.readouterr()
    return truth, runs


def add_probes(location, truth, tmp_path) -> None:
    """A real probe run into the store: probes, their grades, claims and spend."""
    queries = {f"q{q}": f"query {q} about topic{q} things" for q in range(NQ)}
    passages = {d: f"passage {d} on topic{q[1:]} and more words {g}"
                for (q, d), g in truth.items()}
    known = {}
    for (q, d), g in truth.items():
        known.setdefault(q, {})[d] = g
    with FakeOpenAI(hash_grader) as server, LabelStore(location) as store:
        cfg = JudgeConfig(model="m", base_url=server.base_url, api_key="k",
                          cache_dir=tmp_path / "pcache", price_in=1.0, price_out=1.0)
        report = probe(cfg, queries, passages, known, per_kind=4, seed=1, store=store,
                       prompts=["umbrela", "guarded"])
        assert report.complete and server.calls > 0
        assert store.probe_texts() and store.probe_grades() and store.probe_spend() > 0
        # a claim left by a killed probe process, too
        store.claim_probes("m/x", "dead-owner", [("q0", "probe:x:d0-0:0", 0)], 3600, 0.0)


@pytest.mark.slow  # every command, on two stores of each backend
@pytest.mark.parametrize("backend", BACKENDS)
def test_probes_reach_no_command_that_reads_real_labels(backend, request, tmp_path, capsys):
    """Two stores built alike, probes added to one: every command prints and writes the same
    (commands that write, sample and calibrate, write alike too)."""
    outputs = []
    for name, probed in (("plain", False), ("probed", True)):
        location = store_location(request, tmp_path, name=name, backend=backend)
        folder = tmp_path / name
        folder.mkdir()
        truth, runs = real_store(location, folder, capsys)
        if probed:
            with LabelStore(location) as store:
                spent_before = store.total_spend()
            add_probes(location, truth, folder)
            with LabelStore(location) as store:
                assert store.total_spend() > spent_before  # money is money, whatever it bought
                assert not [d for d in store.passages_with_text() if d.startswith("probe:")]
                assert not [n for _, n in store.source_list() if "probe" in n]
        outputs.append(command_outputs(location, folder, runs, capsys, "x"))
    plain, probed = outputs
    assert plain.keys() == probed.keys()
    for key in plain:
        assert probed[key] == plain[key], key
    assert all(code == 0 for key, (code, *_) in ((k, v) for k, v in plain.items()
                                                 if isinstance(v, tuple)))


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_store_readers_are_identical_with_and_without_probes(backend, request, tmp_path,
                                                           capsys):
    location = store_location(request, tmp_path, backend=backend)
    truth, _ = real_store(location, tmp_path, capsys)
    before = store_readers(location)
    add_probes(location, truth, tmp_path)
    after = store_readers(location)
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] == before[key], key


def test_every_public_method_of_the_store_is_a_known_reader_or_writer(tmp_path):
    """A reader added to LabelStore must join reader_calls (and so the isolation tests)."""
    public = {n for n, v in inspect.getmembers(LabelStore) if not n.startswith("_")
              and callable(v)}
    with LabelStore(tmp_path / "empty.sqlite") as store:
        readers = set(reader_calls(store))
    assert readers <= public
    assert public - (WRITERS | PROBE_READERS | readers) == set()
