"""Compact byte columns for large qrels and runs: fixed-width bytes, 64-bit keys, exact joins.

A column of ids read from a large file is kept as one numpy ``S`` array (``S9`` for ids of up to
nine bytes) instead of millions of Python strings. Equality of (query, document) pairs is found
by sorting 64-bit hashes with the row number packed into their low bits (one ``np.sort``, no
``argsort``), and every hash match is then confirmed on the bytes themselves: a hash collision
can cost a little time, never a wrong answer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_BIG_ENDIAN = sys.byteorder == "big"
#: rows hashed at a time (keeps the temporaries in cache)
_BLOCK = 1 << 20
# masks keeping the first k bytes (in memory) of an 8-byte word, k = 0..8
_KEEP_BYTES = ((np.arange(8)[None, :] < np.arange(9)[:, None]) * np.uint8(255)).astype(
    np.uint8).view(np.uint64).ravel()


def fixed_width(offsets: np.ndarray, data: np.ndarray, width: int, out: np.ndarray) -> None:
    """Fill the ``S{width}`` array ``out`` with the strings ``data[offsets[i]:offsets[i+1]]``
    (the Arrow layout of a string column)."""
    n = len(offsets) - 1
    if n == 0:
        return
    lengths = np.diff(offsets)
    padded = np.zeros(len(data) + width, dtype=np.uint8)
    padded[: len(data)] = data
    windows = np.lib.stride_tricks.as_strided(padded, (len(padded) - width + 1, width), (1, 1))
    rows = out.view(np.uint8).reshape(n, width)
    # `width` bytes from each string's start
    rows[:] = windows[offsets[:-1]]
    # clear the bytes that belong to the next string
    for j in range(width):
        col = rows[:, j]
        col[lengths <= j] = 0


def as_bytes(values: ArrayLike) -> np.ndarray:
    """An ``S`` array of the UTF-8 bytes of the given strings (or the array itself if ``S``)."""
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    # numbers: their text, as narrow as it is
    if arr.dtype.kind not in "OUS":
        arr = np.array([str(v) for v in arr.tolist()], dtype=object)
    return utf8(arr)


def decode(arr: np.ndarray) -> np.ndarray:
    """An object array of Python str from an ``S`` array of UTF-8 bytes."""
    try:
        # ASCII: one C-level pass each way
        return arr.astype("U").astype(object)
    except UnicodeDecodeError:
        return np.array([b.decode() for b in arr.tolist()], dtype=object)


def words(arr: np.ndarray) -> int:
    """How many 64-bit words hold the widest string of an ``S`` array."""
    return max(1, -(-arr.dtype.itemsize // 8))


def utf8(values: np.ndarray) -> np.ndarray:
    """An ``S`` array of the UTF-8 bytes of an array of str (object or ``U``), or the array
    itself if ``S``: ASCII in one C-level pass, other text one string at a time."""
    if values.dtype.kind == "S":
        return values
    try:
        # numpy encodes as ASCII
        return values.astype("S")
    except UnicodeEncodeError:
        encoded = [str(v).encode() for v in values.tolist()]
        return np.array(encoded, dtype=f"S{max(map(len, encoded), default=1) or 1}")


def joined_utf8(strings: Iterable[str], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, starts, ends) of ``n`` str as one UTF-8 buffer: string i is
    ``bytes[starts[i]:ends[i]]``; the buffer may go on past the last string (zero bytes that
    spare ``take_strings`` a copy). One join and one encode, not one encode per string (a
    NUL inside a string is told apart from the separators; then each is encoded alone)."""
    strings = list(strings)
    if not n:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, np.int64)
    # with its separator: 64 zero bytes after the last string
    strings.append("\0" * 63)
    text = "\0".join(strings).encode()
    zeros = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 0)
    # separators and padding only
    if len(zeros) == n + 63:
        return np.frombuffer(text, dtype=np.uint8), np.r_[0, zeros[: n - 1] + 1], zeros[:n]
    encoded = [s.encode() for s in strings[:n]]
    lengths = np.fromiter(map(len, encoded), np.int64, n)
    ends = np.cumsum(lengths)
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends - lengths, ends


