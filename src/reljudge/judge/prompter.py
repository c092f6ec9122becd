"""What the labeller's helpers (a judgment, a dry run, batch collection) need of it in common:
its settings, its prompt and the messages it sends for a pair. The ``Labeller`` is one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reljudge.judge.config import JudgeConfig
from reljudge.judge.cost import Price
from reljudge.judge.prompts import Template


class Prompter(Protocol):
    """A judge that turns a pair into the messages it sends, under its settings and prompt."""

    @property
    def config(self) -> JudgeConfig: ...

    @property
    def template(self) -> Template: ...

    @property
    def judge_id(self) -> str: ...

    @property
    def price(self) -> Price: ...

    def messages(self, qid: str, docid: str, queries: Mapping[str, str],
                 passages: Mapping[str, Any]) -> list[dict[str, str]]: ...
