"""The front door for files: compression by magic bytes, BOM, CRLF, one-line errors."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import sys

import pytest

from reljudge.errors import InputError
from reljudge.io.files import Content, content_stem, content_suffix, file_sha256, read_text
from reljudge.pipeline.manifest import file_digest

TEXT = "q1 0 d1 1\nq2 0 é 2\n"
PACK = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
@pytest.mark.parametrize("name", ["x{}", "x.txt"])  # by magic bytes, whatever the name
def test_compressed_files_read_as_their_text(tmp_path, suffix, name):
    p = tmp_path / name.format(suffix)
    p.write_bytes(PACK[suffix](b"\xef\xbb\xbf" + TEXT.replace("\n", "\r\n").encode()))
    assert read_text(p).splitlines() == TEXT.splitlines()
    assert Content(p).size == len(TEXT.encode()) + 3 + 2  # BOM and CRs: the content's size


def test_concatenated_gzip_members_are_all_read(tmp_path):
    p = tmp_path / "x.gz"
    p.write_bytes(gzip.compress(b"a\n") + gzip.compress(b"b\n"))
    assert read_text(p) == "a\nb\n"


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_compressed_file_is_an_error_naming_it(tmp_path, suffix, damage):
    data = PACK[suffix](("x" * 5000 + "\n").encode() * 20)
    p = tmp_path / f"bad{suffix}"
    if damage == "truncated":
        p.write_bytes(data[: len(data) // 2])
    else:
        p.write_bytes(data[:12] + bytes(b ^ 0x5A for b in data[12:40]) + data[40:])
    with pytest.raises(InputError, match=rf"bad{suffix}: is not a valid \w+ file"):
        read_text(p)


def test_a_file_named_gz_that_is_not_gzip_is_an_error(tmp_path):
    p = tmp_path / "x.qrels.gz"
    p.write_text(TEXT)
    with pytest.raises(InputError, match=r"x.qrels.gz: is named .gz but is not gzip-compressed"):
        read_text(p)


def test_zstd_needs_the_zstandard_package(tmp_path, monkeypatch):
    p = tmp_path / "x.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 8)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    with pytest.raises(InputError, match=r"x.zst: is zstd-compressed; install the 'zstandard'"):
        read_text(p)


def test_zstd_files_are_read_when_zstandard_is_installed(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    p = tmp_path / "x.zst"
    frames = zstandard.ZstdCompressor().compress(TEXT.encode())
    p.write_bytes(frames + zstandard.ZstdCompressor(write_content_size=False).compress(b"z\n"))
    assert read_text(p) == TEXT + "z\n"
    p.write_bytes(frames[:-3])
    with pytest.raises(InputError, match=r"x.zst: is not a valid zstd file \(truncated"):
        read_text(p)


def test_text_errors_name_the_file_and_line(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"\xef\xbb\xbfok\nstill ok\nbad \xff\n")
    with pytest.raises(InputError, match=r"x.txt:3: not valid UTF-8 \(byte 19\)"):
        read_text(p)
    p.write_bytes(gzip.compress(b"ok\n\xff\n"))
    with pytest.raises(InputError, match=r"x.txt:2: not valid UTF-8 \(byte 3\)"):
        read_text(p)
    p.write_bytes("q1\tx\n".encode("utf-16"))
    with pytest.raises(InputError, match=r"x.txt:1: not valid UTF-8 .*looks like UTF-16"):
        read_text(p)
    with pytest.raises(InputError, match=r"nope.txt: no such file"):
        read_text(tmp_path / "nope.txt")
    with pytest.raises(InputError, match=r"is a directory, expected a file"):
        read_text(tmp_path)


def test_only_a_leading_bom_is_dropped(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"\xef\xbb\xbfa\xef\xbb\xbf\n")
    assert read_text(p) == "a\ufeff\n"


def test_names_without_compression_suffixes():
    assert content_suffix("a/labels.CSV.gz") == ".csv" and content_suffix("q.jsonl") == ".jsonl"
    assert content_stem("runs/bm25.run.xz") == "bm25" and content_stem("bm25.run") == "bm25"


def test_file_sha256_hashes_the_stored_bytes_and_the_manifest_keeps_16_characters(tmp_path):
    path = tmp_path / "big.run.gz"
    data = gzip.compress(TEXT.encode()) + bytes(range(256)) * 9000  # over 1 MiB, kept packed
    path.write_bytes(data)
    assert file_sha256(path) == (hashlib.sha256(data).hexdigest(), len(data))
    assert file_digest(path) == hashlib.sha256(data).hexdigest()[:16]
