"""The one place files are opened for reading and written: text in, atomic writes out.

Every reader of a user's file goes through ``Content`` / ``read_text``: gzip, bzip2, xz and
(when the ``zstandard`` package is installed) zstd files are decompressed whatever their size,
recognised by their first bytes; a leading UTF-8 byte order mark is dropped; CRLF line ends
are left to the line splitters, which all accept them.
"""

from __future__ import annotations

import bz2
import hashlib
import lzma
import os
import stat
import tempfile
import zlib
from pathlib import Path

from reljudge.errors import InputError

BOM = b"\xef\xbb\xbf"
_BZ2_BLOCK = (b"1AY&SY", b"\x17rE8P\x90")  # bzip2 block and end-of-stream magic
EXTENSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}


def sniff(head: bytes) -> str | None:
    """The compression a file's first bytes announce (gzip, bzip2, xz, zstd), or None."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd"
    if head[:3] == b"BZh" and head[3:4] in b"123456789" and len(head) >= 10 \
            and head[4:10] in _BZ2_BLOCK:
        return "bzip2"
    return None


def content_suffix(path: str | Path) -> str:
    """The file's suffix once a compression suffix is set aside (``x.csv.gz`` -> ``.csv``)."""
    p = Path(path)
    if p.suffix.lower() in EXTENSIONS:
        p = p.with_suffix("")
    return p.suffix.lower()


def content_stem(path: str | Path) -> str:
    """The file's name without its suffixes of format and compression (``a.run.gz`` -> ``a``)."""
    p = Path(path)
    if p.suffix.lower() in EXTENSIONS:
        p = p.with_suffix("")
    return p.stem


def _open_error(path, e: OSError) -> InputError:
    if isinstance(e, FileNotFoundError):
        return InputError("no such file", path)
    if isinstance(e, IsADirectoryError):
        return InputError("is a directory, expected a file", path)
    if isinstance(e, PermissionError):
        return InputError("permission denied", path)
    return InputError(f"cannot be read ({e.strerror or e})", path)


def _zstd(data: bytes) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise InputError("is zstd-compressed; install the 'zstandard' package to read it, "
                         "or decompress it first (zstd -d)") from None
    out = []
    while True:  # frame by frame: a truncated frame must not pass for a short file
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            out.append(d.decompress(data))
        except zstandard.ZstdError as e:
            raise ValueError(str(e)) from None
        if not d.eof:
            raise EOFError("the compressed data ends early")
        data = d.unused_data
        if not data:
            return b"".join(out)


def _gzip(data: bytes) -> bytes:
    out = []
    while data:  # member by member (``gzip -c a b > c`` concatenates members)
        d = zlib.decompressobj(wbits=31)
        out.append(d.decompress(data))
        if not d.eof:
            raise EOFError("the compressed data ends early")
        data = d.unused_data.lstrip(b"\x00")  # zero padding after the last member is allowed
    return b"".join(out)


