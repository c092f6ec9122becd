"""The ``reljudge`` command: thin argument parsing over the library.

Each subcommand lives in its own module under ``reljudge.cli`` with a ``HELP`` line and a
``register(subparsers)`` function that adds its parser and sets ``func``. A command's parser
is built only when that command is used (``reljudge --help`` lists the ``HELP`` lines), and
heavy imports happen inside ``register`` and the handlers, so that ``reljudge --version`` and
``--help`` import neither numpy nor the library and ``reljudge eval`` does not pay for the
LLM client.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import cast

# Order here is the order in --help.
COMMANDS = ("demo", "run", "pool", "label", "batch", "labels", "eval", "compare", "audit",
            "sample", "assess", "estimate", "calibrate", "probe", "report")

DESCRIPTION = """\
reljudge: an LLM as a relevance assessor, and trustworthy retrieval scores from its labels.

  runs -> pool -> label (LLM, cached, retried, costed) -> label store -> qrels -> eval -> audit

Start with `reljudge demo` (offline, bundled data), then `reljudge COMMAND --help`.
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples in descriptions and epilogs as written."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like every other reljudge error, and
    whose flags are typed in full: a prefix (``--out`` for ``--out-dir``) is refused, so no
    flag has a second spelling and a new flag never changes what a prefix meant."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """Print ``reljudge: error: COMMAND: message (see reljudge COMMAND --help)`` and exit 2:
        one prefix, the command that was used, and where its help is."""
        command = self.prog.partition(" ")[2]
        place = f"{command}: " if command else ""
        self.exit(2, f"reljudge: error: {place}{message} (see {self.prog} --help)\n")

    # inside parse_known_intermixed_args, which calls parse_known_args
    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        """As argparse, but a command's positional arguments may come on both sides of its
        flags (``label a.run --depth 10 b.run``): argparse's intermixed parsing, wherever the
        parser allows it (no subcommands of its own)."""
        if self._intermixing or not self._intermixable():
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def _intermixable(self) -> bool:
        """A list of positionals that flags may split, and nothing intermixing refuses."""
        positionals = self._get_positional_actions()
        grouped = {a for g in self._mutually_exclusive_groups for a in g._group_actions}
        return (any(a.nargs in ("*", "+") for a in positionals)
                and not any(a.nargs in (argparse.PARSER, argparse.REMAINDER) or a in grouped
                            for a in positionals))

    def parse_args(self, args=None, namespace=None):
        """As argparse, but an unrecognised argument is reported by the (sub)command it was
        given to, with that command's help, not by ``reljudge`` itself."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.innermost(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def innermost(self, parsed) -> argparse.ArgumentParser:
        """The parser of the deepest subcommand named in ``parsed``."""
        parser: argparse.ArgumentParser = self
        while True:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            name = getattr(parsed, subs[0].dest, None) if subs else None
            if name not in (subs[0].choices if subs else {}):
                return parser
            parser = subs[0].choices[name]


class _Parsers(dict):
    """Command name -> its parser, built (its module's ``register`` run) on first lookup."""

    def __init__(self, commands: Commands) -> None:
        super().__init__()
        self._commands = commands

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        if dict.__getitem__(self, name) is None:
            self._commands.build(name)
        return dict.__getitem__(self, name)

    def values(self):
        """The parsers, every one built."""
        return {name: self[name] for name in self}.values()

    def items(self):
        """(name, parser) of every command, every parser built."""
        return {name: self[name] for name in self}.items()


class Commands(argparse._SubParsersAction):
    """The subcommands: each listed in --help by its ``HELP`` line, its parser built when used."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _Parsers(self)
        self._modules: dict[str, ModuleType] = {}

    def add_command(self, name: str, module: ModuleType) -> None:
        """List the command ``name`` of ``module`` (its ``HELP``); build its parser later."""
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), module.HELP))
        dict.__setitem__(self._name_parser_map, name, None)
        self._modules[name] = module

    def build(self, name: str) -> None:
        """Add the parser of command ``name``: its module's ``register`` calls add_parser."""
        self._modules[name].register(self)

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        """As argparse's, for a command listed already by add_command (its help line)."""
        kwargs.pop("help", None)
        if kwargs.get("prog") is None:
            kwargs["prog"] = f"{self._prog_prefix} {name}"
        parser = self._parser_class(**kwargs)
        dict.__setitem__(self._name_parser_map, name, parser)
        return parser


def version_text() -> str:
    """What ``reljudge --version`` prints."""
    from reljudge.version import __version__

    return f"reljudge {__version__}"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand (each built on first use)."""
    parser = Parser(prog="reljudge", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=version_text())
    sub = cast(Commands, parser.add_subparsers(dest="command", metavar="COMMAND",
                                               action=Commands))
    for name in COMMANDS:
        sub.add_command(name, importlib.import_module(f"reljudge.cli.{name}_cmd"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``reljudge`` console script; returns the exit code (130 for a
    Ctrl-C that no command handled, at any moment of start-up too: no traceback)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("reljudge: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    from reljudge.errors import ReljudgeError

    # --version alone: answered before any parser is built
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(version_text())
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "blas_idle", False):
        idle_blas_threads()
    try:
        from reljudge.cli.common import check_apart, resolve_store

        resolve_store(args)
        check_apart(args, cast(Parser, parser).innermost(args))
        code = args.func(args)
        # a full disk under `> file` is found here, not at exit
        sys.stdout.flush()
    except ReljudgeError as e:
        from reljudge.store.postgres import masked

        print(f"reljudge: error: {masked(str(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:
        if e.errno not in NO_ROOM:
            raise
        _drop_stdout()
        where = f" {e.filename}" if e.filename else " the output"
        print(f"reljudge: error: cannot write{where}: {e.strerror}", file=sys.stderr)
        return 2
    return int(code or 0)


#: OpenBLAS's setting of how long (2^N cycles) its worker threads spin waiting for work
#: before they sleep; the default, 28, is about 0.1 s of a core after every product
BLAS_SPIN_ENV = "OPENBLAS_THREAD_TIMEOUT"


def idle_blas_threads() -> None:
    """Have numpy's BLAS (OpenBLAS) workers sleep as soon as they are idle, not spin for
    2^28 cycles, unless the user set OPENBLAS_THREAD_TIMEOUT; only before numpy is loaded,
    when OpenBLAS reads it. For a command of a few small products (``blas_idle`` in its
    parser's defaults), the spinning, from numpy's start and after each product, cost more
    CPU than the products. The threads and the numbers are the same (their number would
    change the last bits of a product OpenBLAS splits among them)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_SPIN_ENV, "4")


#: the errors of a write the disk has no room for
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _drop_stdout() -> None:
    """Point stdout at /dev/null: what it could not write is not retried (and fails again) at
    exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        # no file descriptor (a test's captured stdout)
        pass


def run() -> None:
    """Console-script shim: exit with main()'s code."""
    sys.exit(main())
