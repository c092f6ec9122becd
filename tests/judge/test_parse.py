"""Parsing answers and rendering prompts: a grade only from JSON or an explicit final marker."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reljudge.errors import ConfigError
from reljudge.judge import builtin_names, load_template, parse_answer
from reljudge.labels import FailureKind

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(("text", "grade"), [
    ("The passage refers to 2 topics, neither answers.\n##final score: 0", 0),
    ("M: 3\nT: 2\nO: 2", 2),
    ("Match score: 3. Trust score: 3.\nFinal score: 1", 1),
    ("##final score: **3**", 3),
    ('{"reason": "mentions 3 policies", "grade": 2}', 2),
    ('```json\n{"reason": "x", "grade": 1}\n```', 1),
    ('Sure! {"grade": 3}', 3),
    ("2", 2),
    ("final score: [1]", 1),
    ("Overall: 3", 3),
])
def test_answers_with_an_explicit_grade(text, grade):
    assert parse_answer(text).grade == grade


@pytest.mark.parametrize(("text", "reason"), [
    ("This is related to 3 of the 2 subtopics.", "no final score marker"),
    ("score: 5", "outside 0..3"),
    ("final score: 2.5", "not a whole grade"),
    ("final score: -1", "outside 0..3"),
    ('{"grade": 7}', "outside 0..3"),
    ("", "empty answer"),
    (None, "empty answer"),
])
def test_answers_without_a_usable_grade_are_failures_with_reasons(text, reason):
    parsed = parse_answer(text)
    assert parsed.grade is None and reason in parsed.reason


def test_json_mode_without_grade_field_is_a_failure():
    assert "without a grade field" in parse_answer('{"relevant": true}', "json").reason


# -- an answer cut off at the output token limit (finish_reason "length") --------------------
@pytest.mark.parametrize(("text", "mode", "grade"), [
    ("The passage is about leave.\nfinal score: 2\nBecause the", "text", 2),  # verdict, then cut
    ("M: 3\nT: 2\nO: 1\n", "text", 1),
    ('{"reason": "on topic", "grade": 3}', "json", 3),  # complete object: the cut came after
    ('```json\n{"reason": "x", "grade": 1}\n```\nNote', "text", 1),
    ("2", "text", 2),  # a lone digit at max_tokens=1
])
def test_a_cut_answer_keeps_a_verdict_written_in_full_before_the_cut(text, mode, grade):
    assert parse_answer(text, mode, cut=True).grade == grade


@pytest.mark.parametrize(("text", "mode"), [
    ('{"reason": "The passage mentions the leave policy and final score: 2 would', "json"),
    ('{"reason": "relevant, score: 3, as it", "grade', "json"),
    ('{"reason": "relevant", "grade": 2, "extra": "and', "text"),  # cut open, grade inside
    ("Topicality score: 3. Trust score: 2. Overall the passage", "text"),  # not the last
    ("The passage is about", "text"),
    ("", "json"),
])
def test_a_cut_answer_without_a_full_verdict_is_truncated_never_guessed(text, mode):
    parsed = parse_answer(text, mode, cut=True)
    assert (parsed.grade, parsed.kind) == (None, FailureKind.TRUNCATED)
    assert parsed.reason.startswith("truncated: the answer was cut off")


def test_a_cut_answer_with_a_wrong_verdict_is_unparseable_not_truncated():
    parsed = parse_answer('{"reason": "x", "grade": 7} and', "json", cut=True)
    assert (parsed.grade, parsed.kind) == (None, FailureKind.UNPARSEABLE)
    assert "outside 0..3" in parsed.reason


def test_an_answer_that_ended_is_never_truncated():
    for text in ('{"reason": "The passage', "The passage is about", ""):
        assert parse_answer(text, "json").kind is FailureKind.UNPARSEABLE


@given(st.text(alphabet='abc 0123456789.,;:{}"\n', max_size=80),
       st.sampled_from(["text", "json"]))
def test_a_cut_answer_gives_no_grade_it_would_not_give_whole(text, mode):
    """Reading a cut answer is stricter than reading a whole one, never looser."""
    cut = parse_answer(text, mode, cut=True)
    assert cut.grade is None or cut.grade == parse_answer(text, mode).grade
    assert (cut.grade is None) == (cut.kind is not None)


@given(st.text(alphabet="abc 0123456789.,;\n", max_size=80))
def test_stray_digits_in_reasoning_never_become_a_grade(text):
    parsed = parse_answer("I considered this: " + text)
    assert parsed.grade is None


@pytest.mark.parametrize("name", ["umbrela", "basic", "json", "guarded", "guarded-json"])
def test_shipped_templates_render_and_carry_their_hash(name):
    t = load_template(name)
    msgs = t.render("what is the leave policy?", "Staff get 16 weeks.", title="Leave")
    assert msgs[0]["role"] == "system" and "16 weeks" in msgs[1]["content"]
    assert "Title: Leave" in msgs[1]["content"]
    assert len(t.hash) == 64 and t.label == f"{name}@{t.version}#{t.hash[:8]}"


def test_top_level_prompts_folder_equals_the_packaged_one():
    packaged = ROOT / "src" / "reljudge" / "prompts"
    names = sorted(p.name for p in packaged.glob("*.toml"))
    assert names == sorted(p.name for p in (ROOT / "prompts").glob("*.toml"))
    assert all(filecmp.cmp(packaged / n, ROOT / "prompts" / n, shallow=False) for n in names)
    assert builtin_names() == sorted(n[:-5] for n in names)  # "guarded" before "guarded-json"


def test_own_template_file_and_its_errors(tmp_path):
    good = tmp_path / "mine.toml"
    good.write_text('name = "mine"\nversion = 3\nscale = "0-3"\nsystem = "s"\n'
                    'user = "Q: {query} P: {passage} answer final score: N"\n')
    assert load_template(good).label.startswith("mine@3#")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\nversion = 1\nscale = "x"\nsystem = "s"\nuser = "{query} {oops}"\n')
    with pytest.raises(ConfigError, match="unknown placeholder"):
        load_template(bad)
    with pytest.raises(ConfigError, match="unknown prompt 'nope'"):
        load_template("nope")
