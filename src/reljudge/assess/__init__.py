"""The grading page: people grade query-passage pairs in a browser, straight into the store.

Needs the optional extra ``assess`` (Starlette and uvicorn): ``pip install 'reljudge[assess]'``.
"""

from reljudge.assess.task import AssessTask, Given, Item, ScaleStep, scale_of

__all__ = ["AssessTask", "Given", "Item", "ScaleStep", "scale_of"]
