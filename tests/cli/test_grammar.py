"""One CLI grammar: every command's parser, walked, uses the shared flags the same way; each
flag has one spelling, and the old spellings are refused."""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

import pytest

from reljudge.cli import build_parser, common, main

ROOT = Path(__file__).resolve().parent.parent.parent
HR = ROOT / "examples" / "hr-handbook"
DL = ROOT / "examples" / "llmjudge-dl23"
RUNS = [str(HR / "runs" / "bm25.run"), str(HR / "runs" / "trigram.run")]
DL_RUNS = sorted(str(p) for p in (DL / "runs").glob("*.run"))
DL_JUDGES = sorted(str(p) for p in (DL / "judges").iterdir())[:2]

#: spellings that were never released and are gone: (argv that typed one, the flag refused)
REMOVED = [
    (["eval", "q.qrels", "a.run", "--csv"], "--csv"),
    (["compare", "q.qrels", "a.run", "b.run", "--latex"], "--latex"),
    (["audit", "--reference", "h.qrels", "--runs", "a.run"], "--runs"),
    (["label", "--queries", "q", "--passages", "p", "--runs", "a.run"], "--runs"),
    (["sample", "--store", "s", "--judge", "j", "--name", "n", "--runs", "a.run"], "--runs"),
    (["calibrate", "--reference", "h.qrels", "--judge", "j", "--output", "o.tsv"], "--output"),
    (["demo", "--out", "x"], "--out"),
    (["pool", "a.run", "--sources", "x"], "--sources"),
    (["sample", "--store", "s", "--judge", "j", "--name", "n", "--queries", "5"], "--queries"),
]

#: prefixes of a flag, refused: a flag is typed in full
ABBREVIATED = [(["pool", "a.run", "--dep", "5"], "--dep"),
               (["labels", "stats", "--store", "s", "--al"], "--al")]


def commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """(path of names, parser) of every command and sub-verb, the top level excluded."""
    out = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out.append(((*path, name), sub))
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return out


COMMANDS = commands()
IDS = [" ".join(path) for path, _ in COMMANDS]


