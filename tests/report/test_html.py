"""The HTML report of the hr-handbook pipeline: summary first, plots as well-formed inline SVG
without matplotlib, configuration with checksums, cost split into spent now and cached,
conflicts with their texts, nothing fetched from the network."""

from __future__ import annotations

import hashlib
import html
import re
import xml.etree.ElementTree as ET

import pytest

from reljudge.cli import main
from reljudge.judge.cost import Price
from reljudge.pipeline import load_config
from reljudge.store import LabelStore
from reljudge.store.views import conflicts_with_text
from tests.helpers import EXAMPLE, run_pipelines

SVG_NS = "{http://www.w3.org/2000/svg}"


def report_of(example, out) -> str:
    assert main(["report", "--pipeline", str(example / "pipeline.toml"), "--out",
                 str(out)]) == 0
    return out.read_text(encoding="utf-8")


def section(page: str, sid: str) -> str:
    """The text of one <section id=...> of the page."""
    m = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert m, f"no section {sid}"
    return m.group(1)


#: the tests that read ``example_report`` share one xdist worker, so it is made once
ONE_REPORT = pytest.mark.xdist_group("example_report")


@pytest.fixture(scope="module")
def example_report(tmp_path_factory) -> tuple:
    """The hr-handbook pipeline run against the scripted server and its HTML report, made
    once for the tests that only read them: (the example's folder, the page)."""
    folder = tmp_path_factory.mktemp("html")
    with pytest.MonkeyPatch.context() as monkeypatch:
        run_pipelines([folder / "hr"], folder / "cache", monkeypatch)
        return folder / "hr", report_of(folder / "hr", folder / "report.html")


@ONE_REPORT
def test_report_answers_first_and_is_self_contained(example_report):
    _, page = example_report
    order = [page.index(f'<section id="{s}">') for s in
             ("summary", "differences", "scores", "per-query", "judge", "conflicts",
              "configuration")]
    assert order == sorted(order)  # the summary comes first, the configuration last
    summary = section(page, "summary")
    assert "Best run on nDCG@10: trigram (0.7344" in summary
    assert "not significant" in summary
    # 44 pairs and 2 runs: both warnings, in words
    assert "rest on 44 pairs, fewer than 200" in summary
    assert "over 2 runs tau can only be +1 or -1 (or undefined): it means nothing" in summary
    assert "poor agreement (Landis &amp; Koch 1977), 95% CI " in summary  # kappa -0.032
    assert '<th class="num">kappa 95% CI</th>' in section(page, "judge")
    assert "Judged@10 is coverage" in summary
    # plots: our own SVG, well-formed, and no box asking for matplotlib
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == 4  # forest, one panel per run (1), confusion, scatter
    for s in svgs:
        assert ET.fromstring(s).tag == f"{SVG_NS}svg"
    assert "matplotlib" not in page
    forest = ET.fromstring(re.search(r"<svg[^>]*class=\"forest\".*?</svg>", page, re.S)[0])
    assert [g.get("data-run") for g in forest.iter(f"{SVG_NS}g")] == ["trigram"]
    # nothing is fetched from the network when the file is opened; no scripts at all
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page and "<script" not in page
    # the per-query tables and the count table are folded away
    assert re.search(r"<details><summary>Per-query nDCG@10 of every run", page)
    assert re.search(r"<details><summary>Final labels per query", page)


@ONE_REPORT
def test_judged_at_k_is_shown_without_a_test(example_report):
    scores = section(example_report[1], "scores")
    head = re.search(r"<thead>(.*?)</thead>", scores, re.S).group(1)
    assert '<th colspan="2" class="group">Judged@10</th>' in head
    assert '<th colspan="3" class="group">nDCG@10</th>' in head
    assert head.count("p adj.") == 3  # nDCG@10, P@5, RR; none for Judged@10


