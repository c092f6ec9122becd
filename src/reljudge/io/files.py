"""The one place files are opened for reading and written: text in, atomic writes out."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reljudge.errors import InputError


def read_text(path: str | Path) -> str:
    """The whole text of a UTF-8 file; a missing file, a directory or bad UTF-8 is an InputError."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte {e.start})", path, line) from None


def atomic_write(path: str | Path, text: str) -> None:
    """Write text so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
