"""Turn an answer into a grade, correct by construction.

JSON first; otherwise only an explicit final marker decides (the last ``final score: N`` /
``final grade: N`` / ``O: N`` line, else the last ``score: N`` / ``grade: N``), or an answer
that is nothing but one digit. A digit anywhere else in the reasoning never counts. Anything
else is a failure with a reason, never a grade. An answer cut off at the output token limit
gives a grade only when its verdict was written in full before the cut (docs/labelling.md, "A
cut answer is said to be cut"); any other cut answer is a failure of kind ``truncated``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reljudge.grades import SCALE, SCALE_TEXT, in_scale
from reljudge.labels import FailureKind

_NUM = r"\**\s*\[?\s*(-?\d+(?:\.\d+)?)"
_FINAL = re.compile(r"(?i)(?<![A-Za-z])(?:final[ _-]*(?:score|grade|relevance|answer)|"
                    r"overall(?:[ _-]*(?:score|grade))?|O)\s*\**\s*[:=]\s*" + _NUM)
_PLAIN = re.compile(r"(?i)(?<![A-Za-z])(?:relevance[ _-]*)?(?:score|grade)\s*\**\s*[:=]\s*"
                    + _NUM)
_JSON_KEYS = ("grade", "final_score", "score", "relevance", "O", "overall")


@dataclass(frozen=True)
class Parsed:
    """A grade, or the reason there is none and its kind."""

    grade: int | None
    reason: str | None = None
    #: unparseable or truncated when there is no grade
    kind: FailureKind | None = None


def _unread(reason: str) -> Parsed:
    return Parsed(None, reason, FailureKind.UNPARSEABLE)


CUT = "truncated: the answer was cut off before it gave a grade"


def _check(value: Any, where: str) -> Parsed:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return _unread(f"unparseable: {where} is not a number ({value!r})")
    if not number.is_integer():
        return _unread(f"out of scale: {where} {value!r} is not a whole grade")
    grade = int(number)
    if not in_scale(grade):
        return _unread(f"out of scale: {where} {grade} is outside {SCALE_TEXT}")
    return Parsed(grade)


def _json_object(text: str) -> dict | None:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", stripped)
    try:
        obj = json.loads(stripped)
        return obj if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        pass
    starts = [m.start() for m in re.finditer(r"\{", text)]
    # the last complete JSON object in the text
    for start in reversed(starts):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def parse_answer(text: str | None, mode: str = "text", cut: bool = False) -> Parsed:
    """The grade an answer gives, or a failure reason and kind (``cut``: the answer stopped
    at the output token limit)."""
    if text is None or not text.strip():
        return Parsed(None, CUT, FailureKind.TRUNCATED) if cut else _unread("empty answer")
    obj = _json_object(text) if ("{" in text) else None
    if obj is not None:
        for key in _JSON_KEYS:
            if key in obj:
                return _check(obj[key], f"JSON field {key!r}")
        if mode == "json":
            return _unread(f"unparseable: JSON without a grade field (keys {sorted(obj)})")
    elif "{" in text and cut:
        # a JSON object cut open
        return Parsed(None, CUT, FailureKind.TRUNCATED)
    # invalid JSON in JSON mode: the text markers below may still rescue it
    finals = _FINAL.findall(text)
    if finals:
        return _check(finals[-1], "final score")
    plain = _PLAIN.findall(text)
    if plain and not cut:
        return _check(plain[-1], "score")
    bare = text.strip().strip("*").strip()
    if re.fullmatch(r"-?\d+(?:\.\d+)?", bare):
        return _check(bare, "answer")
    if cut:
        return Parsed(None, CUT, FailureKind.TRUNCATED)
    return _unread("unparseable: no final score marker")


_GRADES = f"{', '.join(map(str, SCALE[:-1]))} or {SCALE[-1]}"
#: the re-ask of an unreadable answer, in the form its prompt asks for
REPAIR = {"text": ("Your answer could not be read. Reply with one line only, exactly of the "
                   f"form 'final score: N' where N is {_GRADES}."),
          "json": ("Your answer could not be read. Reply with one JSON object only, exactly "
                   'of the form {"reason": "<one short sentence>", "grade": N} where N is '
                   f"{_GRADES}.")}
