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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from reljudge.errors import InputError

BOM = b"\xef\xbb\xbf"
_BZ2_BLOCK = (b"1AY&SY", b"\x17rE8P\x90")
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


def _open_error(path: str | Path, e: OSError) -> InputError:
    if isinstance(e, FileNotFoundError):
        return InputError("no such file", path)
    if isinstance(e, IsADirectoryError):
        return InputError("is a directory, expected a file", path)
    if isinstance(e, PermissionError):
        return InputError("permission denied", path)
    return InputError(f"cannot be read ({e.strerror or e})", path)


def _zstd_blocks(data: bytes) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:
        raise InputError("is zstd-compressed; install the 'zstandard' package to read it, "
                         "or decompress it first (zstd -d)") from None
    # frame by frame: a truncated frame must not pass for a short file
    while True:
        d = zstandard.ZstdDecompressor().decompressobj()
        # fed in pieces: a piece's output is bounded (zstd's densest block, a 128 KB run of
        # one byte, takes 4 bytes: 32 MB from 1 KB), so a long line is refused early
        at = 0
        while not d.eof and at < len(data):
            try:
                yield d.decompress(data[at:at + _ZSTD_PIECE])
            except zstandard.ZstdError as e:
                raise ValueError(str(e)) from None
            at += _ZSTD_PIECE
        if not d.eof:
            raise EOFError("the compressed data ends early")
        data = d.unused_data + data[at:]
        if not data:
            return


_ZSTD_PIECE = 1024


def _stream_blocks(kind: str, data: bytes) -> Iterator[bytes]:
    """gzip (member after member: ``gzip -c a b > c`` concatenates them; zero padding after
    the last is allowed), bzip2 or xz (stream after stream), at most ``BLOCK`` bytes out
    at a time."""
    first = True
    while data:
        if kind == "gzip":
            d: Any = zlib.decompressobj(wbits=31)
            yield d.decompress(data, BLOCK)
            while d.unconsumed_tail and not d.eof:
                yield d.decompress(d.unconsumed_tail, BLOCK)
        else:
            d = bz2.BZ2Decompressor() if kind == "bzip2" else lzma.LZMADecompressor()
            try:
                yield d.decompress(data, BLOCK)
            except (OSError, lzma.LZMAError):
                if first:
                    raise
                # bytes after a whole stream that are no stream: ignored, as by
                # bz2.decompress and lzma.decompress
                return
            while not d.eof and not d.needs_input:
                yield d.decompress(b"", BLOCK)
        first = False
        if not d.eof:
            raise EOFError("the compressed data ends early")
        data = d.unused_data.lstrip(b"\x00") if kind == "gzip" else d.unused_data


def _decompress(kind: str, data: bytes, check: LineCheck) -> bytes:
    """The decompressed bytes, their lines checked block by block as they come out."""
    blocks = []
    for block in _zstd_blocks(data) if kind == "zstd" else _stream_blocks(kind, data):
        check.feed(block)
        blocks.append(block)
    return b"".join(blocks)


#: the longest line any reader takes, in bytes: a longer one is refused at that line, read
#: in blocks (a binary file, /dev/zero, a file of one huge line never held whole)
MAX_LINE = 1 << 20
BLOCK = 1 << 20


