"""The flags every command shares, defined once: output format, measures, runs, quiet,
query rule, score precision, digits; and writing results.

One grammar for all commands: runs are positional, ``-m/--measure`` is repeatable,
``--format`` takes the same names everywhere (each command refusing those it cannot write),
``--out`` is always a file and ``--out-dir`` a folder. Each flag has one spelling.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence

from reljudge.tables import FORMATS

#: every output format a command may accept, in the order --help lists them
ALL_FORMATS = ("table", "json", "csv", "markdown", "trec", "latex")

class FormatAction(argparse.Action):
    """Stores an output format, refusing (exit 2) the formats this command cannot write."""

    def __init__(self, option_strings, dest, allowed: Sequence[str] = ALL_FORMATS,
                 nargs=None, const=None, **kwargs):
        self.allowed = tuple(allowed)
        super().__init__(option_strings, dest, nargs=nargs, const=const, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        value = self.const if self.nargs == 0 else values
        shown = f"{option_string}{'' if self.nargs == 0 else ' ' + value}"
        if value not in self.allowed:
            parser.error(f"{shown}: not available here; this command writes "
                         f"{_words(self.allowed)}")
        given = getattr(namespace, FORMAT_GIVEN, None)
        # --json --format csv: which one?
        if given is not None and given[1] != value:
            parser.error(f"{given[0]} and {shown}: two output formats; give one")
        setattr(namespace, FORMAT_GIVEN, (shown, value))
        setattr(namespace, self.dest, value)


#: where FormatAction notes the format flag given first (to refuse a second, different one)
FORMAT_GIVEN = "_format_given"


def _words(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def add_format(parser: argparse.ArgumentParser, allowed: Sequence[str] = FORMATS,
               default: str = "table") -> None:
    """--format with every format name as a choice, refusing those not in ``allowed``; the
    --json shorthand where json is allowed."""
    unknown = set(allowed) - set(ALL_FORMATS)
    assert not unknown and default in allowed, (allowed, default)
    parser.add_argument("--format", action=FormatAction, allowed=allowed, choices=ALL_FORMATS,
                        default=default, metavar="{" + ",".join(allowed) + "}",
                        help=f"output format: {_words(allowed)} (default: {default})")
    if "json" in allowed:
        parser.add_argument("--json", dest="format", action=FormatAction, allowed=allowed,
                            nargs=0, const="json", help="same as --format json")


def add_measures(parser: argparse.ArgumentParser, default: Sequence[str] | str) -> None:
    """-m/--measure, repeatable, into ``args.measures`` (None when not given)."""
    text = default if isinstance(default, str) else " ".join(default)
    parser.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                        help=f"a measure in ir_measures syntax, e.g. nDCG@10, 'P(rel=2)@5', AP "
                             f"(repeatable; default: {text})")


def add_runs(parser: argparse.ArgumentParser, required: bool = True,
             help: str = "TREC run file(s): QID Q0 DOCID RANK SCORE TAG") -> None:
    """Run files as positional arguments (``args.runs``, a list)."""
    parser.add_argument("runs", nargs="+" if required else "*", metavar="RUN", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """--quiet: no progress display (results, warnings and errors are still printed)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress display on stderr (results, warnings and errors "
                             "are still printed)")


def add_all_queries(parser: argparse.ArgumentParser, short: bool = False) -> None:
    """--all-queries (and -c with ``short``): trec_eval -c."""
    parser.add_argument(*(["-c"] if short else []), "--all-queries", action="store_true",
                        help="average over every qrels query; missing ones score 0 "
                             "(trec_eval -c)")


def add_float32_scores(parser: argparse.ArgumentParser) -> None:
    """--float32-scores: rank as trec_eval 9 does."""
    parser.add_argument("--float32-scores", action="store_true",
                        help="round scores to float32 before ranking, to match trec_eval 9 "
                             "and pytrec_eval bit for bit")


def add_digits(parser: argparse.ArgumentParser, default: int = 4,
               kept: str = "csv and json keep full precision") -> None:
    """--digits: decimals of printed numbers; ``kept`` says what the command writes otherwise
    (by default: csv and json in full precision)."""
    parser.add_argument("--digits", type=digits, default=default,
                        help=f"decimals of the numbers printed, 0 to {MAX_DIGITS} (default "
                             f"{default}; {kept})")


def add_out_dir(parser: argparse.ArgumentParser, default: str, help: str) -> None:
    """--out-dir FOLDER."""
    parser.add_argument("--out-dir", default=default, metavar="DIR", help=help)