def options(parser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def reference_actions() -> dict[str, argparse.Action]:
    """The shared flags as cli.common defines them: what every command must match."""
    p = argparse.ArgumentParser(add_help=False)
    common.add_format(p, common.ALL_FORMATS)
    common.add_measures(p, "x")
    common.add_quiet(p)
    common.add_all_queries(p)
    common.add_float32_scores(p)
    common.add_digits(p)
    return options(p)


def shape(action: argparse.Action) -> tuple:
    """What makes two flags behave the same (help text and defaults may differ)."""
    return (type(action).__name__, action.dest, action.nargs, action.const, action.type,
            tuple(action.choices) if action.choices else None)


def minimal_argv(path, parser) -> list[str]:
    """The command's name and placeholder values for what it requires."""
    argv = list(path)
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            continue
        if not a.option_strings and a.nargs not in ("*", "?", argparse.SUPPRESS):
            argv.append(a.choices[0] if a.choices else "x")
        elif a.option_strings and a.required:
            argv += [a.option_strings[0], next(iter(a.choices)) if a.choices else "x"]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            argv += [group._group_actions[0].option_strings[0], "x"]
    return argv


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_shared_flags_are_the_ones_defined_in_cli_common(path, parser):
    ref = reference_actions()
    for flag, action in options(parser).items():
        if flag in ref:
            assert shape(action) == shape(ref[flag]), (path, flag)


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_every_flag_and_argument_has_help_text(path, parser):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            continue
        assert a.help and a.help != argparse.SUPPRESS, (path, a.option_strings or a.dest)


@pytest.mark.parametrize(("argv", "flag"), REMOVED + ABBREVIATED,
                         ids=[" ".join((a[0], f)) for a, f in REMOVED + ABBREVIATED])
def test_removed_spellings_are_refused(argv, flag, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {flag}" in err and err.count("\n") == 1


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_no_option_swallows_the_positional_arguments(path, parser):
    for a in parser._actions:
        if a.option_strings:
            assert a.nargs not in ("+", "*", argparse.REMAINDER), (path, a.option_strings)


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_runs_are_positional_wherever_a_command_takes_runs(path, parser):
    runs = [a for a in parser._actions if a.dest == "runs"]
    assert [a.metavar for a in runs] in ([], ["RUN"]), path
    assert not any(a.option_strings for a in runs), path


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_measure_flag_is_repeatable(path, parser):
    if "-m" not in options(parser):
        assert "--measure" not in options(parser), path  # never the single-valued kind
        return
    args = build_parser().parse_args(minimal_argv(path, parser)
                                     + ["-m", "nDCG@10", "--measure", "AP", "-m", "RR"])
    assert args.measures == ["nDCG@10", "AP", "RR"]


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_format_takes_every_name_and_refuses_what_the_command_cannot_write(path, parser,
                                                                           capsys):
    flags = options(parser)
    if "--format" not in flags:
        assert "--json" not in flags, path
        return
    allowed = flags["--format"].allowed
    assert "table" in allowed and "json" in allowed
    for fmt in common.ALL_FORMATS:
        argv = minimal_argv(path, parser) + ["--format", fmt]
        if fmt in allowed:
            assert build_parser().parse_args(argv).format == fmt
            if fmt == "json":
                assert "--json" in flags, path  # its shorthand exists, and agrees
                assert build_parser().parse_args(minimal_argv(path, parser)
                                                 + ["--json"]).format == fmt
        else:
            with pytest.raises(SystemExit) as e:
                build_parser().parse_args(argv)
            assert e.value.code == 2
            err = capsys.readouterr().err
            assert f"--format {fmt}: not available here" in err and "table" in err
            assert err.count("\n") == 1  # one line


def test_help_lists_only_the_formats_a_command_accepts():
    text = dict(COMMANDS)[("pool",)].format_help()
    assert "--format {table,json,csv,markdown}" in text and "latex" not in text


def test_the_store_help_names_both_backends():
    """A store is a SQLite file or a PostgreSQL schema: no help text says it is SQLite alone."""
    helps = {path: parser.format_help() for path, parser in COMMANDS}
    assert [path for path, text in helps.items() if "one SQLite file" in text] == []
    description = helps[("labels",)].split("\n\n")[1]
    assert "SQLite file" in description and "PostgreSQL schema" in description
    assert "PostgreSQL" in helps[("labels", "upgrade")].split("\n\n")[1]


@pytest.mark.parametrize("verb", ["import", "merge", "export", "stats", "conflicts"])
def test_each_labels_verb_help_shows_its_own_examples_only(verb):
    text = dict(COMMANDS)[("labels", verb)].format_help()
    assert f"reljudge labels {verb} --store" in text or f"reljudge labels {verb} " in text
    for other in {"import", "merge", "export", "stats", "conflicts"} - {verb}:
        assert f"reljudge labels {other} " not in text, other


# ----- behaviour: the formats, end to end -----


def run_cli(capsys, argv) -> str:
    assert main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def assert_csv(text: str) -> None:
    rows = list(csv.reader(io.StringIO(text)))  # a header (with no row: batch's empty store)
    assert len(rows[0]) > 1 and all(len(r) == len(rows[0]) for r in rows), text[:300]


@pytest.fixture
def store(tmp_path, capsys):
    """A store with the hr-handbook human labels and an LLM source that graded the human
    pairs (some differently) and the top 3 of the bm25 run."""
    path = tmp_path / "labels.sqlite"
    llm = tmp_path / "llm.qrels"
    lines = [x.split() for x in (HR / "human.qrels").read_text().splitlines()]
    grades = {(q, d): (int(g) + i) % 4 for i, (q, _, d, g) in enumerate(lines)}
    for x in (HR / "runs" / "bm25.run").read_text().splitlines():
        q, _, d, rank, *_ = x.split()
        if int(rank) <= 3:
            grades.setdefault((q, d), 1)
    llm.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()))
    run_cli(capsys, ["labels", "import", HR / "human.qrels", "--store", path,
                     "--source-kind", "human", "--source-name", "team"])
    run_cli(capsys, ["labels", "import", llm, "--store", path, "--source-kind", "llm",
                     "--source-name", "judge"])
    return path


def csv_cases(tmp_path, store) -> dict[str, list]:
    """argv (without the format flag) of each command that writes --format csv."""
    fresh = tmp_path / "fresh.sqlite"
    return {
        "eval": ["eval", HR / "human.qrels", *RUNS, "-m", "nDCG@10", "-m", "RR"],
        "compare": ["compare", HR / "human.qrels", *RUNS, "--trials", "200"],
        "pool": ["pool", *RUNS, "--depth", "5", "--store", store],
        "audit": ["audit", "--reference", DL / "human.qrels", *sum([["--judge", j]
                                                                    for j in DL_JUDGES], []),
                  "--clip", *DL_RUNS],
        "calibrate": ["calibrate", "--reference", DL / "human.qrels", "--judge", DL_JUDGES[0],
                      "--clip", "--folds", "0"],
        "labels import": ["labels", "import", HR / "human.qrels", "--store", fresh,
                          "--source-kind", "human", "--force"],
        "labels merge": ["labels", "merge", "--store", store],
        "labels stats": ["labels", "stats", "--store", store],
        "labels sources": ["labels", "sources", "--store", store],
        "labels conflicts": ["labels", "conflicts", "--store", store],
        "batch": ["batch", "status", "--store", store],
    }


