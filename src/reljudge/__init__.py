"""reljudge: an LLM as a relevance assessor, and trustworthy retrieval scores from its labels."""

from reljudge.errors import InputError, ReljudgeError
from reljudge.grades import GRADE_MAX, GRADE_MIN
from reljudge.labels import LabelEvent
from reljudge.types import Qrels, Run
from reljudge.version import __version__

__all__ = [
    "GRADE_MAX",
    "GRADE_MIN",
    "InputError",
    "LabelEvent",
    "Qrels",
    "ReljudgeError",
    "Run",
    "__version__",
]
