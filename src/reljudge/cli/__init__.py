"""The ``reljudge`` command: thin argument parsing over the library.

Each subcommand lives in its own module under ``reljudge.cli`` with a ``register(subparsers)``
function that adds its parser and sets ``func``. Heavy imports happen inside the handlers so
that ``reljudge eval`` does not pay for the LLM client.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Order here is the order in --help.
COMMANDS = ("demo", "run", "pool", "label", "batch", "labels", "eval", "compare", "audit",
            "sample", "assess", "estimate", "calibrate", "report")

DESCRIPTION = """\
reljudge: an LLM as a relevance assessor, and trustworthy retrieval scores from its labels.

  runs -> pool -> label (LLM, cached, retried, costed) -> label store -> qrels -> eval -> audit

Start with `reljudge demo` (offline, bundled data), then `reljudge COMMAND --help`.
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples in descriptions and epilogs as written."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other reljudge error."""

    def error(self, message: str):
        """Print ``reljudge: error: COMMAND: message (see reljudge COMMAND --help)`` and exit 2:
        one prefix, the command that was used, and where its help is."""
        command = self.prog.partition(" ")[2]
        place = f"{command}: " if command else ""
        self.exit(2, f"reljudge: error: {place}{message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse, but an unrecognised argument is reported by the (sub)command it was
        given to, with that command's help, not by ``reljudge`` itself."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._innermost(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _innermost(self, parsed) -> argparse.ArgumentParser:
        """The parser of the deepest subcommand named in ``parsed``."""
        parser: argparse.ArgumentParser = self
        while True:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            name = getattr(parsed, subs[0].dest, None) if subs else None
            if name not in (subs[0].choices if subs else {}):
                return parser
            parser = subs[0].choices[name]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand."""
    from reljudge.version import __version__

    parser = Parser(prog="reljudge", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"reljudge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"reljudge.cli.{name}_cmd")
        except ModuleNotFoundError as e:
            if e.name == f"reljudge.cli.{name}_cmd":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reljudge`` console script; returns the exit code."""
    from reljudge.errors import ReljudgeError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        from reljudge.cli.common import resolve_store

        resolve_store(args)
        code = args.func(args)
    except ReljudgeError as e:
        from reljudge.store.postgres import masked

        print(f"reljudge: error: {masked(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("reljudge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(code or 0)


def run() -> None:
    """Console-script shim: exit with main()'s code."""
    sys.exit(main())
