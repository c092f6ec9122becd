"""Write the reference pages from the code: docs/cli.md from the parsers, docs/api.md from the
docstrings of the front door's names.

    python .ci/reference.py            # write both pages
    python .ci/reference.py --check    # exit 1, naming the stale pages, when either is out of date

docs/cli.md holds the ``--help`` of ``reljudge``, of every command and of every verb, in the
order ``reljudge --help`` lists them, formatted for an 80-column terminal. docs/api.md holds,
for each name ``import reljudge`` gives, its signature and docstring (and a class's public
methods and properties). tests/docs/test_reference.py fails when a committed page differs from what
this script writes. argparse's layout differs between Python versions, so the pages record the
Python that wrote them and the test compares on that version only.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = ROOT / "docs" / "cli.md"
API_PAGE = ROOT / "docs" / "api.md"
COLUMNS = "80"  # the terminal width the --help texts are wrapped for
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
REGENERATE = "python .ci/reference.py"
NOT_RUN = ("<!-- not run: the --help text itself; tests/docs/test_reference.py holds it to the "
           "parsers -->")


def generated_by() -> str:
    """The comment that opens each page: how it was made and how to remake it."""
    return (f"<!-- Written by `{REGENERATE}` under Python {PYTHON} from the code; "
            "do not edit by hand. -->\n")


@contextlib.contextmanager
def help_environment() -> Iterator[None]:
    """The environment the --help texts are written in: an 80-column terminal (argparse wraps
    at the width it reads from COLUMNS) and no RELJUDGE_STORE (which makes --store optional)."""
    from reljudge.cli.common import STORE_ENV

    saved = {name: os.environ.get(name) for name in ("COLUMNS", STORE_ENV)}
    os.environ["COLUMNS"] = COLUMNS
    os.environ.pop(STORE_ENV, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def help_sections() -> list[tuple[tuple[str, ...], str]]:
    """(command words, --help text) of reljudge, every command and every verb, in the order
    ``--help`` lists them, as ``help_environment`` has them."""
    from reljudge.cli import build_parser

    out: list[tuple[tuple[str, ...], str]] = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        out.append((words, parser.format_help()))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name in action.choices:
                    walk(action.choices[name], (*words, name))

    with help_environment():
        walk(build_parser(), ("reljudge",))
    return out


def cli_page() -> str:
    """docs/cli.md: every command's and verb's --help, one section each."""
    sections = help_sections()
    lines = ["# Command reference", "", generated_by(),
             "Every command's and verb's `--help`, as `reljudge COMMAND [VERB] --help` prints "
             "it on an", f"{COLUMNS}-column terminal. The shared grammar, file formats and "
             "exit codes are explained in", "[Commands, inputs and outputs](commands.md).", ""]
    lines += [f"- [`{' '.join(words)}`](#{'-'.join(words)})" for words, _ in sections[1:]
              if len(words) == 2]
    lines.append("")
    for words, text in sections:
        level = "#" * max(2, len(words))
        lines += [f"{level} {' '.join(words)}", "", NOT_RUN, "```text", text.rstrip("\n"),
                  "```", ""]
    return "\n".join(lines)


class _Annotation:
    """An annotation kept as the text it was written as (``from __future__ import
    annotations``), shown without the quotes ``inspect`` would give a string."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


WIDE = 88  # a signature longer than this is shown one parameter a line


def signature(obj: object, name: str, method: bool = False) -> str | None:
    """``name(params) -> return`` as written in the source (None when Python cannot say); a
    class gives its constructor's, a ``method`` leaves out its first parameter."""
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=_Annotation(p.annotation))
              if isinstance(p.annotation, str) else p for p in sig.parameters.values()]
    if method:
        params = params[1:]
    ret = sig.return_annotation
    sig = sig.replace(parameters=params,
                      return_annotation=_Annotation(ret) if isinstance(ret, str) else ret)
    if inspect.iscoroutinefunction(obj):
        name = f"async {name}"
    line = _stable(f"{name}{sig}")
    if len(line) <= WIDE:
        return line
    items: list[str] = []
    for i, p in enumerate(params):
        previous = params[i - 1].kind if i else None
        if previous is p.POSITIONAL_ONLY and p.kind is not p.POSITIONAL_ONLY:
            items.append("/")
        if p.kind is p.KEYWORD_ONLY and previous not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            items.append("*")
        items.append(_stable(str(p)))
    if params and params[-1].kind is params[-1].POSITIONAL_ONLY:
        items.append("/")
    text = str(sig.replace(parameters=[]))  # "() -> return"
    lines = [f"{name}("] + [f"    {item}," for item in items]
    return "\n".join(lines) + "\n" + text[1:]