def _decompress(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return _gzip(data)
    if kind == "bzip2":
        return bz2.decompress(data)
    if kind == "xz":
        return lzma.decompress(data)
    return _zstd(data)


class Content:
    """One input file's content, decompressed once when compressed, for every reader of it."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        try:
            with open(path, "rb") as f:
                head = f.read(10)
                self.file_size = os.fstat(f.fileno()).st_size
        except OSError as e:
            raise _open_error(path, e) from None
        self.compression = sniff(head)
        named = EXTENSIONS.get(Path(path).suffix.lower())
        if named and self.compression is None:
            raise InputError(f"is named {Path(path).suffix} but is not {named}-compressed "
                             f"(its first bytes are {head[:4]!r})", path)
        self._data: bytes | None = None

    def data(self) -> bytes:
        """The file's bytes, decompressed (a leading byte order mark kept).

        Decompressed bytes are kept for the next reader; a plain file is read again instead,
        so that its bytes are not held while its text is parsed.
        """
        if self._data is None:
            try:
                raw = Path(self.path).read_bytes()
            except OSError as e:
                raise _open_error(self.path, e) from None
            if self.compression is None:
                return raw
            try:
                self._data = _decompress(self.compression, raw)
            except InputError as e:
                raise InputError(e.detail, self.path) from None
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as e:
                why = "truncated" if isinstance(e, EOFError) else "corrupt"
                raise InputError(f"is not a valid {self.compression} file ({why}: {e})",
                                 self.path) from None
        return self._data

    @property
    def size(self) -> int:
        """Bytes of content: the file's size, or its decompressed size."""
        return self.file_size if self.compression is None else len(self.data())

    def source(self) -> str | Path | bytes:
        """What a reader that opens files itself should read: the path of a plain file, the
        decompressed bytes of a compressed one (a byte order mark left for it to skip)."""
        return self.path if self.compression is None else self.data()

    def text(self) -> str:
        """The content as text: UTF-8, a leading byte order mark dropped."""
        data = self.data()
        skip = len(BOM) if data.startswith(BOM) else 0
        try:
            return str(memoryview(data)[skip:], "utf-8")  # no copy of the bytes
        except UnicodeDecodeError as e:
            start = e.start + skip
            line = data[:start].count(b"\n") + 1
            hint = ""
            if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
                hint = "; it looks like UTF-16: save it as UTF-8"
            raise InputError(f"not valid UTF-8 (byte {start}){hint}", self.path, line) from None


def read_text(path: str | Path) -> str:
    """The whole text of a UTF-8 file, decompressed, without a byte order mark; a missing
    file, a directory, bad UTF-8 or a corrupt compressed file is an InputError."""
    return Content(path).text()


def text_lines(text: str) -> list[str]:
    """The lines of ``text``, split on ``\\n`` only (a ``\\r`` before it dropped).

    Not ``str.splitlines``: it also breaks at U+2028, U+2029, U+0085 and other characters that
    a JSON string or a passage may hold, so one JSONL line would become two.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def file_sha256(path: str | Path) -> tuple[str, int]:
    """The SHA-256 (full hex) and the size of a file's bytes as stored (not decompressed)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def file_identity(path: str | Path) -> tuple[str | int, ...]:
    """What names one file whatever its spelling (``./a``, a symbolic or hard link): the device
    and inode of a file that exists (a link followed), else the real path it would have."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # absent, a dangling link, a name too long, a NUL byte
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def check_writable(path: str | Path, *, folder: bool = False) -> None:
    """Raise InputError, naming the path and why, unless this process can write ``path``: a
    file (``folder``: a folder to write files in) that is absent or of that kind, in the
    nearest existing folder above it, which it may write (the writer makes the folders
    between)."""
    path = Path(path)
    try:
        exists = path.exists()
    except OSError as e:  # a name too long, a loop of links
        raise InputError(f"cannot be written ({e.strerror or e})", path) from None
    if exists and path.is_dir() != folder:
        raise InputError("is a file, expected a folder" if folder else
                         "is a directory, expected a file to write", path)
    place = path if folder and path.is_dir() else path.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise InputError(f"cannot be written: {place} is a file, expected a folder", path)
    if not os.access(place, os.W_OK | os.X_OK):
        raise InputError(f"cannot be written: folder {place} is read-only", path)


def atomic_write(path: str | Path, text: str, *, allow_empty: bool = False) -> None:
    """Write text so that readers see the old file or the whole new one, never a part.

    The file gets the mode a plain ``open`` would give it (an existing file keeps its mode, a
    new one honours the umask). Empty text never replaces a non-empty file unless
    ``allow_empty``: an empty result over earlier work is almost always a mistake upstream.
    A path that cannot be written is an InputError naming it (``check_writable``).
    """
    path = Path(path)
    check_writable(path)
    try:
        old = path.stat()
    except FileNotFoundError:
        old = None
    if not text and not allow_empty and old is not None and old.st_size > 0:
        raise InputError("refusing to replace this non-empty file with an empty result "
                         "(nothing was written)", path)
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise InputError(f"cannot be written ({e.strerror or e})", path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):  # a full disk, a file made read-only meanwhile
            raise InputError(f"cannot be written ({e.strerror or e})", path) from None
        raise


def _umask() -> int:
    """The process umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
