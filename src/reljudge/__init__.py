"""reljudge: an LLM as a relevance assessor, and trustworthy retrieval scores from its labels."""

from reljudge.errors import InputError, ReljudgeError
from reljudge.types import GRADE_MAX, GRADE_MIN, LabelEvent, Qrels, Run

__version__ = "0.1.0"

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