def _stable(text: str) -> str:
    """``text`` without the addresses of objects (a default that is a function), which
    change from one run to the next."""
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _doc(obj: object) -> str:
    return inspect.getdoc(obj) or "(no docstring)"


def _type_name(annotation: object) -> str:
    """A field's type as a reader writes it (``int | None``, ``Path``)."""
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace("typing.", "").replace("pathlib.", "").replace(
        "pydantic.types.", "").replace("reljudge.judge.config.", "")


def members(cls: type) -> list[tuple[str, object]]:
    """The public methods and properties of a class and of its bases in reljudge, the class's
    own first, each in source order."""
    out: dict[str, object] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("reljudge"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in out:
                continue
            if inspect.isfunction(value) or isinstance(value, (property, staticmethod,
                                                               classmethod)):
                out[name] = value
    return list(out.items())


def fields(model: type) -> list[str]:
    """A pydantic model's fields, one list item each: name, type, default, description."""
    lines = ["Fields (keyword arguments):", ""]
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        if field.is_required():
            default = "required"
        elif field.default_factory is not None:
            default = f"default {field.default_factory()!r}"
        else:
            default = f"default {field.default!r}"
        described = f": {field.description}" if field.description else ""
        lines.append(f"- `{name}: {_type_name(field.annotation)}` ({default}){described}")
    return lines + [""]


def api_entry(name: str, obj: object) -> list[str]:
    """One name's section of docs/api.md."""
    lines = [f"## `reljudge.{name}`", ""]
    if not (inspect.isclass(obj) or callable(obj)):
        data = f"reljudge.{name}: str" if name == "__version__" else f"reljudge.{name} = {obj!r}"
        return lines + ["```text", data, "```", ""]
    model = isinstance(obj, type) and hasattr(obj, "model_fields")  # a pydantic model
    shown = None if model else signature(obj, f"reljudge.{name}")
    if shown is None and inspect.isclass(obj):
        shown = f"class reljudge.{name}({', '.join(b.__name__ for b in obj.__bases__)})"
    lines += ["```text", str(shown), "```", "", _doc(obj), ""]
    if model and isinstance(obj, type):
        lines += fields(obj)
    if inspect.isclass(obj) and not issubclass(obj, BaseException):
        for member, value in members(obj):
            if isinstance(value, property):
                lines += [f"### `{name}.{member}` (property)", "", _doc(value), ""]
                continue
            func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            lines += [f"### `{name}.{member}`", "", "```text",
                      str(signature(func, f"{name}.{member}",
                                    not isinstance(value, staticmethod))),
                      "```", "", _doc(func), ""]
    return lines


def api_names() -> list[str]:
    """The front door's names: those imported on first use in the order the package lists
    them (by job), then the rest of ``__all__`` (errors and constants) as sorted there."""
    import reljudge

    lazy = list(reljudge._LAZY)
    return lazy + [n for n in reljudge.__all__ if n not in lazy]


def api_page() -> str:
    """docs/api.md: the signature and docstring of every name ``import reljudge`` gives."""
    import reljudge

    lines = ["# API reference", "", generated_by(),
             "Every name `import reljudge` gives, with its signature and docstring (a class's "
             "public", "methods and properties under it). How they fit together, with "
             "examples: [Python API](python.md).", ""]
    lines += [f"- [`reljudge.{name}`](#reljudge{name.lower()})" for name in api_names()]
    lines.append("")
    for name in api_names():
        lines += api_entry(name, getattr(reljudge, name))
    return "\n".join(lines).rstrip("\n") + "\n"


def pages() -> dict[Path, str]:
    """Each reference page and the text this code gives it."""
    return {CLI_PAGE: cli_page(), API_PAGE: api_page()}


def stale() -> list[Path]:
    """The pages whose committed text differs from what this script writes."""
    return [path for path, text in pages().items()
            if not path.exists() or path.read_text() != text]


def main(argv: list[str]) -> int:
    """Write the pages, or with ``--check`` say which are stale (exit 1)."""
    if argv == ["--check"]:
        old = stale()
        for path in old:
            print(f"{path.relative_to(ROOT)} is out of date: run {REGENERATE}", file=sys.stderr)
        return 1 if old else 0
    if argv:
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    for path, text in pages().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
