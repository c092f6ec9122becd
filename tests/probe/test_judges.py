"""Probing a judge (reljudge.probe) through the real HTTP path: scripted judges of known
behaviour (lexical, oracle, obeying with a planted probability) against their flip rates,
every count against a recount from the store, and what a run could gain."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reljudge.io import read_passages, read_queries
from reljudge.io.trec import read_qrels, read_run
from reljudge.judge import JudgeConfig
from reljudge.probe import probe
from reljudge.probe.analysis import mcnemar_exact, wilson
from reljudge.probe.kinds import CLEAN, INSTRUCTION
from reljudge.probe.stored import stored_report
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI
from reljudge.testing.graders import lexical_grader, obeying_grader, oracle_grader
from reljudge.testing.synthetic import with_other_topics

HR = Path(__file__).resolve().parents[2] / "examples" / "hr-handbook"


def hr_data():
    """hr-handbook's queries and passages, and known grades: its human qrels, plus grade 0 for
    each passage judged for another query only (a handbook chunk on another topic)."""
    queries = read_queries(HR / "queries.tsv")
    passages = read_passages(HR / "passages.jsonl")
    return queries, passages, with_other_topics(read_qrels(HR / "human.qrels").to_dict())


def oracle_map(queries, passages, known):
    return {queries[q]: {passages[d]["text"]: g for d, g in docs.items()}
            for q, docs in known.items()}


def config(server, tmp_path, **kw) -> JudgeConfig:
    return JudgeConfig(model="m", base_url=server.base_url, api_key="k",
                       cache_dir=tmp_path / "cache", **{"concurrency": 8, **kw})


def by_kind(report, template_prefix=""):
    return {r.kind: r for r in report.kinds if r.template.startswith(template_prefix)}


def test_wilson_and_mcnemar_match_their_references():
    from scipy.stats import binomtest
    from statsmodels.stats.proportion import proportion_confint

    for k, n in [(0, 10), (3, 10), (10, 10), (45, 100), (1, 1)]:
        assert wilson(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"))
    assert wilson(0, 0) == (0.0, 1.0)
    assert mcnemar_exact(7, 1) == pytest.approx(binomtest(7, 8, 0.5).pvalue)
    assert mcnemar_exact(0, 0) == 1.0


@pytest.mark.slow  # several hundred calls to a local server
def test_a_lexical_judge_is_fooled_by_query_insertion_but_not_by_salad(tmp_path):
    queries, passages, known = hr_data()
    with FakeOpenAI(lexical_grader) as server:
        report = probe(config(server, tmp_path), queries, passages, known,
                       kinds=["query-insert", "salad", "salad+query"], per_kind=200, seed=1)
    kinds = by_kind(report)
    insert, salad = kinds["query-insert"], kinds["salad"]
    assert insert.clean_zero >= 100 and salad.clean_zero >= 100
    assert insert.flip1_rate >= 0.90 and salad.flip1_rate <= 0.02
    assert kinds["salad+query"].flip1_rate >= 0.90
    assert insert.mcnemar_p < 1e-6 and salad.rose == 0  # salad only takes words away
    assert not [w for w in report.warnings if "control" in w]


@pytest.mark.slow
def test_an_oracle_judge_flips_never(tmp_path):
    queries, passages, known = hr_data()
    with FakeOpenAI(oracle_grader(oracle_map(queries, passages, known))) as server:
        report = probe(config(server, tmp_path), queries, passages, known, per_kind=40, seed=2)
    kinds = by_kind(report)
    assert set(kinds) == {"query-insert", "query-words", "rubric-echo", "instruction",
                          "salad+query", "salad", "padding"}
    for name, r in kinds.items():
        assert r.n > 0 and r.flips1 == 0 and r.flip1_rate in (0.0, None), name
        assert r.changed == 0 and r.mean_shift == 0, name
    assert kinds["padding"].clean_grades and min(kinds["padding"].clean_grades) >= 2
    assert report.complete


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.3])
def test_a_judge_obeying_instructions_with_probability_p_flips_at_p(tmp_path, p):
    queries, passages, known = hr_data()
    grader = obeying_grader(oracle_map(queries, passages, known), p, INSTRUCTION)
    with FakeOpenAI(grader) as server:
        report = probe(config(server, tmp_path), queries, passages, known,
                       kinds=["instruction", "query-insert"], per_kind=400, seed=3)
    kinds = by_kind(report)
    r = kinds["instruction"]
    assert r.clean_zero >= 300
    assert r.flip1_ci[0] <= p <= r.flip1_ci[1]
    assert r.flips2 == r.flips1  # it obeys with the top grade
    assert kinds["query-insert"].flips1 == 0


@pytest.mark.slow
def test_every_count_equals_a_recount_from_the_recorded_texts_and_grades(tmp_path):
    queries, passages, known = hr_data()
    db = tmp_path / "s.sqlite"
    with FakeOpenAI(lexical_grader) as server, LabelStore(db) as store:
        report = probe(config(server, tmp_path), queries, passages, known, per_kind=30,
                       seed=4, prompts=["umbrela", "basic"], store=store)
    with LabelStore(db) as store:
        texts = store.probe_texts()
        answers = store.probe_grades()
        def key(r):
            return r.template, r.kind

        stored = sorted(stored_report(store).kinds, key=key)  # what report and audit show
        assert stored == sorted(report.kinds, key=key)
    assert len(report.judges) == 2
    for judge in report.judges:
        grade = {(a.qid, a.docid): a.grade for a in answers if a.judge == judge}
        clean = {(t.qid, t.original): grade.get((t.qid, t.docid)) for t in texts
                 if t.kind == CLEAN}
        counts: dict[str, Counter] = {}
        for t in texts:
            if t.kind == CLEAN or (t.qid, t.docid) not in grade:
                continue  # rubric-echo of the other template: not asked of this judge
            c, g = clean[(t.qid, t.original)], grade[(t.qid, t.docid)]
            n = counts.setdefault(t.kind, Counter())
            n["n"] += 1
            n["clean_zero"] += c == 0
            n["flips1"] += c == 0 and g >= 1
            n["flips2"] += c == 0 and g >= 2
            n["changed"] += c != g
            # the lexical rule, applied to the recorded text, gives the recorded grade
            assert g == lexical_grade(queries[t.qid], t.text)
        for r in report.kinds:
            if r.template == judge:
                assert (r.n, r.clean_zero, r.flips1, r.flips2, r.changed) == \
                    tuple(counts[r.kind][k] for k in ("n", "clean_zero", "flips1", "flips2",
                                                      "changed")), r.kind


def lexical_grade(query: str, passage: str) -> int:
    from reljudge.probe.kinds import content_words, words

    wanted, found = content_words(query), {w.lower() for w in words(passage)}
    return min(3, int(4 * sum(w in found for w in wanted) / len(wanted)))


@pytest.mark.slow
def test_what_a_run_could_gain_by_the_exploit_under_a_lexical_judge(tmp_path):
    queries, passages, known = hr_data()
    runs = [read_run(HR / "runs" / "bm25.run"), read_run(HR / "runs" / "trigram.run")]
    with FakeOpenAI(lexical_grader) as server:  # one job, the gains under each measure
        report = probe(config(server, tmp_path), queries, passages, known,
                       kinds=["query-insert"], per_kind=5, runs=runs, depth=10,
                       measures=["nDCG@10", "DCG@10"])
    gains = {m: [g for g in report.gains if g.measure == m] for m in ("nDCG@10", "DCG@10")}
    assert [len(gains["nDCG@10"]), len(gains["DCG@10"])] == [2, 2] == [len(runs)] * 2
    assert len(report.gains) == 4  # one a run and measure, none of another measure
    ndcg = {g.run: g for g in gains["nDCG@10"]}
    assert [ndcg["bm25"].rank_now, ndcg["trigram"].rank_now] == [1, 2]
    assert ndcg["trigram"].rank_exploited == 1  # the second run cheats its way to the top
    assert ndcg["bm25"].replaced > 0 and ndcg["trigram"].replaced > 0
    for g in gains["DCG@10"]:  # no normaliser: the cheat's own score can only rise
        assert g.gain > 0 and g.exploited == g.now + g.gain
    with FakeOpenAI(oracle_grader(oracle_map(queries, passages, known))) as server:
        honest = probe(config(server, tmp_path / "o"), queries, passages, known,
                       kinds=["query-insert"], per_kind=5, runs=runs, depth=10)
    assert all(g.gain == 0 and g.rank_now == g.rank_exploited for g in honest.gains)


def test_the_report_is_json_with_every_number(tmp_path):
    queries, passages, known = hr_data()
    with FakeOpenAI(lexical_grader) as server:
        report = probe(config(server, tmp_path), queries, passages, known,
                       kinds=["salad"], per_kind=10)
    data = json.loads(json.dumps(report.summary()))
    row = data["kinds"][0]
    assert row["kind"] == "salad" and row["n"] == 10 and row["control"] is True
    assert {"flip1_rate", "flip1_ci", "flip2_rate", "mean_shift", "mcnemar_p"} <= set(row)


def test_the_front_door_gives_the_probe_function_even_after_the_package_is_imported():
    import reljudge
    import reljudge.probe.kinds  # noqa: F401  (sets the package attribute; it stays the call)

    assert reljudge.probe is probe and "probe" in reljudge.__all__


def test_a_judge_that_grades_salad_relevant_makes_the_control_warn(tmp_path):
    from reljudge.testing.graders import hash_grader

    queries, passages, known = hr_data()
    with FakeOpenAI(hash_grader) as server:  # grades at random: salad too
        report = probe(config(server, tmp_path), queries, passages, known, kinds=["salad"],
                       per_kind=40)
    salad = by_kind(report)["salad"]
    assert salad.flip1_rate > 0.05
    assert [w for w in report.warnings if w.startswith("the control (salad) flipped")]


def test_several_templates_are_probed_on_the_same_pairs(tmp_path):
    queries, passages, known = hr_data()
    with FakeOpenAI(lexical_grader) as server:
        report = probe(config(server, tmp_path), queries, passages, known, per_kind=8,
                       prompts=["umbrela", "guarded"], kinds=["query-insert", "rubric-echo"])
    rows = {(r.template.split("@")[0], r.kind): r for r in report.kinds}
    assert set(rows) == {(t, k) for t in ("m/umbrela", "m/guarded")
                         for k in ("query-insert", "rubric-echo")}
    for kind in ("query-insert", "rubric-echo"):  # the same pairs: the same clean grades
        assert rows[("m/umbrela", kind)].clean_grades == rows[("m/guarded", kind)].clean_grades


def test_each_template_echoes_its_own_rubric_on_the_same_pairs():
    from reljudge.probe.run import plan_probes

    queries, passages, known = hr_data()
    cfg = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", api_key="k")
    plan = plan_probes(cfg, queries, passages, known, prompts=["umbrela", "basic"],
                       kinds=["rubric-echo", "salad"], per_kind=10, seed=5)
    umbrela, basic = plan.sets
    assert umbrela.bases == basic.bases and len(umbrela.bases["salad"]) == 10
    echo = {p.text.split(". ")[0] for p in umbrela.probes.values() if p.kind == "rubric-echo"}
    assert echo == {"The passage is dedicated to the query and contains the exact answer"}
    assert all(p.text.startswith("Dedicated to the query, exact answer. ")
               for p in basic.probes.values() if p.kind == "rubric-echo")
    again = plan_probes(cfg, queries, passages, known, prompts=["umbrela"],
                        kinds=["rubric-echo", "salad"], per_kind=10, seed=5).sets[0]
    assert again.probes == umbrela.probes  # seeded: the same probes, text for text


def test_one_max_cost_caps_every_template_together(tmp_path):
    """The second template gets what the first left of --max-cost, not a cap of its own."""
    from reljudge.judge.sync import run_sync
    from reljudge.probe.run import ask, plan_probes

    queries, passages, known = hr_data()
    # the server counts 100 tokens in, 10 out: $0.11 a call; a call starts only when its
    # worst case fits (the prompt's bound plus 100 out: umbrela's about $1.6, guarded's $2.4)
    with FakeOpenAI(lexical_grader) as server:
        cfg = config(server, tmp_path, price_in=1000.0, price_out=1000.0, max_tokens=100,
                     max_cost=2.6, concurrency=1)
        plan = plan_probes(cfg, queries, passages, known, prompts=["umbrela", "guarded"],
                           kinds=["salad"], per_kind=3)
        reports = run_sync(ask(plan))
    first, second = reports
    assert first.complete and first.cost == pytest.approx(6 * 0.11)
    assert second.stop_reason == "budget" and second.calls == 0  # $1.94 left: none fits
    assert first.cost + second.cost <= 2.6
