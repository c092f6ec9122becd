"""Benchmark: labeller throughput against a local OpenAI-compatible server.

1. Judgments per second at concurrency 1, 8, 32, 128 with a fixed 200 ms answer delay, against
   the ideal concurrency / latency; wall time of the whole ``label`` call (start-up, opening
   connections and the cache included), about ``--seconds`` of ideal work per row; the
   client's CPU per judgment; both transports (aiohttp, the default, and the SDK's httpx).
2. Per-judgment overhead with zero delay (client, server, parsing, cache, bookkeeping).
3. Re-labelling 100,000 cached pairs in a new process (as a second ``reljudge label``): time,
   and HTTP calls made (must be 0).

    python bench/labeller.py
    python bench/labeller.py --cached 20000 --delay 0.1 --seconds 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from reljudge.judge import JudgeConfig, Labeller


@contextmanager
def server_process(delay: float):
    """The fake OpenAI server in its own process, so it does not share our GIL."""
    proc = subprocess.Popen([sys.executable, "-c", "from reljudge.testing.fake_openai import "
                             "main; main()", "--delay", str(delay)], stdout=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip()
        yield Remote(url)
    finally:
        proc.terminate()
        proc.wait()


class Remote:
    """The base URL and call counter of a server process."""

    def __init__(self, base_url: str):
        self.base_url = base_url

    @property
    def calls(self) -> int:
        with urllib.request.urlopen(self.base_url.rsplit("/v1", 1)[0] + "/stats") as r:
            return json.load(r)["calls"]


def workload(n: int, tag: str):
    """n distinct pairs with their texts."""
    pairs = [(f"q{i % 100}", f"{tag}{i}") for i in range(n)]
    queries = {f"q{i}": f"query number {i}" for i in range(100)}
    passages = {d: f"passage {d} with some words about the topic" for _, d in pairs}
    return pairs, queries, passages


def timed(server, cache: Path, n: int, concurrency: int, tag: str, transport: str = "auto"):
    """(seconds, client CPU seconds, report) of labelling n fresh pairs."""
    pairs, queries, passages = workload(n, tag)
    cfg = JudgeConfig(model="m", base_url=server.base_url, api_key="k", cache_dir=cache,
                      concurrency=concurrency, timeout=30, prompt="basic", transport=transport)
    t, cpu = time.perf_counter(), time.process_time()
    report = asyncio.run(Labeller(cfg).label(pairs, queries, passages))
    return time.perf_counter() - t, time.process_time() - cpu, report


def main() -> None:
    """Run the three measurements and print tables."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--cached", type=int, default=100_000)
    p.add_argument("--seconds", type=float, default=10.0,
                   help="ideal seconds of work per throughput row (default 10)")
    p.add_argument("--child", choices=("fill", "relabel"), help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args.child, args.url, args.cache_dir, args.cached)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print(f"1. throughput with a {args.delay * 1000:.0f} ms answer delay")
        print(f"{'transport':>9} {'concurrency':>11} {'pairs':>6} {'seconds':>8} "
              f"{'judgments/s':>12} {'ideal/s':>8} {'of ideal':>9} {'client CPU/judgment':>20}")
        with server_process(args.delay) as server:
            rows = [("aiohttp", c) for c in (1, 8, 32, 128)] + [("httpx", 128)]
            for transport, c in rows:
                ideal = c / args.delay
                n = max(20, int(ideal * args.seconds))
                secs, cpu, report = timed(server, tmp / f"{transport}{c}", n, c,
                                          f"{transport}{c}-", transport)
                assert report.calls == n and report.labelled == n
                print(f"{transport:>9} {c:>11} {n:>6} {secs:>8.2f} {n / secs:>12.1f} "
                      f"{ideal:>8.1f} {n / secs / ideal:>9.1%} {cpu / n * 1000:>17.2f} ms")
        with server_process(0.0) as server:
            n = 2000
            secs, _, report = timed(server, tmp / "zero", n, 32, "z-")
            print(f"\n2. zero delay: {n} judgments in {secs:.2f} s at concurrency 32 = "
                  f"{secs / n * 1000:.2f} ms per judgment (client + server + parse + cache)")
        with server_process(0.0) as server:
            # an earlier run filled the cache; the re-label is a new process, as a user's
            # second `reljudge label` would be
            fill = _in_child("fill", server, tmp / "big", args.cached)["seconds"]
            out = _in_child("relabel", server, tmp / "big", args.cached)
            print(f"\n3. re-label {args.cached:,} cached pairs in a new process (the label call; "
                  f"interpreter start and imports not included): "
                  f"{out['seconds']:.2f} s ({args.cached / out['seconds']:,.0f} pairs/s), "
                  f"HTTP calls made: {server.calls}, labelled {out['labelled']:,} "
                  f"(cache filled in {fill:.1f} s)")


def _in_child(step: str, server, cache: Path, n: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", step, "--url", server.base_url,
                           "--cache-dir", str(cache), "--cached", str(n)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _child(step: str, url: str, cache: Path, n: int) -> None:
    """Fill the cache with n answers, or re-label the n pairs; print JSON with the time."""
    pairs, queries, passages = workload(n, "k-")
    cfg = JudgeConfig(model="m", base_url=url, api_key="k", cache_dir=cache, prompt="basic")
    labeller = Labeller(cfg)
    t = time.perf_counter()
    if step == "fill":
        answer = {"text": "final score: 2", "finish_reason": "stop", "refusal": None,
                  "tokens_in": 60, "tokens_out": 4, "latency": 0.2, "logprobs": None}
        c = labeller.cache()
        for q, d in pairs:
            c.set(labeller._key(labeller.messages(q, d, queries, passages), 0), answer)
        c.close()
        print(json.dumps({"seconds": time.perf_counter() - t}))
        return
    report = asyncio.run(labeller.label(pairs, queries, passages))
    print(json.dumps({"seconds": time.perf_counter() - t, "labelled": report.labelled}))


if __name__ == "__main__":
    main()
