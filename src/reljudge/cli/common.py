"""Flag helpers shared by subcommands (output format, writing results)."""

from __future__ import annotations

import argparse
import sys

from reljudge.report.tables import FORMATS, render


def add_format_flags(parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    """--format plus the --json / --csv shorthands."""
    parser.add_argument("--format", choices=formats, default="table",
                        help="output format (default: an aligned table)")
    parser.add_argument("--json", dest="format", action="store_const", const="json",
                        help="same as --format json")
    parser.add_argument("--csv", dest="format", action="store_const", const="csv",
                        help="same as --format csv")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer of 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, found {value}")
    return value


def check_outputs(*paths: str | None) -> None:
    """Refuse output paths that are folders before any work is done (nothing half-written)."""
    from pathlib import Path

    from reljudge.errors import InputError

    for p in paths:
        if p and Path(p).is_dir():
            raise InputError("is a directory, expected a file to write", p)


def emit(text: str, output: str | None = None) -> None:
    """Print text, or write it to a file when --output is given."""
    if output:
        from reljudge.io.files import atomic_write

        atomic_write(output, text)
    else:
        sys.stdout.write(text)


def print_rows(headers, rows, fmt: str, digits: int = 4) -> None:
    """Render rows in the chosen format to stdout."""
    emit(render(headers, rows, fmt, digits))