@ONE_REPORT
def test_configuration_names_judge_prompt_settings_and_input_checksums(example_report):
    example, page = example_report
    config = load_config(example / "pipeline.toml")
    conf = section(page, "configuration")
    with LabelStore(config.store_path, create=False) as store:
        meta = next(store.events(kind="llm")).meta
    assert f"fake-judge at {meta['endpoint'].split('//')[1].rstrip('/').split('/')[0]}" in conf
    assert f"hash <code>{meta['prompt_hash']}</code>" in conf
    assert "umbrela v1" in conf
    assert "top 10 of every run" in conf and "human-first, majority" in conf
    files = [config.path(config.inputs.queries), config.path(config.inputs.passages),
             *[config.path(r) for r in config.inputs.runs],
             config.path(config.inputs.human_qrels), config.out_dir / "qrels.txt"]
    rows = re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td><td>([0-9a-f]{12})</td>"
                      r'<td class="num">(\d+)</td></tr>', conf)
    assert len(rows) == len(files)
    for (shown, digest, size), path in zip(rows, files, strict=True):
        data = path.read_bytes()
        assert shown.endswith(path.name)
        assert digest == hashlib.sha256(data).hexdigest()[:12]
        assert int(size) == len(data)


def cost_numbers(page: str) -> tuple[float, int, float, int]:
    m = re.search(r"\$([0-9.]+) spent now \(([0-9,]+) tokens\) / \$([0-9.]+) from the cache "
                  r"\(([0-9,]+) tokens", section(page, "configuration"))
    assert m, "no cost line"
    return (float(m[1]), int(m[2].replace(",", "")), float(m[3]),
            int(m[4].replace(",", "")))


def test_cost_is_spent_now_for_fresh_answers_and_cached_value_for_cache_hits(
        tmp_path, monkeypatch):
    # the second folder has its own new store: every answer comes from the cache
    first, again = tmp_path / "hr", tmp_path / "again"
    run_pipelines([first, again], tmp_path / "cache", monkeypatch)
    config = load_config(first / "pipeline.toml")
    with LabelStore(config.store_path, create=False) as store:
        events = list(store.events(kind="llm"))
    price = Price(config.judge.price_in, config.judge.price_out)
    tokens = sum(e.tokens_in + e.tokens_out for e in events)
    value = sum(price.cost(e.tokens_in, e.tokens_out) for e in events)
    assert tokens > 0 and value > 0
    fresh = cost_numbers(report_of(first, tmp_path / "fresh.html"))
    assert fresh == (round(value, 4), tokens, 0.0, 0)
    page = report_of(again, tmp_path / "cached.html")
    assert cost_numbers(page) == (0.0, 0, round(value, 4), tokens)
    assert f"/ ${value:.4f} total" in page


@ONE_REPORT
def test_conflicts_show_query_passage_and_reasoning_folded(example_report):
    example, page = example_report
    config = load_config(example / "pipeline.toml")
    with LabelStore(config.store_path, create=False) as store:
        found = conflicts_with_text(store)
    assert found
    part = section(page, "conflicts")
    assert part.lstrip().startswith("<h2>Conflicts") and "<details><summary>" in part
    assert f"{len(found)} pair(s) whose human and LLM grades differ" in part
    assert part.count('<article class="conflict">') == min(len(found), 50)
    first = found[0]
    assert html.escape(first.query) in part and html.escape(first.passage) in part
    assert html.escape(first.reasoning()) in part
    assert part.index(html.escape(first.passage)) < part.index(html.escape(first.reasoning()))


def _small_files(tmp_path):
    """A qrels file of 6 queries x 4 documents and two runs over them (a, b); their paths."""
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"q{i} 0 d{j} {(i + j) % 3}\n" for i in range(6)
                             for j in range(4)))
    runs = []
    for name, shift in (("a", 0), ("b", 1)):
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"q{i} Q0 d{(j + shift) % 4} {j + 1} {10 - j} {name}\n"
                                for i in range(6) for j in range(4)))
        runs.append(path)
    return qrels, runs