CSV_COMMANDS = ["eval", "compare", "pool", "audit", "calibrate", "labels import",
                "labels merge", "labels stats", "labels sources", "labels conflicts", "batch"]


def test_every_command_that_offers_csv_is_in_the_behaviour_test():
    offered = {" ".join(path) for path, p in COMMANDS
               if "--format" in options(p) and "csv" in options(p)["--format"].allowed}
    assert offered == set(CSV_COMMANDS) | {"estimate"}  # estimate: test_estimate_csv_...


@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_format_csv_writes_one_csv_table(name, tmp_path, store, capsys):
    argv = csv_cases(tmp_path, store)[name]
    new = run_cli(capsys, [*argv, "--format", "csv"])
    assert_csv(new)
    table = run_cli(capsys, argv)
    assert table != new  # the flag is not ignored


def test_estimate_csv_is_one_table_of_runs_and_differences(tmp_path, capsys):
    from reljudge.labels import LabelEvent
    from reljudge.store import LabelStore

    path = tmp_path / "s.sqlite"
    grades = [(q, d, int(g)) for q, _, d, g in
              (x.split() for x in (HR / "human.qrels").read_text().splitlines())]
    with LabelStore(path) as s:
        s.add_grades([(q, d, min(3, g + 1)) for q, d, g in grades], "llm", "judge")
    run_cli(capsys, ["sample", "--store", path, "--judge", "judge", "--name", "all",
                     "--design", "srs-queries", "--query-count", "12"])
    with LabelStore(path) as s:
        truth = {(q, d): g for q, d, g in grades}
        s.add_events([LabelEvent(q, d, truth[(q, d)], "human", "team", meta={"sample": "all"})
                      for q, d in s.sample_pairs("all")])
    argv = ["estimate", *RUNS, "--store", path, "--sample", "all", "-m", "DCG@10"]
    new = run_cli(capsys, [*argv, "--format", "csv"])
    assert_csv(new)
    assert len(new.splitlines()) == 1 + 2 + 1  # header, two runs, one difference


def test_label_needs_runs_or_pairs_but_not_both(tmp_path, capsys):
    base = ["label", "--queries", HR / "queries.tsv", "--passages", HR / "passages.jsonl",
            "--model", "gpt-4o-mini", "--dry-run"]
    assert main([str(a) for a in base]) == 2
    assert main([str(a) for a in [*base, *RUNS, "--pairs", HR / "human.qrels"]]) == 2
    assert "give RUN files to pool from, or --pairs" in capsys.readouterr().err


def test_pool_source_is_repeatable_and_never_swallows_the_runs(store, capsys):
    args = build_parser().parse_args(["pool", "--store", "s", "--source", "a,b", *RUNS,
                                      "--source", "c"])
    assert args.runs == RUNS and common.flatten(args.sources) == ["a", "b", "c"]
    new = run_cli(capsys, ["pool", "--store", store, "--source", "team", *RUNS, "--json"])
    everything = json.loads(run_cli(capsys, ["pool", *RUNS, "--store", store, "--json"]))
    team = json.loads(new)
    assert team["judged"] < everything["judged"]  # the judge's labels did not count


def test_audit_measures_are_repeatable_with_columns_per_measure(capsys):
    args = ["audit", "--reference", DL / "human.qrels", "--judge", DL_JUDGES[0], "--clip",
            *DL_RUNS]
    one = run_cli(capsys, [*args, "-m", "AP", "--format", "csv"])
    two = run_cli(capsys, [*args, "-m", "nDCG@10", "-m", "AP", "--format", "csv"])
    h1, r1 = list(csv.reader(io.StringIO(one)))
    h2, r2 = list(csv.reader(io.StringIO(two)))
    assert "tau" in h1 and "tau (AP)" in h2 and "tau (nDCG@10)" in h2
    assert r2[h2.index("tau (AP)")] == r1[h1.index("tau")]  # the same number either way
    data = json.loads(run_cli(capsys, [*args, "-m", "nDCG@10", "-m", "AP", "--json"]))
    assert set(data["systems_by_measure"]) == {"nDCG@10", "AP"}


def test_compare_format_latex_writes_a_tabular(capsys):
    argv = ["compare", HR / "human.qrels", *RUNS, "--trials", "200"]
    assert r"\begin{tabular}" in run_cli(capsys, [*argv, "--format", "latex"])