def comma_list(text: str) -> list[str]:
    """An argparse type: one value or a comma-separated list of values."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"expected NAME or NAME,NAME,..., found {text!r}")
    return items


def flatten(values: Sequence[Sequence[str]] | None) -> list[str] | None:
    """The lists of a repeatable comma-list flag as one list (None when never given)."""
    return None if values is None else [v for vs in values for v in vs]


def show_progress(quiet: bool) -> bool:
    """Whether to draw progress displays: stderr is a terminal and --quiet was not given.
    Every progress bar and spinner draws on stderr; stdout carries results only."""
    return not quiet and sys.stderr.isatty()


@contextlib.contextmanager
def working(text: str, quiet: bool) -> Iterator[None]:
    """A status line on stderr while long work runs (a terminal only; none with --quiet)."""
    if not show_progress(quiet):
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(text):
        yield


#: seconds a command runs before its steps' progress bar is drawn (a quick one draws none)
STEPS_AFTER = 2.0


@contextlib.contextmanager
def steps(total: int, quiet: bool, after: float | None = None
          ) -> Iterator[Callable[[str], None]]:
    """A progress bar of a command's ``total`` steps on stderr, drawn once the command has
    run ``after`` seconds (default ``STEPS_AFTER``; a terminal only, none with --quiet).
    Yields ``step(text)``, called as each step starts."""
    if not show_progress(quiet):
        yield lambda text: None
        return
    import threading

    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    from reljudge.judge.progress import stderr_console

    bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=stderr_console(), transient=True)
    task = bar.add_task("", total=total)
    begun = [0]  # steps begun so far
    lock, ended = threading.Lock(), [False]

    def step(text: str) -> None:
        bar.update(task, description=text, completed=begun[0])
        begun[0] += 1

    def draw() -> None:
        with lock:
            if not ended[0]:  # the timer may fire as the command ends
                bar.start()

    timer = threading.Timer(STEPS_AFTER if after is None else after, draw)
    timer.daemon = True
    timer.start()
    try:
        yield step
    finally:
        timer.cancel()
        with lock:
            ended[0] = True
            bar.stop()


def non_negative_int(text: str, least: int = 0) -> int:
    """An argparse type: an integer of 0 (``least``) or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {least} or more, found {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer of 1 or more."""
    return non_negative_int(text, 1)


#: the most decimals --digits prints: a double holds about 16 significant digits
MAX_DIGITS = 16


def digits(text: str) -> int:
    """An argparse type: decimals to print, 0 to MAX_DIGITS."""
    value = non_negative_int(text)
    if value > MAX_DIGITS:
        raise argparse.ArgumentTypeError(f"expected {MAX_DIGITS} or fewer (a double holds "
                                         f"about 16 significant digits), found {value}")
    return value


def suffix_of(what: str, *suffixes: str) -> Callable[[str], str]:
    """An argparse type: the path of a file the command writes (``output_file``) holding
    ``what``, its suffix (if it has one) one of ``suffixes`` (a report.pdf would hold HTML)."""

    def check(text: str) -> str:
        from pathlib import Path

        suffix = Path(text).suffix
        if suffix and suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(f"{text}: this writes {what}, not {suffix}; give "
                                             f"a file name ending in {_words(suffixes)}")
        return OutputFile(text)

    return check


def name(text: str) -> str:
    """An argparse type: a name, not empty or blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a name, found {text!r}")
    return text


class OutputFile(str):
    """The path of a file a command writes (the argparse type ``output_file`` makes one):
    ``check_apart`` tells outputs from inputs by this type."""


def output_file(text: str) -> str:
    """An argparse type: the path of a file the command writes. Before the command runs,
    ``check_apart`` refuses it when it is the store, another output or an input."""
    return OutputFile(text)


#: the files SQLite keeps beside a store file while it is open
SQLITE_SIDECARS = ("", "-wal", "-shm", "-journal")


def check_apart(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse an output file that is the label store (or a file SQLite keeps beside it),
    another output of the same command, or one of its inputs (any other argument naming an
    existing file): the same file by device and inode, not by spelling. Nothing is written."""
    shown = {a.dest: a.option_strings[0] if a.option_strings else a.metavar or a.dest.upper()
             for a in parser._actions}
    outputs: list[tuple[str, str]] = []
    inputs: list[tuple[str, str]] = []
    for dest, value in vars(args).items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, OutputFile):
                outputs.append((dest, v))
            elif isinstance(v, str) and dest != "store" and _is_file(v):
                inputs.append((dest, v))
    if not outputs:
        return
    from reljudge.errors import ConfigError
    from reljudge.io.files import file_identity
    from reljudge.store.postgres import is_url

    store: str = getattr(args, "store", None) or ""
    stores = () if not store or is_url(store) else (store, os.path.realpath(store))
    # the store and its sidecar files, beside a link's target too
    stored = {file_identity(f"{base}{end}"): f"{base}{end}"
              for base in stores for end in SQLITE_SIDECARS}
    seen: dict[tuple, tuple[str, str]] = {}
    for dest, path in outputs:
        flag = f"{shown.get(dest, dest)} {path}"
        same = file_identity(path)
        if same in stored:
            what = ("the label store" if stored[same] in stores
                    else f"the label store's SQLite file {stored[same]}")
            raise ConfigError(f"{flag} is {what} (--store {store}): writing it would destroy "
                              "the store; nothing was written")
        if same in seen:
            other = seen[same]
            raise ConfigError(f"{flag} and {shown.get(other[0], other[0])} {other[1]} are the "
                              "same file; give each output its own; nothing was written")
        seen[same] = (dest, path)
    for dest, path in inputs:
        if file_identity(path) in seen:
            out_dest, out = seen[file_identity(path)]
            raise ConfigError(f"{shown.get(out_dest, out_dest)} {out} is also an input of this "
                              f"command ({shown.get(dest, dest)} {path}): writing it would "
                              "replace what is read; nothing was written")


def _is_file(text: str) -> bool:
    """Whether ``text`` names an existing file (a value that is no path at all: False)."""
    try:
        return os.path.isfile(text)
    except ValueError:
        # a NUL byte
        return False


def check_outputs(*paths: str | None) -> None:
    """Refuse output files that cannot be written (a folder, in a read-only folder, below a
    file) before any work is done: nothing half-written."""
    from reljudge.io.files import check_writable

    for p in paths:
        if p:
            check_writable(p)


def say(text: str) -> None:
    """A progress line of the library's, on stderr at once (stdout carries results only)."""
    print(text, file=sys.stderr, flush=True)


def warn(note: str) -> None:
    """A warning of the library's, as it happens: ``warning: ...`` on stderr."""
    print(f"warning: {note}", file=sys.stderr)


def note_unjudged(results) -> None:
    """A note on stderr for each run (name -> its evaluation, holding Judged@10) whose top 10
    is too little judged for its scores to be read alone (eval, report)."""
    from reljudge.metrics.queries import unjudged_notes

    for line in unjudged_notes(results):
        print(f"note: {line}", file=sys.stderr)


def emit(text: str, output: str | None = None) -> None:
    """Print text, or write it to a file (``output``, the --out of a command) when given."""
    if output:
        from reljudge.io.files import atomic_write

        atomic_write(output, text)
    else:
        sys.stdout.write(text)


def open_store(args: argparse.Namespace, create: bool = False):
    """The store of a `reljudge labels` verb: only import may create it (elsewhere a missing
    store is a typo), and only import and upgrade write to it (the other verbs never upgrade
    an older one)."""
    from reljudge.store import LabelStore

    return LabelStore(args.store, create=create,
                      readonly=args.verb not in ("import", "upgrade"))


STORE_ENV = "RELJUDGE_STORE"


def add_store(parser, help: str, required: bool = False) -> None:
    """--store (a SQLite file or a postgresql:// URL) and --store-schema. A command that
    needs a store takes it from RELJUDGE_STORE when --store is not given; where a store is
    optional its presence changes what the command does, so only the flag gives it."""
    env = os.environ.get(STORE_ENV) if required else None
    parser.add_argument("--store", required=required and not env, default=env,
                        help=f"{help}: a SQLite file, or postgresql://USER@HOST:PORT/DB"
                             + (f" (default: ${STORE_ENV})" if required else ""))
    parser.add_argument("--store-schema", metavar="NAME",
                        help="with a postgresql:// store: the schema holding it (one per "
                             "project; default: the URL's ?schema=, else reljudge)")


def check_store_path(value: str | None, flag: str = "--store") -> None:
    """Refuse a SQLite store path no command can use (``store.sqlite.path_problem``: a
    folder, or in a folder that is not there), naming the flag."""
    # no store: the store package is not imported
    if not value:
        return
    from pathlib import Path

    from reljudge.errors import ConfigError
    from reljudge.store.postgres import is_url
    from reljudge.store.sqlite import path_problem

    problem = None if is_url(value) else path_problem(Path(value))
    if problem is not None:
        raise ConfigError(f"{flag} {value} {problem}")


def resolve_store(args: argparse.Namespace) -> None:
    """Check a SQLite --store's path; fold --store-schema into a postgresql:// --store (as its
    ?schema=), an error with a SQLite store. Called once, before the command runs."""
    check_store_path(getattr(args, "store", None))
    schema = getattr(args, "store_schema", None)
    if schema is None:
        return
    from reljudge.errors import ConfigError
    from reljudge.store.postgres import is_url, locate

    if not is_url(getattr(args, "store", None)):
        raise ConfigError("--store-schema goes with a postgresql:// --store")
    location = locate(args.store, schema)
    sep = "&" if "?" in location.conninfo else "?"
    args.store = f"{location.conninfo}{sep}schema={location.schema}"