def test_report_from_files_lists_them_with_checksums(tmp_path):
    qrels, runs = _small_files(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", str(qrels), *map(str, runs), "--out", str(out)]) == 0
    page = out.read_text()
    conf = section(page, "configuration")
    for path in (qrels, *runs):
        assert hashlib.sha256(path.read_bytes()).hexdigest()[:12] in conf
    assert "pool depth</dt><dd>not recorded" in conf
    assert "cost" not in conf.split("<h3>Inputs")[0]  # no store: no cost line
    assert "Only 6 queries back the paired tests" in section(page, "summary")


def test_plots_are_drawn_without_matplotlib(tmp_path):
    """The default install (no matplotlib) draws every plot: matplotlib made unimportable."""
    import subprocess
    import sys

    example = EXAMPLE.parent / "llmjudge-dl23"
    out = tmp_path / "r.html"
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from reljudge.cli import main\n"
            f"raise SystemExit(main(['report', {str(example / 'human.qrels')!r}, "
            f"{str(example / 'runs' / 'synthetic-1.run')!r}, "
            f"{str(example / 'runs' / 'synthetic-2.run')!r}, "
            f"'--reference', {str(example / 'human.qrels')!r}, "
            f"'--judge', {str(example / 'judges' / 'Olz-gpt4o.txt')!r}, '--clip', "
            f"'--out', {str(out)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = out.read_text()
    assert len(re.findall(r"<svg", page)) == 4 and "matplotlib" not in page


def test_price_flags_value_cached_answers_of_a_model_without_a_list_price(tmp_path, capsys):
    from reljudge.labels import LabelEvent

    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"q{i} 0 d{j} {j % 3}\n" for i in range(3) for j in range(3)))
    run = tmp_path / "a.run"
    run.write_text("".join(f"q{i} Q0 d{j} {j + 1} {5 - j} a\n" for i in range(3)
                           for j in range(3)))
    store = tmp_path / "s.sqlite"
    with LabelStore(store) as s:  # answers from the cache: tokens, no cost
        s.add_events([LabelEvent(f"q{i}", f"d{j}", j % 3, "llm", "my-model/umbrela",
                                 tokens_in=900, tokens_out=100, cost=0.0,
                                 meta={"model": "my-model"}) for i in range(3)
                      for j in range(3)])
    argv = ["report", str(qrels), str(run), "--store", str(store), "--out"]
    assert main([*argv, str(tmp_path / "a.html")]) == 0
    conf = section((tmp_path / "a.html").read_text(), "configuration")
    assert "$0.0000 spent now (0 tokens) / $0.0000 from the cache (0 tokens" in conf
    assert "9,000 more tokens at no known price" in conf
    assert main([*argv, str(tmp_path / "b.html"), "--price-in", "0.15",
                 "--price-out", "0.60"]) == 0
    value = 9 * Price(0.15, 0.60).cost(900, 100)
    conf = section((tmp_path / "b.html").read_text(), "configuration")
    assert (f"$0.0000 spent now (0 tokens) / ${value:.4f} from the cache (9,000 tokens "
            f"answered by the answer cache, not charged again) / ${value:.4f} total") in conf
    capsys.readouterr()
    assert main([*argv, str(tmp_path / "c.html"), "--price-in", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--price-in and --price-out" in err[0]
    assert not (tmp_path / "c.html").exists()


def test_tables_align_text_left_and_numbers_right():
    from reljudge.tables import Interval, Num
    from reljudge.tables import html_table as table

    page = table(["run", "mean", "95% CI", "queries", "p", "note"],  # cells typed, not guessed
                 [["bm25", Num("0.7175▲"), Interval("[0.670, 0.770]"), 12, None, "ok"],
                  ["dense", Num("0.6100"), Interval.of(-0.1, 0.2, 3), 8, 0.01, "1 tie"]])
    root = ET.fromstring(page)
    heads = [th.get("class") for th in root.iter("th")]
    assert heads == [None, "num", "num", "num", "num", None]
    for tr in list(root.iter("tr"))[1:]:
        assert [td.get("class") for td in tr.iter("td")] == [None, "num", "num", "num", "num",
                                                              None]
    assert '<span class="up">▲</span>' in page


def score_cells(page: str, run: str) -> list[str]:
    """The cells of one run's row in the scores table."""
    m = re.search(rf"<tr><td>{re.escape(run)}(?: \(baseline\))?</td>(.*?)</tr>",
                  section(page, "scores"), re.S)
    assert m, run
    return [html.unescape(re.sub(r"<[^>]+>", "", c))
            for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.S)]


def test_report_float32_scores_reaches_the_evaluation(tmp_path, capsys):
    import json

    # as in compare's test: scores equal in float32 only; float64 ranks the relevant `a`
    # first, float32 sees a tie and breaks it by docid descending, `b` first
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\n")
    r, s = tmp_path / "r.run", tmp_path / "s.run"
    r.write_text("q1 Q0 a 1 1.00000001 r\nq1 Q0 b 2 1.0 r\n")
    s.write_text("q1 Q0 b 1 2.0 s\nq1 Q0 a 2 1.0 s\n")
    argv = ["report", str(qrels), str(r), str(s), "-m", "RR", "--quiet", "--out"]
    assert main([*argv, str(tmp_path / "f64.html")]) == 0
    assert main([*argv, str(tmp_path / "f32.html"), "--float32-scores"]) == 0
    f64 = score_cells((tmp_path / "f64.html").read_text(), "r")
    f32 = score_cells((tmp_path / "f32.html").read_text(), "r")
    assert f64[0] == "1.0000" and f32[0] == "0.5000"
    capsys.readouterr()
    assert main(["compare", str(qrels), str(r), str(s), "-m", "RR", "--json",
                 "--float32-scores"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"]["r"]["RR"]["mean"] == 0.5


def test_report_digits_sets_the_decimals_of_scores_intervals_and_summary(tmp_path):
    qrels, runs = _small_files(tmp_path)
    runs = [str(r) for r in runs]
    pages = {}
    for digits in (None, "2", "6"):
        out = tmp_path / f"r{digits}.html"
        extra = [] if digits is None else ["--digits", digits]
        assert main(["report", str(qrels), *runs, "--out", str(out), *extra]) == 0
        pages[digits] = out.read_text()
    for digits, n in ((None, 4), ("2", 2), ("6", 6)):
        mean, ci, *_ = score_cells(pages[digits], "a")
        assert re.fullmatch(rf"\d\.\d{{{n}}}", mean), mean
        assert re.fullmatch(rf"\[\d\.\d{{{n}}}, \d\.\d{{{n}}}\]", ci), ci
        assert re.search(rf"Best run on nDCG@10: \w \(\d\.\d{{{n}}}, 95% CI \[\d\.\d{{{n}}},",
                         section(pages[digits], "summary"))
    assert float(score_cells(pages["2"], "a")[0]) == pytest.approx(
        float(score_cells(pages["6"], "a")[0]), abs=0.005)


def test_a_report_from_little_judged_qrels_says_so_as_eval_does(tmp_path, capsys):
    """The hr-handbook's human qrels cover about a third of each run's top 10: the report
    prints eval's note on stderr, word for word, before naming a best run."""
    qrels = str(EXAMPLE / "human.qrels")
    runs = [str(EXAMPLE / "runs" / f"{name}.run") for name in ("bm25", "trigram")]
    assert main(["eval", qrels, *runs]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(said) == 2 and "Judged@10 = 0.3" in said[0]
    assert main(["report", qrels, *runs, "--out", str(tmp_path / "r.html"), "--quiet"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("note:")] == said
