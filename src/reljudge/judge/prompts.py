"""Prompt templates as files: metadata, the grade scale, messages with placeholders, output mode.

Shipped templates live in ``reljudge/prompts/*.toml`` (the top-level ``prompts/`` folder holds
the same files); a user can pass the path of their own. A template's hash covers everything
that shapes the messages, and is part of every judgment's provenance.
"""

from __future__ import annotations

import hashlib
import re
import sys
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from reljudge.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PLACEHOLDERS = ("query", "passage", "title", "narrative", "scale")


#: left where optional fields rendered as nothing
_BLANK_RUNS = re.compile(r"\n{3,}")


class Template(BaseModel):
    """One prompt template."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: int
    description: str = ""
    output: Literal["text", "json"] = "text"
    scale: str
    system: str
    user: str

    @cached_property
    def hash(self) -> str:
        """SHA-256 over the fields that shape the messages (hex)."""
        blob = "\x1f".join([self.name, str(self.version), self.output, self.scale.strip(),
                            self.system, self.user])
        return hashlib.sha256(blob.encode()).hexdigest()

    @property
    def label(self) -> str:
        """``name@version#hash8``, as used in judge ids."""
        return f"{self.name}@{self.version}#{self.hash[:8]}"

    def render(self, query: str, passage: str, title: str | None = None,
               narrative: str | None = None) -> list[dict[str, str]]:
        """The chat messages for one pair (optional fields render as nothing)."""
        values = {"query": query, "passage": passage,
                  "title": f"Title: {title}" if title else "",
                  "narrative": f"What they are looking for: {narrative}" if narrative else "",
                  "scale": self.scale.strip()}
        user = self.user.format_map(values)
        if "\n\n\n" in user:
            user = _BLANK_RUNS.sub("\n\n", user)
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": user}]


def builtin_names() -> list[str]:
    """Names of the templates that ship with reljudge."""
    folder = resources.files("reljudge") / "prompts"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_template(name_or_path: str | Path) -> Template:
    """A shipped template by name (``builtin_names()``) or a template file by path."""
    text, where = _template_text(str(name_or_path))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not valid TOML: {e}") from None
    try:
        template = Template.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
        raise ConfigError(f"{where}: not a valid prompt template: {problems}") from None
    try:
        template.render("q", "p", "t", "n")
    except (KeyError, IndexError, ValueError) as e:
        raise ConfigError(f"{where}: the user message uses an unknown placeholder {e}; "
                          f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)} "
                          "(write literal braces as {{ and }})") from None
    if "{passage}" not in template.user or "{query}" not in template.user:
        raise ConfigError(f"{where}: the user message must contain {{query}} and {{passage}}")
    return template


def _template_text(name: str) -> tuple[str, str]:
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such prompt template file") from None
    res = resources.files("reljudge") / "prompts" / f"{name}.toml"
    if not res.is_file():
        raise ConfigError(f"unknown prompt {name!r}; shipped: {', '.join(builtin_names())}, "
                          "or give the path of a .toml template")
    return res.read_text(encoding="utf-8"), f"prompts/{name}.toml"