def test_digits_sets_the_decimals_printed(capsys):
    argv = ["eval", HR / "human.qrels", RUNS[0], "-m", "nDCG@10"]
    two = run_cli(capsys, [*argv, "--digits", "2"]).splitlines()[2].split()
    six = run_cli(capsys, [*argv, "--digits", "6"]).splitlines()[2].split()
    assert len(two[-1].split(".")[1]) == 2 and len(six[-1].split(".")[1]) == 6
    assert float(two[-1]) == pytest.approx(float(six[-1]), abs=0.005)


def test_compare_float32_scores_reaches_the_evaluation(tmp_path, capsys):
    # scores that differ only below float32 precision: float64 ranks the relevant `a`
    # first; float32 sees a tie and breaks it by docid descending, `b` first
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 a 1 1.00000001 r\nq1 Q0 b 2 1.0 r\n")
    other = tmp_path / "o.run"  # compare needs two runs
    other.write_text("q1 Q0 a 1 2.0 o\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\n")
    argv = ["compare", qrels, run, other, "-m", "RR", "--json", "--trials", "10"]
    f64 = json.loads(run_cli(capsys, argv))["runs"]["r"]["RR"]["mean"]
    f32 = json.loads(run_cli(capsys, [*argv, "--float32-scores"]))["runs"]["r"]["RR"]["mean"]
    assert f64 == 1.0 and f32 == 0.5


def test_the_grammar_table_in_the_docs_matches_every_parser():
    text = (ROOT / "docs" / "commands.md").read_text()
    start = text.index("| command | RUN...")
    lines = text[start:text.index("\n\n", start)].splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(header, cells, strict=True))
    leaves = [(path, p) for path, p in COMMANDS
              if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]
    assert set(rows) == {" ".join(path) for path, _ in leaves}
    for path, parser in leaves:
        row, flags = rows[" ".join(path)], options(parser)
        visible = set(flags)
        runs = any(a.dest == "runs" and not a.option_strings for a in parser._actions)
        assert row["RUN..."].startswith("yes") == runs, path
        fmt = flags.get("--format")
        assert row["`--format`"] == (" ".join(fmt.allowed) if fmt else row["`--format`"]), path
        if not fmt:
            assert row["`--format`"] in ("", "(HTML)"), path
        for col, flag in [("`-m`", "-m"), ("`--out-dir`", "--out-dir"), ("`--quiet`", "--quiet"),
                          ("`--all-queries`", "--all-queries"),
                          ("`--float32-scores`", "--float32-scores")]:
            assert (row[col] == "yes") == (flag in visible), (path, flag)
        assert bool(row["`--out` file"]) == ("--out" in visible), path
        digits = flags.get("--digits")
        assert row["`--digits` (default)"] == (str(digits.default) if digits else ""), path


def test_quiet_is_on_every_command_doing_long_work():
    names = {" ".join(path) for path, p in COMMANDS if "--quiet" in options(p)}
    assert {"label", "run", "audit", "calibrate", "estimate", "batch", "report", "compare",
            "demo"} <= names


def test_audit_scores_runs_by_the_same_query_rule_as_eval(tmp_path, capsys):
    from reljudge.io.trec import read_qrels, read_run
    from reljudge.metrics import evaluate

    lines = Path(DL_RUNS[0]).read_text().splitlines()
    keep = sorted({x.split()[0] for x in lines})[:5]  # a run that answers 5 queries only
    part = tmp_path / "part.run"
    part.write_text("".join(x + "\n" for x in lines if x.split()[0] in keep))
    args = ["audit", "--reference", DL / "human.qrels", "--judge", DL_JUDGES[0], "--clip",
            part, DL_RUNS[1], "--json"]
    ref = read_qrels(DL / "human.qrels")
    for extra, every in (([], False), (["--all-queries"], True)):
        data = json.loads(run_cli(capsys, [*args, *extra]))
        got = data["judges"][0]["systems"]["reference_scores"][0]
        want = evaluate(ref, read_run(part), ["nDCG@10"], all_queries=every).mean()["nDCG@10"]
        assert got == want
    assert got < json.loads(run_cli(capsys, args))["judges"][0]["systems"][
        "reference_scores"][0]


@pytest.mark.parametrize("head", [["sample", "--store", "s", "--judge", "j", "--name", "n"],
                                  ["audit", "--reference", "h"],
                                  ["label", "--queries", "q", "--passages", "p"]])
def test_positional_runs_fill_one_list_in_order(head):
    assert build_parser().parse_args([*head, "a.run", "b.run"]).runs == ["a.run", "b.run"]


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_visible_queries_flag_is_always_a_file(path, parser):
    a = options(parser).get("--queries")
    if a is not None:
        assert a.type is None and a.dest == "queries", path  # a file name (or irds:), no count
