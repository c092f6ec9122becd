"""Whitespace-separated fields of small ASCII files, found and converted with numpy.

For the many small files of a track (a few thousand lines a run): no Python object per field.
``split_fields`` finds every field's bytes in one pass over the file; ``numbers`` converts a
column of decimal text exactly as Python's ``float`` does. Each returns None where the file
or a value is not in the simple form it handles, and the caller reads the file as text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from reljudge import columns

#: the bytes a file on this path may hold: printable ASCII and what ``bytes.split()`` splits on
#: (space, \t, \n, \v, \f, \r); any other (control, non-ASCII) sends it to the text path
_ALLOWED = bytes(range(0x21, 0x7F)) + b" \t\n\v\f\r"
#: digits and decimal points with at most this many digits are converted by numpy (an integer
#: below 2^53 divided by an exact power of ten: correctly rounded, as ``float`` is)
EXACT_DIGITS = 15
_POWERS = np.array([float(10 ** k) for k in range(EXACT_DIGITS + 1)])
#: fewer values than this are converted by ``float`` itself: faster than numpy's passes, a
#: pass per byte position (measured: 1,000 values of 16 bytes 0.6 ms against 1.6 ms)
FEW_NUMBERS = 2048


def split_fields(data: bytes, ncols: int, keep: Sequence[int]) -> list[np.ndarray] | None:
    """The fields of the columns ``keep`` as ``S`` arrays, when every line of ``data``
    (printable ASCII, lines ended by ``\n``) has exactly ``ncols`` fields; else None."""
    if not data or data.translate(None, _ALLOWED):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    space = np.ones(len(raw) + 2, dtype=bool)
    np.less_equal(raw, 0x20, out=space[1:-1])
    edges = np.flatnonzero(space[1:] != space[:-1])
    starts, ends = edges[0::2], edges[1::2]
    newlines = np.flatnonzero(raw == 0x0A)
    if data[-1:] != b"\n":
        newlines = np.r_[newlines, len(raw)]
    nlines = len(newlines)
    if len(starts) != ncols * nlines or not nlines:
        return None
    # line k holds fields k*ncols ... k*ncols + ncols-1: the last ends by its end, the next
    # starts after it (a field never holds a line end)
    if (ends[ncols - 1::ncols] > newlines).any() or (starts[ncols::ncols] < newlines[:-1]).any():
        return None
    return [columns.take_strings(raw, starts[i::ncols], ends[i::ncols]) for i in keep]


def numbers(text: np.ndarray) -> np.ndarray:
    """``float`` of each ``S`` value; a ValueError when one is not a number. Plain decimals
    (``-12.5``, ``.25``, ``7``: up to ``EXACT_DIGITS`` digits) are converted with numpy, a
    byte column at a time (the digits as one integer, divided by a power of ten); other forms
    (exponents, ``inf``, ``1_0``), and fewer than ``FEW_NUMBERS`` values, by ``float``."""
    n, width = len(text), text.dtype.itemsize
    if n < FEW_NUMBERS:
        return np.fromiter(map(float, text.tolist()), np.float64, n)
    # a row per byte position; the sign read and cleared, the rest is digits and a dot
    chars = text.view(np.uint8).reshape(n, width).T.copy()
    minus = chars[0] == 0x2D
    chars[0, minus] = 0
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    after = np.zeros(n, dtype=np.int64)
    dots = np.zeros(n, dtype=np.int64)
    plain = np.ones(n, dtype=bool)
    for byte in chars:
        # digits 0..9, any other byte wraps past 9
        value = byte - np.uint8(0x30)
        digit = value < 10
        dot = byte == 0x2E
        mantissa = np.where(digit, mantissa * 10 + value, mantissa)
        digits += digit
        dots += dot
        after += digit & (dots > 0)
        plain &= digit | dot | (byte == 0)
    plain &= (dots <= 1) & (digits > 0) & (digits <= EXACT_DIGITS)
    out = mantissa / _POWERS[np.minimum(after, EXACT_DIGITS)]
    out[minus] = -out[minus]
    other = np.flatnonzero(~plain)
    if len(other):
        out[other] = np.fromiter(map(float, text[other].tolist()), np.float64, len(other))
    return out


#: plain decimals up to this wide cannot overflow to inf (float's limit is near 1.8e308)
_FINITE_WIDTH = 300


def numbers_ok(text: np.ndarray) -> bool:
    """Whether ``float`` of every ``S`` value is a finite number, without converting the
    plain decimals (``-12.5``, ``.25``, ``7``, up to ``_FINITE_WIDTH`` characters): other
    forms (exponents, ``inf``, ``1_0``) are tried with ``float`` itself. Passes over the
    whole byte matrix, none along its rows (numpy's reductions along short rows are slow)."""
    n, width = len(text), text.dtype.itemsize
    if n < FEW_NUMBERS or width > _FINITE_WIDTH:
        others = text
    else:
        chars = text.view(np.uint8).reshape(n, width)
        digit = (chars - np.uint8(0x30)) < 10
        dot = chars == 0x2E
        ok = digit | dot
        ok |= chars == 0
        ok[:, 0] |= chars[:, 0] == 0x2D
        plain = np.ones(n, dtype=bool)
        plain[np.flatnonzero(~ok.ravel()) // width] = False
        plain &= np.bincount(np.flatnonzero(dot.ravel()) // width, minlength=n) <= 1
        # a digit: a plain value (one sign, one point at most) has one in its first three
        # characters unless it is "-", "." or "-."
        has_digit = digit[:, 0].copy()
        for j in range(1, min(3, width)):
            has_digit |= digit[:, j]
        others = text[~(plain & has_digit)]
    try:
        return all(map(math.isfinite, map(float, others.tolist())))
    except ValueError:
        return False


def fits_int64(value: int) -> bool:
    """Whether an integer fits numpy's int64 (grades are held as int64)."""
    return -(1 << 63) <= value < 1 << 63


def integers_ok(text: np.ndarray) -> bool:
    """Whether every ``S`` value is an integer to Python's ``int`` (plain digits checked with
    numpy, other forms by ``int``)."""
    flat = text.view(np.uint8)
    other = (flat - np.uint8(0x30)) >= 10
    other &= flat != 0
    if not other.any():
        return True
    chars = flat.reshape(len(text), text.dtype.itemsize)
    plain = (((chars >= 0x30) & (chars <= 0x39)) | (chars == 0)).all(axis=1)
    try:
        for value in text[~plain].tolist():
            int(value)
    except ValueError:
        return False
    return True
