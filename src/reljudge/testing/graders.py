"""A deterministic fake judge for FakeOpenAI: the same prompt gets the same grade from any
server, on any run (so tests can compare runs, endpoints and caches)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable

from reljudge.grades import N_GRADES
from reljudge.testing.fake_openai import Reply, Request


def hash_grader(request: Request, preamble: str = "", delay: float = 0.0) -> Reply:
    """An umbrela-style answer whose grade is the SHA-256 of the prompt's user text, modulo
    the scale's size; ``preamble`` comes before the ``##final score`` line."""
    grade = int(hashlib.sha256(request.user_text.encode()).hexdigest(), 16) % N_GRADES
    return Reply.text(f"{preamble}##final score: {grade}", delay=delay)


# -- judges of known behaviour, for probes (reljudge.probe) ----------------------------------
# The shipped templates put the query and the passage between these markers (a title line,
# when shown, starts the passage): (query start, query end, passage start, passage end) of
# the guarded, umbrela and basic templates.
_LAYOUTS = (
    ("A person searched for:\n", "\n", "<<<PASSAGE\n", "\nPASSAGE>>>"),
    ("A person searched for:\n", "\n", "Here is a passage a search system returned:\n",
     "\n\nGrade the passage"),
    ("Query: ", "\n", "Passage: ", "\n\nHow relevant"),
)


def prompt_parts(user_text: str) -> tuple[str, str]:
    """(query, passage) of a prompt rendered from a shipped template (title line dropped)."""
    for q_start, q_end, p_start, p_end in _LAYOUTS:
        if q_start in user_text and p_start in user_text and p_end in user_text:
            query = user_text.split(q_start, 1)[1].split(q_end, 1)[0]
            passage = user_text.split(p_start, 1)[1].rsplit(p_end, 1)[0]
            if passage.startswith("Title: "):
                passage = passage.split("\n", 1)[1] if "\n" in passage else ""
            return query.strip(), passage.strip()
    raise ValueError("not a prompt of a shipped template")


def _answer(grade: int) -> Reply:
    return Reply.text(f"##final score: {grade}")


def lexical_grader(request: Request) -> Reply:
    """A judge that grades by the share of the query's content words found in the passage:
    under 1/4 -> 0, under 1/2 -> 1, under 3/4 -> 2, else 3 (the judge a query insert fools)."""
    from reljudge.probe.kinds import content_words, words

    query, passage = prompt_parts(request.user_text)
    wanted = content_words(query)
    found = {w.lower() for w in words(passage)}
    share = sum(w in found for w in wanted) / len(wanted) if wanted else 0.0
    return _answer(min(3, int(share * 4)))


class _Oracle:
    """The judge oracle_grader makes; ``grade_of`` grades a (query, passage) without a request."""

    def __init__(self, known: dict[str, dict[str, int]]) -> None:
        from reljudge.probe.kinds import words

        self._bags = {q: [(Counter(words(t)), g) for t, g in texts.items()]
                      for q, texts in known.items()}

    def grade_of(self, query: str, passage: str) -> int:
        """The highest grade of the known passages whose every word the passage contains."""
        from reljudge.probe.kinds import words

        have = Counter(words(passage))
        return max((g for bag, g in self._bags.get(query, []) if not bag - have), default=0)

    def __call__(self, request: Request) -> Reply:
        return _answer(self.grade_of(*prompt_parts(request.user_text)))


def oracle_grader(known: dict[str, dict[str, int]]) -> _Oracle:
    """A judge that grades only a passage's original content: ``known`` maps a query's text
    to {clean passage text: grade}; a passage gets the highest grade of the known passages
    whose every word it contains (0 when none: word salad)."""
    return _Oracle(known)


def obeying_grader(known: dict[str, dict[str, int]], p: float,
                   instruction: str) -> Callable[[Request], Reply]:
    """The oracle, except that a passage containing ``instruction`` gets the top grade with
    probability ``p``, decided by the SHA-256 of the prompt (the same prompt, the same
    answer)."""
    oracle = oracle_grader(known)

    def handler(request: Request) -> Reply:
        query, passage = prompt_parts(request.user_text)
        if instruction in passage:
            draw = int(hashlib.sha256(request.user_text.encode()).hexdigest()[:8], 16) / 16**8
            if draw < p:
                return _answer(N_GRADES - 1)
        return _answer(oracle.grade_of(query, passage))

    return handler
