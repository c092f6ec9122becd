"""The one place files are opened for reading and written: text in, atomic writes out."""

from __future__ import annotations

import os
import stat
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


def atomic_write(path: str | Path, text: str, *, allow_empty: bool = False) -> None:
    """Write text so that readers see the old file or the whole new one, never a part.

    The file gets the mode a plain ``open`` would give it (an existing file keeps its mode, a
    new one honours the umask). Empty text never replaces a non-empty file unless
    ``allow_empty``: an empty result over earlier work is almost always a mistake upstream.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory, expected a file to write", path)
    try:
        old = path.stat()
    except FileNotFoundError:
        old = None
    if not text and not allow_empty and old is not None and old.st_size > 0:
        raise InputError("refusing to replace this non-empty file with an empty result "
                         "(nothing was written)", path)
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