class LineCheck:
    """Refuses a line longer than ``MAX_LINE`` as blocks of bytes go by, in constant memory:
    a line wholly inside one block (of at most MAX_LINE bytes) is short enough, so only the
    line open across blocks is measured."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.lines = 0
        self.open = 0

    def feed(self, block: bytes) -> None:
        """Check the next bytes (a block longer than MAX_LINE is checked in parts)."""
        for at in range(0, len(block), MAX_LINE):
            part = block[at:at + MAX_LINE] if len(block) > MAX_LINE else block
            first = part.find(b"\n")
            if self.open + (len(part) if first < 0 else first) > MAX_LINE:
                raise InputError(f"a line longer than {MAX_LINE >> 20} MB (the longest a "
                                 "reader takes): a binary file, or not lines of text?",
                                 self.path, self.lines + 1)
            if first < 0:
                self.open += len(part)
            else:
                self.lines += part.count(b"\n")
                self.open = len(part) - part.rfind(b"\n") - 1


def _read_checked(f: BinaryIO, path: str | Path, keep: bool) -> bytes:
    """The rest of an open binary file, its lines checked (``LineCheck``) as it is read;
    with ``keep`` False only checked (and b"" returned)."""
    check = LineCheck(path)
    blocks = []
    while block := f.read(BLOCK):
        check.feed(block)
        if keep:
            blocks.append(block)
    return b"".join(blocks)


#: the bytes of each file that is not a regular file (a pipe, /dev/stdin) read so far, by
#: (device, inode): such a file can be read only once, and a command may read an input twice
#: (its checksum, its format, its content)
_READ_ONCE: dict[tuple[int, int], bytes] = {}


def _read_once(f: BinaryIO, path: str | Path) -> bytes | None:
    """The bytes of an open file that is not a regular file (read whole, lines checked, once
    per process); None for a regular file, which is read when needed."""
    st = os.fstat(f.fileno())
    if stat.S_ISREG(st.st_mode):
        return None
    key = (st.st_dev, st.st_ino)
    if key not in _READ_ONCE:
        _READ_ONCE[key] = _read_checked(f, path, keep=True)
    return _READ_ONCE[key]


class Content:
    """One input file's content, decompressed once when compressed, for every reader of it.

    A line longer than ``MAX_LINE`` is refused at that line before the content is held
    whole. A pipe, ``/dev/stdin`` or another file that is not a regular file is read once,
    when opened, and kept (it cannot be read again)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self._raw: bytes | None = None
        self._checked = False
        try:
            with open(path, "rb") as f:
                self._raw = _read_once(f, path)
                if self._raw is None:
                    head = f.read(10)
                    self.file_size = os.fstat(f.fileno()).st_size
                else:
                    head, self.file_size = self._raw[:10], len(self._raw)
        except OSError as e:
            raise _open_error(path, e) from None
        self.compression = sniff(head)
        named = EXTENSIONS.get(Path(path).suffix.lower())
        if named and self.compression is None:
            raise InputError(f"is named {Path(path).suffix} but is not {named}-compressed "
                             f"(its first bytes are {head[:4]!r})", path)
        self._checked = self._raw is not None and self.compression is None
        self._data: bytes | None = None

    def _check_plain(self) -> None:
        """Check a plain regular file's lines, in blocks, before anything reads it whole."""
        if not self._checked:
            try:
                with open(self.path, "rb") as f:
                    _read_checked(f, self.path, keep=False)
            except OSError as e:
                raise _open_error(self.path, e) from None
            self._checked = True

    def data(self) -> bytes:
        """The file's bytes, decompressed (a leading byte order mark kept).

        Decompressed bytes are kept for the next reader; a plain file is read again instead,
        so that its bytes are not held while its text is parsed.
        """
        if self._data is None:
            if self.compression is None and self._raw is not None:
                return self._raw
            try:
                if self.compression is None and not self._checked and self.file_size <= BLOCK:
                    # one block: read once, its lines checked (a larger file is read again
                    # after its check, not joined from blocks: one copy of its bytes held)
                    with open(self.path, "rb") as f:
                        raw = _read_checked(f, self.path, keep=True)
                    self._checked = True
                    return raw
                raw = Path(self.path).read_bytes() if self._raw is None else self._raw
            except OSError as e:
                raise _open_error(self.path, e) from None
            if self.compression is None:
                return raw
            try:
                self._data = _decompress(self.compression, raw, LineCheck(self.path))
            except InputError as e:
                raise InputError(e.detail, self.path, e.line) from None
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as e:
                why = "truncated" if isinstance(e, EOFError) else "corrupt"
                raise InputError(f"is not a valid {self.compression} file ({why}: {e})",
                                 self.path) from None
            self._raw = None
        return self._data

    @property
    def size(self) -> int:
        """Bytes of content: the file's size, or its decompressed size."""
        return self.file_size if self.compression is None else len(self.data())

    def source(self) -> str | Path | bytes:
        """What a reader that opens files itself should read: the path of a plain regular
        file (its lines checked), else the bytes (decompressed; a byte order mark left for it
        to skip)."""
        if self.compression is None and self._raw is None:
            self._check_plain()
            return self.path
        return self.data()

    def text(self) -> str:
        """The content as text: UTF-8, a leading byte order mark dropped."""
        data = self.data()
        skip = len(BOM) if data.startswith(BOM) else 0
        try:
            return str(memoryview(data)[skip:], "utf-8")
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
        once = _read_once(f, path)
        # a pipe: its bytes as every reader of it sees them
        if once is not None:
            return hashlib.sha256(once).hexdigest(), len(once)
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def file_identity(path: str | Path) -> tuple[str | int, ...]:
    """What names one file whatever its spelling (``./a``, a symbolic or hard link): the device
    and inode of a file that exists (a link followed), else the real path it would have."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        # absent, a dangling link, a name too long, a NUL byte
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
    except OSError as e:
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


def make_folder(path: str | Path) -> None:
    """Make a folder to write files in (and the folders above it); one that cannot be made
    (a read-only place, a full disk) is an InputError naming it."""
    check_writable(path, folder=True)
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot be written ({e.strerror or e})", path) from None


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
        # a full disk, a file made read-only meanwhile
        if isinstance(e, OSError):
            raise InputError(f"cannot be written ({e.strerror or e})", path) from None
        raise


def _umask() -> int:
    """The process umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
