"""A deterministic fake judge for FakeOpenAI: the same prompt gets the same grade from any
server, on any run (so tests can compare runs, endpoints and caches)."""

from __future__ import annotations

import hashlib

from reljudge.grades import N_GRADES
from reljudge.testing.fake_openai import Reply


def hash_grader(request, preamble: str = "", delay: float = 0.0) -> Reply:
    """An umbrela-style answer whose grade is the SHA-256 of the prompt's user text, modulo
    the scale's size; ``preamble`` comes before the ``##final score`` line."""
    grade = int(hashlib.sha256(request.user_text.encode()).hexdigest(), 16) % N_GRADES
    return Reply.text(f"{preamble}##final score: {grade}", delay=delay)
