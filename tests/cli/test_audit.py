"""``reljudge audit`` from the command line."""

from __future__ import annotations

import gzip
import json
import lzma

import pytest

from reljudge.cli import main


def write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join(f"q{i % 3} 0 d{i} {g}\n" for i, g in enumerate(lines)))
    return p


def test_audit_table_json_sort_and_runs(tmp_path, capsys):
    ref = write(tmp_path, "human.qrels", [0, 1, 2, 3, 0, 1, 2, 3, 1, 2])
    a = write(tmp_path, "a.qrels", [0, 1, 2, 3, 0, 1, 2, 3, 1, 2])
    b = write(tmp_path, "b.qrels", [1, 1, 1, 1, 0, 0, 3, 3, 2, 2])
    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i % 3} Q0 d{i} 1 {10 - i} sys\n" for i in range(10)))
    base = ["audit", "--reference", str(ref), "--judge", str(a), "--judge", str(b)]
    assert main([*base, "--sort", "kappa", str(run)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["judge", "pairs", "exact"] and "tau_ap" in lines[0]
    assert lines[2].startswith("a ") and lines[3].startswith("b ")
    assert main([*base, "--json", "--bootstrap", "50"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["judges"][0]["items"]["stats"]["kappa"] == 1.0
    assert "kappa" in data["judges"][1]["items"]["ci"]


def test_audit_bad_inputs(tmp_path, capsys):
    ref = write(tmp_path, "human.qrels", [0, 1])
    bad = write(tmp_path, "bad.qrels", [0, 4])
    assert main(["audit", "--reference", str(ref), "--judge", str(bad)]) == 2
    assert "bad.qrels:2: grade 4 is outside" in capsys.readouterr().err
    assert main(["audit", "--reference", str(ref)]) == 2
    assert "give at least one --judge" in capsys.readouterr().err
    assert main(["audit", "--reference", str(ref), "--judge", str(ref), "--sort", "nope"]) == 2
    assert "no such column" in capsys.readouterr().err


def test_judges_dir_takes_compressed_and_bom_files_under_their_plain_names(tmp_path, capsys):
    ref = write(tmp_path, "human.qrels", [0, 1, 2, 3, 0, 1])
    judges = tmp_path / "judges"
    judges.mkdir()
    text = write(tmp_path, "x", [0, 1, 2, 3, 0, 1]).read_bytes()
    (judges / "gpt.txt.gz").write_bytes(gzip.compress(b"\xef\xbb\xbf" + text))
    (judges / "llama.qrels.xz").write_bytes(lzma.compress(text.replace(b"\n", b"\r\n")))
    (judges / "notes.md").write_text("not a judge")
    assert main(["audit", "--reference", str(ref), "--judges-dir", str(judges), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(j["name"], j["items"]["pairs"], j["items"]["stats"]["exact"])
            for j in data["judges"]] == [("gpt", 6, 1.0), ("llama", 6, 1.0)]


def test_audit_help_states_tau_aps_tie_rule_and_the_code_follows_it(capsys):
    """audit --help named tau_ap without saying how tied runs are ordered."""
    import numpy as np

    from reljudge.audit import systems as sy

    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "tau_ap's ties: runs with equal scores are ranked by run name (ascending) in each " \
           "ranking" in text
    names = ["b", "a", "c"]
    tied = np.array([1.0, 1.0, 0.0])  # a and b tied: ranked a, b, c
    assert sy.tau_ap(tied, np.array([1.0, 2.0, 0.0]), names) == pytest.approx(1.0)  # a, b, c
    assert sy.tau_ap(tied, np.array([2.0, 1.0, 0.0]), names) == pytest.approx(0.0)  # b, a, c


def test_audit_store_takes_calibrates_flag_names_and_every_judge_by_default(tmp_path, capsys):
    """`audit --store` names sources as `calibrate` does (--human-source, --judge-source),
    and audits every LLM source of the store when no --judge-source is given."""
    from reljudge.store import LabelStore

    store = tmp_path / "labels.sqlite"
    grades = [0, 1, 2, 3, 0, 1, 2, 3, 1, 2]
    with LabelStore(store) as s:
        s.add_grades([(f"q{i % 3}", f"d{i}", g) for i, g in enumerate(grades)], "human", "hr")
        for name, shift in (("judge-a", 0), ("judge-b", 1)):
            s.add_grades([(f"q{i % 3}", f"d{i}", min(3, g + shift))
                          for i, g in enumerate(grades)], "llm", name)
    base = ["audit", "--store", str(store), "--format", "json"]

    def judges(*flags: str) -> list[str]:
        assert main([*base, *flags]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["reference"] == "hr"
        return [j["name"] for j in data["judges"]]

    assert judges("--human-source", "hr") == ["judge-a", "judge-b"]
    assert judges("--human-source", "hr", "--judge-source", "judge-b") == ["judge-b"]
    assert main(["audit", "--store", str(store)]) == 2
    assert "give --human-source" in capsys.readouterr().err
    from reljudge.cli import build_parser

    for command in ("audit", "calibrate"):  # one spelling for both commands
        args = build_parser().parse_args([command, "--store", "s", "--human-source", "hr",
                                          "--judge-source", "j"])
        assert (args.human_source, args.judge_source) == ("hr", ["j"])
        old = "--reference-source"  # the hidden spelling, gone
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--store", "s", old, "hr"])