def _words_needed(starts: np.ndarray, ends: np.ndarray) -> int:
    """How many 64-bit words hold the longest of the strings ``starts[i]:ends[i]``."""
    return max(1, -(-int((ends - starts).max()) // 8)) if len(starts) else 1


def _words_at(data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              nwords: int) -> list[np.ndarray]:
    """The first ``nwords`` 8-byte words (in memory order) of the byte strings
    ``data[starts[i]:ends[i]]``, each word's bytes past its string's end cleared: 8 bytes at
    a time from an unaligned uint64 view of ``data`` (one load a word, not a row of bytes
    copied; measured: a 5,300-line run's columns 0.75 -> 0.50 ms)."""
    lengths = ends - starts
    if len(data) < 8 * nwords or (len(starts) and int(starts.max()) + 8 * nwords > len(data)):
        # too little padding past the last string for a whole word's load
        data = np.concatenate([data, np.zeros(8 * nwords, dtype=np.uint8)])
    at_every_byte = np.ndarray((len(data) - 7,), dtype=np.uint64, buffer=data, strides=(1,))
    out = []
    for k in range(nwords):
        word = at_every_byte[starts + 8 * k if k else starts]
        word &= _KEEP_BYTES[np.clip(lengths - 8 * k, 0, 8)]
        out.append(word)
    return out


def take_strings(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """An ``S`` array of the byte strings ``data[starts[i]:ends[i]]`` (its width a multiple
    of 8 bytes), a word at a time (``_words_at``)."""
    nwords = _words_needed(starts, ends)
    # few, long strings (a field of a long line): a row at a time
    if len(starts) < nwords:
        rows = np.zeros(len(starts), dtype=f"S{8 * nwords}")
        for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            rows[i] = data[a:b].tobytes()
        return rows
    out = np.empty((len(starts), nwords), dtype=np.uint64)
    for k, word in enumerate(_words_at(data, starts, ends, nwords)):
        out[:, k] = word
    return out.view(f"S{8 * nwords}").ravel()


class Packed(NamedTuple):
    """Strings as slices of one buffer of UTF-8 bytes: string i is ``data[starts[i]:ends[i]]``
    (``joined_utf8`` makes the buffer)."""

    data: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def _word_columns(strings: np.ndarray | Packed, nwords: int) -> list[np.ndarray]:
    """The first ``nwords`` 8-byte words of each string (zero padded), each as the native
    uint64 of its bytes read big-endian. From a ``Packed`` buffer the words are loaded where
    the strings lie (``_words_at``: no ``S`` array made and converted; measured on the ties
    of 10,000 x 1,000 heavily tied dicts: 0.27 -> 0.25 s, the loads bound by memory)."""
    if not isinstance(strings, Packed):
        c = strings.astype(f"S{8 * nwords}").view(">u8").reshape(len(strings), nwords)
        return [c[:, k].astype(np.uint64) for k in range(nwords)]
    words = _words_at(*strings, nwords)
    return words if _BIG_ENDIAN else [w.byteswap(inplace=True) for w in words]


def order_words(*arrays: np.ndarray | Packed) -> list[list[np.ndarray]]:
    """For each ``S`` array (or ``Packed`` strings), its strings as columns of native uint64
    words (big-endian bytes, zero padded, all arrays to one width): the word tuples compare as
    the strings do in byte order, a shorter string first (its zero padding sorts before any
    byte). Words equal in every string of every array are left out, since they never decide
    an order."""
    nwords = max(_words_needed(a.starts, a.ends) if isinstance(a, Packed) else words(a)
                 for a in arrays)
    cols = [_word_columns(a, nwords) for a in arrays]
    keep = [k for k in range(nwords)
            if any(len(c[k]) and (c[k] != c[k][0]).any() for c in cols)
            or len({int(c[k][0]) for c in cols if len(c[k])}) > 1]
    return [[c[k] for k in keep] for c in cols]


#: the most 8-byte words of a string that its hash reads (a longer one is hashed on this
#: prefix: ids are short, and a long one's hash must not cost a pass per word)
HASH_WORDS = 32


def hash_bytes(arr: np.ndarray, nwords: int | None = None) -> np.ndarray:
    """A 64-bit hash of each string, over its first ``nwords`` 8-byte words (zero padded; at
    most ``HASH_WORDS``).

    Two arrays hashed with the same ``nwords`` give equal hashes for equal strings whatever
    their widths; longer strings are hashed on their prefix (and told apart when confirmed).
    """
    nwords = min(nwords or words(arr), HASH_WORDS)
    width = arr.dtype.itemsize
    n = len(arr)
    out = np.empty(n, dtype=np.uint64)
    raw = arr.view(np.uint8).reshape(n, width)
    take = min(width, 8 * nwords)
    for a in range(0, n, _BLOCK):
        b = min(n, a + _BLOCK)
        block = np.zeros((b - a, 8 * nwords), dtype=np.uint8)
        block[:, :take] = raw[a:b, :take]
        w = block.view(np.uint64)
        h = np.full(b - a, _GOLD, dtype=np.uint64)
        for j in range(nwords):
            h ^= w[:, j]
            h *= _M1
            h ^= h >> np.uint64(29)
        out[a:b] = h
    return out


def mix(doc_hash: np.ndarray, code: np.ndarray) -> np.ndarray:
    """One 64-bit key per (query code, document hash) pair."""
    h = code.astype(np.uint64)
    h *= _GOLD
    h ^= doc_hash
    h ^= h >> np.uint64(33)
    h *= _M2
    h ^= h >> np.uint64(33)
    return h


#: keys of an index searched without sorting the needles first
SMALL_INDEX = 1 << 16


class KeyIndex:
    """The (code, doc) pairs of one table, as sorted 64-bit keys with row numbers packed in.

    Each key is the pair's hash with its low bits replaced by the row number, so one plain
    ``np.sort`` (no ``argsort``) orders the pairs by hash and keeps each one's row. Equal hashes
    are then side by side; every match is confirmed on the codes and the bytes.
    """

    def __init__(self, codes: np.ndarray, docs: np.ndarray, doc_hash: np.ndarray) -> None:
        self.codes, self.docs = codes, docs
        n = len(codes)
        self.bits = np.uint64(max(1, (n - 1).bit_length()))
        self.mask = np.uint64((1 << int(self.bits)) - 1)
        packed = mix(doc_hash, codes)
        packed >>= self.bits
        packed <<= self.bits
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        self.packed = packed

    def _rows(self, at: np.ndarray) -> np.ndarray:
        return (self.packed[at] & self.mask).astype(np.int64)

    def first_duplicate(self) -> tuple[int, int] | None:
        """(first row, repeated row) of the repeated pair with the lowest repeated row."""
        high = self.packed >> self.bits
        same = np.flatnonzero(high[1:] == high[:-1])
        hits: list[tuple[int, int]] = []
        if len(same):
            a, b = self._rows(same), self._rows(same + 1)
            ok = (self.codes[a] == self.codes[b]) & (self.docs[a] == self.docs[b])
            hits = list(zip(a[ok].tolist(), b[ok].tolist(), strict=True))
            # hashes equal in groups of 3 or more: check every row of the group
            chained = np.flatnonzero(same[1:] == same[:-1] + 1)
            for at in same[chained].tolist():
                group = self._rows(np.flatnonzero(high == high[at]))
                seen: dict[tuple[int, bytes], int] = {}
                for r in sorted(group.tolist()):
                    key = (int(self.codes[r]), bytes(self.docs[r]))
                    if key in seen:
                        hits.append((seen[key], r))
                    seen.setdefault(key, r)
        return min(hits, key=lambda p: p[1]) if hits else None

    def lookup(self, codes: np.ndarray, docs: np.ndarray,
               doc_hash: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Matching rows (i here, j in the other table) of equal (code, doc) pairs.

        ``doc_hash`` must come from ``hash_bytes`` with the ``nwords`` used for this index.
        """
        n = len(self.packed)
        high = mix(doc_hash, codes) >> self.bits
        # sorted needles search a large sorted haystack fast; a small one stays in cache
        order = np.argsort(high) if n > SMALL_INDEX else np.arange(len(high))
        needle = high[order] << self.bits
        at = np.searchsorted(self.packed, needle, "left")
        found_a, found_b = [], []
        live = np.arange(len(order))
        # the first candidate, then the next while hashes still agree
        while len(live):
            p = at[live]
            inside = p < n
            live, p = live[inside], p[inside]
            same = (self.packed[p] >> self.bits) == (needle[live] >> self.bits)
            live, p = live[same], p[same]
            a, b = self._rows(p), order[live]
            ok = (self.codes[a] == codes[b]) & (self.docs[a] == docs[b])
            found_a.append(a[ok])
            found_b.append(b[ok])
            live = live[~ok]
            at[live] += 1
        if not found_a:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(found_a), np.concatenate(found_b)


def segment_codes(arr: np.ndarray) -> tuple[list, np.ndarray]:
    """(distinct values in order of first appearance, code of each row) of a 1-d array.

    Cheap when equal values are contiguous (as query ids in a TREC file): one dict lookup per
    run of equal values, not per row.
    """
    n = len(arr)
    if n == 0:
        return [], np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, arr[1:] != arr[:-1]])
    table: dict = {}
    seg = np.fromiter((table.setdefault(v, len(table)) for v in arr[starts].tolist()),
                      np.int64, len(starts))
    codes = np.repeat(seg, np.diff(np.r_[starts, n]))
    return list(table), codes


def kept_codes(qcodes: tuple[list, np.ndarray], keep: np.ndarray
               ) -> tuple[tuple[list, np.ndarray], np.ndarray]:
    """The rows of the values whose ``keep`` (one bool per distinct value of ``qcodes``, as
    ``segment_codes`` gives them) is true: ((the kept values, the kept rows' codes among them),
    a mask of the kept rows)."""
    uniq, codes = qcodes
    kept = np.flatnonzero(keep)
    new = np.full(len(uniq), -1, dtype=np.int64)
    new[kept] = np.arange(len(kept))
    rows = keep[codes]
    return ([uniq[i] for i in kept.tolist()], new[codes[rows]]), rows
