"""The front door for files: compression by magic bytes, BOM, CRLF, one-line errors."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
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
    import zstandard
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


# --- bounded reads: a line too long is refused at that line; pipes are read --------------------

def _longest_line(data: bytes) -> tuple[int, int]:
    """(length, 1-based number) of the first longest line, the reference LineCheck is held to."""
    lines = data.split(b"\n")
    longest = max(map(len, lines))
    return longest, next(i for i, line in enumerate(lines, 1) if len(line) == longest)


@pytest.mark.parametrize("blocks", [
    [b"ab\ncd"], [b"abcdefgh", b"i\n"], [b"abcdefgh\n"], [b"abcdefg", b"h\nabcdefghi\n"],
    [b"a\nb\nc\n", b"defgh", b"ijk"], [b"x" * 20], [b"ab\n" * 10, b"abcdefghij"],
    [b"abcdefgh\nabcdefgh\nabcdefgh"], [b"\n" * 30], [b"abcd", b"efgh", b"i"]])
def test_line_check_refuses_exactly_the_lines_over_the_limit(monkeypatch, blocks):
    """With a limit of 8 bytes: whatever the blocks' borders, the first line over 8 bytes is
    refused with its number, and nothing else is."""
    from reljudge.io import files

    monkeypatch.setattr(files, "MAX_LINE", 8)
    data = b"".join(blocks)
    check = files.LineCheck("f.txt")
    longest, _ = _longest_line(data)
    if longest <= 8:
        for block in blocks:
            check.feed(block)
        return
    first_long = next(i for i, line in enumerate(data.split(b"\n"), 1) if len(line) > 8)
    with pytest.raises(InputError, match=rf"^f\.txt:{first_long}: a line longer than"):
        for block in blocks:
            check.feed(block)


def _peak(argv: list[str], timeout: float = 60) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of ``reljudge ARGV`` in its own process (killed
    after ``timeout`` seconds); the peak is the one wait4 reports for that process alone."""
    import os
    import subprocess
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "reljudge", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stderr.close()
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
    return proc.returncode, err, usage.ru_maxrss / 1024


@pytest.mark.slow  # processes reading tens of MB
def test_a_line_too_long_is_refused_at_its_line_quickly_in_bounded_memory(tmp_path):
    """/dev/zero, 64 MB of zeros, a run of one 2 MB line (plain, gzip, zstd) and a qrels
    whose third line is 3 MB: each refused at that line, in seconds, and with a peak memory
    within 50 MB of evaluating two small files (a file of zeros was read whole first,
    /dev/zero never ended, a 20 MB line took 115 s)."""
    import time

    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    (tmp_path / "zeros").write_bytes(bytes(64 << 20))
    long_line = b"q1 Q0 " + b"x" * (2 << 20) + b" 1 1.0 t\n"
    (tmp_path / "long.run").write_bytes(long_line)
    (tmp_path / "long.run.gz").write_bytes(gzip.compress(long_line))
    (tmp_path / "third.qrels").write_bytes(b"q1 0 a 1\nq1 0 b 1\nq1 0 " + b"c" * (3 << 20)
                                           + b" 1\n")
    code, err, base = _peak(["eval", str(qrels), str(run)])
    assert code == 0, err
    cases = [("/dev/zero", str(run), "/dev/zero:1:"),
             (str(tmp_path / "zeros"), str(run), "zeros:1:"),
             (str(qrels), str(tmp_path / "long.run"), "long.run:1:"),
             (str(qrels), str(tmp_path / "long.run.gz"), "long.run.gz:1:"),
             (str(tmp_path / "third.qrels"), str(run), "third.qrels:3:")]
    try:
        import zstandard

        packer, zeros = zstandard.ZstdCompressor().compressobj(), bytes(16 << 20)
        (tmp_path / "zeros.zst").write_bytes(  # 1 GB of zeros in some 32 KB
            b"".join(packer.compress(zeros) for _ in range(64)) + packer.flush())
        cases.append((str(qrels), str(tmp_path / "zeros.zst"), "zeros.zst:1:"))
    except ImportError:
        pass
    for q, r, where in cases:
        start = time.monotonic()
        code, err, peak = _peak(["eval", q, r])
        took = time.monotonic() - start
        assert code == 2, err
        assert err.count("\n") == 1 and err.startswith("reljudge: error: "), err
        assert where in err and "a line longer than 1 MB" in err, err
        assert took < 20, (where, took)
        assert peak - base < 50, (where, peak, base)


@pytest.mark.slow  # seven processes
def test_pipes_and_stdin_are_read_as_files(tmp_path):
    """``eval <(cat q) <(cat r)`` (gzip too) and a run on /dev/stdin give the numbers of the
    files themselves (they were 'empty file': the size of a pipe is 0, and its first bytes
    were taken by the compression sniff)."""
    import subprocess

    (tmp_path / "q").write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 a 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n"
                                "q2 Q0 b 1 2.0 r\nq2 Q0 a 2 1.0 r\n")
    reljudge = f"{sys.executable} -m reljudge eval"
    files = subprocess.run(f"{reljudge} q r --json", shell=True, capture_output=True,
                           text=True, cwd=tmp_path)
    assert files.returncode == 0, files.stderr
    for command in (f"{reljudge} <(cat q) <(cat r) --json",
                    f"{reljudge} <(gzip -c q) <(xz -c r) --json",
                    f"cat r | {reljudge} q /dev/stdin --json",
                    f"{reljudge} /dev/stdin r --json < q"):
        p = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
        assert p.returncode == 0, (command, p.stderr)
        assert json.loads(p.stdout)["runs"] == json.loads(files.stdout)["runs"], command
    p = subprocess.run(["bash", "-c", f"{reljudge} <(true) r"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 2 and "empty file" in p.stderr, p.stderr
    # labels import reads its input twice (its checksum, then its labels): one pipe serves both
    p = subprocess.run(["bash", "-c", f"{sys.executable} -m reljudge labels import <(cat q) "
                                      "--store s.sqlite --source-kind human --json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["events"] == 4
