"""Benchmark: labeller throughput against a local OpenAI-compatible server.

1. Judgments per second at concurrency 1, 8, 32, 128 with a fixed 200 ms answer delay, against
   the ideal concurrency / latency; wall time of the whole ``label`` call (start-up, opening
   connections and the cache included), about ``--seconds`` of ideal work per row; the
   client's CPU per judgment; both transports (aiohttp, the default, and the SDK's httpx).
2. Per-judgment overhead with zero delay (client, server, parsing, cache, bookkeeping).
3. Re-labelling 100,000 cached pairs in a new process (as a second ``reljudge label``): time,
   and HTTP calls made (must be 0).
4. A 100,000-request Batch API job (``--batch-size``) against the local FakeBatchAPI, as a
   user runs it: the submitting ``label --batch`` run (plan, build the JSONL, upload, create)
   and, once the provider is done, the collecting run (download, parse, answers into the cache
   and events into the store in bulk). The HTTP calls that carry the files (with the
   in-process fake provider's work on them) are timed apart; the fake server's own time
   answering the lines is not counted. Target: our part (JSONL build + parse + store) < 10 s.
5. One job over 1, 2 and 4 local endpoints (each its own server process, the same answer delay
   and the same per-endpoint concurrency): judgments per second, and the scaling against one
   endpoint (ideal: the number of endpoints).

    python bench/labeller.py
    python bench/labeller.py --cached 20000 --delay 0.1 --seconds 4
    python bench/labeller.py --only-endpoints      # row 5 alone (about a minute)
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser  # noqa: E402


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
    p = parser(__doc__, markdown=False)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--cached", type=int, default=100_000)
    p.add_argument("--seconds", type=float, default=10.0,
                   help="ideal seconds of work per throughput row (default 10)")
    p.add_argument("--batch-size", type=int, default=100_000,
                   help="requests in the Batch API row (default 100000)")
    p.add_argument("--only-batch", action="store_true", help="run only the Batch API row")
    p.add_argument("--only-endpoints", action="store_true",
                   help="run only the many-endpoints rows (5)")
    p.add_argument("--endpoint-concurrency", type=int, default=16,
                   help="concurrency of each endpoint in rows 5 (default 16)")
    p.add_argument("--child", choices=("fill", "relabel"), help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args.child, args.url, args.cache_dir, args.cached)
        return
    if args.only_batch:
        batch_row(args.batch_size)
        return
    if args.only_endpoints:
        endpoints_rows(args.delay, args.endpoint_concurrency, args.seconds)
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
    batch_row(args.batch_size)
    endpoints_rows(args.delay, args.endpoint_concurrency, args.seconds)


def endpoints_rows(delay: float, concurrency: int, seconds: float) -> None:
    """Rows 5: one job spread over 1, 2 and 4 endpoints; scaling against one."""
    from contextlib import ExitStack

    print(f"\n5. one job over several endpoints ({delay * 1000:.0f} ms answer delay, "
          f"concurrency {concurrency} per endpoint, each endpoint its own process)")
    print(f"{'endpoints':>9} {'pairs':>6} {'seconds':>8} {'judgments/s':>12} {'ideal/s':>8} "
          f"{'of ideal':>9} {'scaling vs 1':>13} {'pairs per endpoint':>24}")
    one = None
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        fleet = [stack.enter_context(server_process(delay)) for _ in range(4)]
        for k in (1, 2, 4):
            ideal = k * concurrency / delay
            n = max(20, int(ideal * seconds))
            pairs, queries, passages = workload(n, f"e{k}-")
            cfg = JudgeConfig(model="m", api_key="k", cache_dir=Path(tmp) / f"c{k}",
                              timeout=30, prompt="basic", concurrency=concurrency,
                              endpoints=[{"url": s.base_url} for s in fleet[:k]])
            t = time.perf_counter()
            report = asyncio.run(Labeller(cfg).label(pairs, queries, passages))
            secs = time.perf_counter() - t
            assert report.calls == n and report.labelled == n
            rate = n / secs
            one = one or rate
            shares = "/".join(str(e["pairs"]) for e in report.endpoints)
            print(f"{k:>9} {n:>6} {secs:>8.2f} {rate:>12.1f} {ideal:>8.1f} "
                  f"{rate / ideal:>9.1%} {rate / one:>12.2f}x {shares:>24}")


def batch_row(n: int) -> None:
    """Row 4: a Batch API job of n requests as a user runs it: the submitting run, then (the
    provider done) the collecting run; the HTTP calls' time (upload, create, download, with the
    in-process fake provider's own work on them) is shown apart from ours."""

    from reljudge.judge.batch.job import BatchJob
    from reljudge.store import LabelStore
    from reljudge.testing import Reply
    from reljudge.testing.fake_batch import FakeBatchAPI

    pairs, queries, passages = workload(n, "b-")
    with tempfile.TemporaryDirectory() as tmp, \
            FakeBatchAPI(lambda r: Reply.text("final score: 2"), max_requests=n) as server, \
            LabelStore(Path(tmp) / "s.sqlite") as store:
        cfg = JudgeConfig(model="gpt-4o-mini", base_url=server.base_url, api_key="k",
                          cache_dir=Path(tmp) / "cache", prompt="basic", batch=True)
        job = BatchJob(Labeller(cfg), store)
        http = _clock_http(job.client)
        t = time.perf_counter()
        first = asyncio.run(job.run(pairs, queries, passages))  # plan, build, upload, create
        submit, submit_http = time.perf_counter() - t, http[0]
        for bid in list(server.batches):  # the provider's work: not ours, not timed
            while server.advance(bid) not in ("completed", "expired", "failed"):
                pass
        http[0] = 0.0
        t = time.perf_counter()
        final = asyncio.run(job.run(pairs, queries, passages))  # download, parse, cache, store
        collect, collect_http = time.perf_counter() - t, http[0]
        assert first.submitted_requests == n and final.collected_answers == n
        assert final.graded == n and store.count() == n
        ours = submit - submit_http + collect - collect_http
        print(f"\n4. Batch API job of {n:,} requests ({len(server.batches)} batch files): "
              f"submitting run {submit:.2f} s (HTTP upload + create {submit_http:.2f} s), "
              f"collecting run {collect:.2f} s (HTTP download {collect_http:.2f} s); ours: "
              f"JSONL build + parse + store {ours:.2f} s (target < 10 s); all "
              f"{submit + collect:.2f} s")


def _clock_http(client) -> list[float]:
    """Time spent in the Files/Batch API calls that carry the data (a one-item list, added to
    by every upload, batch creation and download)."""
    spent = [0.0]

    def timed(fn):
        def call(*args, **kw):
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[0] += time.perf_counter() - t
        return call

    client.files.create = timed(client.files.create)
    client.files.content = timed(client.files.content)
    client.batches.create = timed(client.batches.create)
    return spent


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
            c.set(labeller.key(labeller.messages(q, d, queries, passages), 0), answer)
        c.close()
        print(json.dumps({"seconds": time.perf_counter() - t}))
        return
    report = asyncio.run(labeller.label(pairs, queries, passages))
    print(json.dumps({"seconds": time.perf_counter() - t, "labelled": report.labelled}))


if __name__ == "__main__":
    main()
