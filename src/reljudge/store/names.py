"""Source names as users type them: the full name (``gpt-4o-mini/umbrela@1#f8e67d3b``), the
name without its hash (``gpt-4o-mini/umbrela@1``), the model alone (``gpt-4o-mini``) or any
prefix that names one source. An unknown or ambiguous name is an error listing the sources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reljudge.errors import StoreError
from reljudge.labels import SOURCE_KINDS


class Source(Protocol):
    """A label source as listed by the store: its kind and name (read only)."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...


def model_of(name: str) -> str:
    """The model part of a judge's source name (``gpt-4o-mini/umbrela@1#f8e67d3b`` ->
    ``gpt-4o-mini``); a name without one is its own."""
    return name.split("/", 1)[0]


def _listing(sources: Sequence[Source]) -> str:
    return ", ".join(f"{s.name} ({s.kind})" for s in sources) or "none"


def resolve_source(sources: Sequence[Source], name: str, *, kind: str | None = None,
                   where: str = "the store", option: str = "") -> Source:
    """The one source ``name`` designates: its full name, else the only source of that model,
    else the only source whose name starts with it; ``kind`` (human, llm) when given must
    match. Otherwise a StoreError naming the candidates or the known sources."""
    flag = f"{option} " if option else ""
    exact = [s for s in sources if s.name == name]
    found = exact or [s for s in sources if model_of(s.name) == name] or \
        [s for s in sources if s.name.startswith(name)]
    if kind is not None and len(found) > 1:
        found = [s for s in found if s.kind == kind] or found
    if not found:
        hint = f" ({name!r} is a kind of source, not a name)" if name in SOURCE_KINDS else ""
        given = f" (given to {option})" if option else ""
        raise StoreError(f"{where}: no source named {name!r}{given}{hint}; known sources: "
                         f"{_listing(sources)} (reljudge labels sources lists them)")
    if len(found) > 1:
        raise StoreError(f"{flag}{name!r} names {len(found)} sources in {where}: "
                         f"{_listing(found)}; give more of the name")
    source = found[0]
    if kind is not None and source.kind != kind:
        raise StoreError(f"{flag}{name!r} is the {source.kind} source {source.name!r}; "
                         f"{option or 'this'} takes a {kind} source (known {kind} sources: "
                         f"{_listing([s for s in sources if s.kind == kind])})")
    return source


def short_names(sources: Sequence[Source]) -> dict[str, str]:
    """{full name: the shortest of model, name without hash, full name that designates it}."""
    out = {}
    for s in sources:
        for candidate in (model_of(s.name), s.name.split("#", 1)[0], s.name):
            try:
                if resolve_source(sources, candidate) is s:
                    out[s.name] = candidate
                    break
            except StoreError:
                continue
    return out
