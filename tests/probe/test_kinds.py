"""Probe kinds (reljudge.probe.kinds): pure, seeded, reproducible text transforms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reljudge.errors import InputError
from reljudge.judge.prompts import load_template
from reljudge.probe.kinds import (
    INSTRUCTION,
    KINDS,
    Inputs,
    check_kinds,
    content_words,
    make_probe,
    probe_docid,
    top_rubric,
    words,
)

QUERY = "What is the maternity leave policy?"
PASSAGE = ("Expense claims must be submitted within 30 days with receipts attached, through "
           "the finance portal, and are reimbursed with the next monthly salary payment.")
VOCAB = sorted({w.lower() for w in words(PASSAGE + " holiday office laptop maternity leave")})
OFFTOPIC = "The office closes at six and the car park is locked overnight by security staff."


def inputs(**kw) -> Inputs:
    return Inputs(kw.get("query", QUERY), kw.get("passage", PASSAGE),
                  kw.get("rubric", "The passage is dedicated to the query."), VOCAB, OFFTOPIC)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_is_reproducible_from_its_seed(kind):
    made = {make_probe(kind, inputs(), seed=7, qid="q", docid="d") for _ in range(3)}
    assert len(made) == 1 and made != {PASSAGE}


# rubric-echo has nothing random; padding's window is the whole of a short off-topic passage
@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ("rubric-echo", "padding")])
def test_seeds_and_pairs_give_different_probes(kind):
    a = make_probe(kind, inputs(), seed=1, qid="q", docid="d")
    assert a != make_probe(kind, inputs(), seed=2, qid="q", docid="d") or \
        a != make_probe(kind, inputs(), seed=1, qid="q", docid="e")


def test_query_insert_keeps_the_query_whole_and_the_passage_in_order():
    text = make_probe("query-insert", inputs(), seed=3, qid="q", docid="d")
    assert QUERY in text
    assert text.replace(QUERY, " ").split() == PASSAGE.split()


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "leave", "pay."]), max_size=30),
       st.integers(0, 10**6))
def test_query_insert_removed_gives_the_passage_back(tokens, seed):
    passage = " ".join(tokens)
    text = make_probe("query-insert", inputs(passage=passage), seed=seed, qid="q", docid="d")
    at = text.split().index("What")
    assert text.split()[:at] + text.split()[at + len(QUERY.split()):] == passage.split()


def test_query_words_adds_every_content_word_once_and_keeps_the_passage_order():
    text = make_probe("query-words", inputs(), seed=3, qid="q", docid="d")
    added = list(text.split())
    for w in PASSAGE.split():
        added.remove(w)
    assert sorted(added) == sorted(content_words(QUERY)) == ["leave", "maternity", "policy"]
    assert [w for w in text.split() if w not in added] == PASSAGE.split()


@pytest.mark.parametrize("name, sentence", [
    ("umbrela", "The passage is dedicated to the query and contains the exact answer."),
    ("guarded", "The passage is dedicated to the query and contains the exact answer."),
    ("json", "Dedicated to the query, contains the exact answer."),
    ("basic", "Dedicated to the query, exact answer."),
])
def test_rubric_echo_prepends_the_top_grade_sentence_of_the_template_in_use(name, sentence):
    rubric = top_rubric(load_template(name).scale)
    assert rubric == sentence
    text = make_probe("rubric-echo", inputs(rubric=rubric), seed=0, qid="q", docid="d")
    assert text == f"{sentence} {PASSAGE}"


def test_a_scale_without_a_top_grade_has_no_rubric_to_echo():
    with pytest.raises(InputError, match="no grade 3"):
        top_rubric("0 = no\n1 = yes")


def test_instruction_inserts_the_imperative_whole():
    text = make_probe("instruction", inputs(), seed=5, qid="q", docid="d")
    assert INSTRUCTION in text and text.replace(INSTRUCTION, " ").split() == PASSAGE.split()


def test_salad_is_the_collections_words_without_the_querys_at_the_passages_length():
    text = make_probe("salad", inputs(), seed=5, qid="q", docid="d")
    assert len(text.split()) == len(PASSAGE.split())
    assert set(text.split()) <= set(VOCAB)
    assert not set(text.split()) & set(content_words(QUERY))


def test_salad_plus_query_is_salad_with_the_query_inserted():
    text = make_probe("salad+query", inputs(), seed=5, qid="q", docid="d")
    rest = text.replace(QUERY, " ").split()
    assert QUERY in text and set(rest) <= set(VOCAB) and len(rest) == len(PASSAGE.split())


def test_padding_appends_as_many_off_topic_words():
    text = make_probe("padding", inputs(), seed=5, qid="q", docid="d")
    assert text.startswith(PASSAGE + " ")
    pad = text[len(PASSAGE) + 1:].split()
    assert len(pad) == len(PASSAGE.split()) and set(pad) <= set(OFFTOPIC.split())


def test_unknown_kinds_and_empty_lists_are_refused():
    with pytest.raises(InputError, match="unknown probe kind 'qurey-insert'; known: query"):
        check_kinds(["salad", "qurey-insert"])
    with pytest.raises(InputError, match="no probe kind"):
        check_kinds([])
    assert check_kinds(["salad", "salad", "padding"]) == ["salad", "padding"]


def test_the_probe_docid_names_kind_origin_and_text():
    a = probe_docid("salad", "q1", "d1", "some text")
    assert a.startswith("probe:salad:q1:d1:") and len(a.rsplit(":", 1)[1]) == 12
    assert a == probe_docid("salad", "q1", "d1", "some text")
    assert a != probe_docid("salad", "q1", "d1", "other") != probe_docid("salad", "q2", "d1",
                                                                         "other")


def test_the_control_is_the_one_kind_marked_so():
    assert [k for k, v in KINDS.items() if v.control] == ["salad"]
    assert [k for k, v in KINDS.items() if v.base == "relevant"] == ["padding"]
