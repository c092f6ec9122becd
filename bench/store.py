"""Benchmark: the label store on SQLite and on PostgreSQL, side by side in one run.

    python bench/store.py                       # 1,000,000 events, both backends
    python bench/store.py --events 100000 --writer-events 1000
    python bench/store.py --pg postgresql://me@db:5432/bench   # a server of your own
    python bench/store.py --backends sqlite     # SQLite only
    python bench/store.py --commands            # the commands that read a store vs files
    python bench/store.py --estimate --runs 63  # `estimate` of a track (63 runs, one sample)
    python bench/store.py --estimate --repeat 5 --against OLD/src --markdown  # two commits
    python bench/store.py --writer-events 0 --against /tmp/old/src --markdown
    python bench/store.py --writer-events 0 --annotators 2   # two people grade each pair

Rows, for each backend:
- import: two qrels files (human and LLM labels of the same pairs) through ``labels import``'s
  code path, one writer, one transaction per file; ``--annotators N``: the human half of the
  events is N people's, each grading the same pairs (the others giving the first's grade but
  for a random one a sixth of the time), a file each: ``labels stats`` reports their agreement;
- merge + export: ``merge("human-first")`` over every event and the merged qrels written out;
- labels stats, labels merge --out: the commands as a user runs them (``python -m reljudge``,
  a whole process each, its modules compiled beforehand as an installed package's are),
  median of ``--repeat``; ``--against SRC``: the same commands with reljudge imported from
  SRC (another commit's src folder) beside them, taking turns;
- 1 writer and 4 writers: separate processes appending LLM label events, all started at once,
  each committing ``--writer-batch`` events a transaction: 64 by default, the batches a labeller
  commits its answers in (every 64 answers, or every second when fewer came); 1 is a person
  grading in ``assess``. The median of ``--repeat`` runs, the backends taking turns (run,
  each backend's 1 writer then 4 writers, again), so that a busy machine slows both alike.

Without ``--pg`` a PostgreSQL server is started for the run (Debian's binaries, as the tests
do; the ``test`` and ``postgres`` extras) with fsync on and ``synchronous_commit=off``: the
durability of a SQLite store, which runs in WAL mode with ``synchronous=NORMAL`` (a commit is
never torn; the last ones may be lost on power failure, in both).

Each row gives wall seconds and CPU seconds (this process's or the command's, with the
PostgreSQL server's share when the run started the server): on a machine others share, the
CPU seconds are the steadier measure. ``--markdown`` prints the table as Markdown.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from reljudge.io.trec import write_qrels
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore, import_labels

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script
from bench.common import parser, table  # noqa: E402


def _write(location: str, writer: int, n: int, batch: int, start, done) -> None:
    """One writer process: ``n`` LLM label events, ``batch`` a transaction."""
    store = LabelStore(location)
    meta = {"model": "bench", "writer": writer}
    events = [LabelEvent(f"w{writer}q{i % 50}", f"w{writer}d{i}", i % 4, "llm", "bench-judge",
                         raw=str(i % 4), tokens_in=300, tokens_out=1, cost=0.0001, latency=0.5,
                         meta=meta) for i in range(n)]
    start.wait()
    for i in range(0, n, batch):
        store.add_events(events[i:i + batch])
    store.close()
    done.put(time.perf_counter())


def writers(location: str, count: int, n: int, batch: int) -> float:
    """Seconds from the common start until the last of ``count`` writers has committed."""
    ctx = mp.get_context("spawn")
    start, done = ctx.Barrier(count + 1), ctx.Queue()
    procs = [ctx.Process(target=_write, args=(location, w, n, batch, start, done))
             for w in range(count)]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    ends = [done.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode:
            sys.exit(f"bench/store.py: a writer process failed (exit {p.exitcode})")
    return max(ends) - t0


def run(location: str, files: list[tuple[Path, str, str]], out: Path, server_cpu
        ) -> dict[str, tuple]:
    """Import, merge and export on one backend; {step: (events, wall s, CPU s)}
    (``files``: (path, kind, source name) of each; ``server_cpu()``: the database server's CPU
    seconds so far, 0 when not ours)."""
    rows: dict[str, tuple] = {}
    store = LabelStore(location)
    own = server_cpu
    if "://" in location:  # the server process serving this connection: its CPU too
        pid = store.conn.execute("SELECT pg_backend_pid()").fetchone()[0]

        def server_cpu() -> float:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return own() + sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK")
    t, cpu = time.perf_counter(), time.process_time() + server_cpu()
    for f, kind, name in files:
        import_labels(store, f, kind, name)
    n = store.count()
    rows[f"import ({len(files)} files, 1 writer)"] = (n, time.perf_counter() - t,
                                                      time.process_time() + server_cpu() - cpu)
    t, cpu = time.perf_counter(), time.process_time() + server_cpu()
    merged = store.merge("human-first")
    write_qrels(merged.qrels, out)
    rows["merge human-first + export"] = (n, time.perf_counter() - t,
                                          time.process_time() + server_cpu() - cpu)
    store.close()
    return rows


#: the commands timed as whole processes: (step, arguments after ``--store LOCATION``)
COMMANDS = [("labels stats", ["labels", "stats"]),
            ("labels merge --out", ["labels", "merge", "--out", "{tmp}/merged.qrels"])]


def command_rows(location: str, n: int, tmp: Path, repeat: int, against: str | None,
                 server_cpu) -> dict[str, tuple]:
    """{step: (events, median wall s, median CPU s)} of each of COMMANDS on the store at
    ``location``, with reljudge from SRC beside (``against``), taking turns."""
    import compileall

    import reljudge

    sources = {"": None} | ({" (against)": against} if against else {})
    for src in (Path(reljudge.__file__).parent, against):  # as an installed one is
        if src:
            compileall.compile_dir(src, quiet=1)
    times: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeat):
        for step, args in COMMANDS:
            command = [a.replace("{tmp}", str(tmp)) for a in args[:2]] + \
                ["--store", location] + [a.replace("{tmp}", str(tmp)) for a in args[2:]]
            for tag, src in sources.items():
                env = dict(os.environ, PYTHONPATH=src) if src else None
                times.setdefault(step + tag, []).append(_process(command, env, server_cpu))
    return {step: (n, statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
            for step, got in times.items()}


def _process(args: list[str], env: dict | None, server_cpu) -> tuple[float, float]:
    """(wall s, CPU s) of ``python -m reljudge ARGS`` as a whole process, the server's share
    of the CPU added."""
    before, served = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu()
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "reljudge", *args], capture_output=True,
                          env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if server_cpu() != served:
        time.sleep(0.1)  # the server reaps the command's backend process
    if done.returncode:
        sys.exit(f"bench/store.py: {' '.join(args)} failed:\n{done.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                  + server_cpu() - served)


def writer_rows(locations: dict[str, str], writer_events: int, batch: int, repeat: int
                ) -> dict[str, dict[str, tuple]]:
    """The writers rows of each backend, {backend: {step: (events, median wall s, None)}}:
    the backends take turns, ``repeat`` times."""
    seconds: dict[str, dict[str, list[float]]] = {b: {} for b in locations}
    for _ in range(repeat):
        for backend, location in locations.items():
            for count in (1, 4):
                step = f"{count} writer{'s' * (count > 1)}, {batch} events/commit"
                seconds[backend].setdefault(step, []).append(
                    writers(location, count, writer_events, batch))
    return {backend: {step: (int(step.split()[0]) * writer_events, float(np.median(times)),
                             None) for step, times in steps.items()}
            for backend, steps in seconds.items()}


def fresh_pg_database(url: str) -> str:
    """A new database on the server at ``url`` for this run; its URL."""
    import psycopg

    name = f"reljudge_bench_{int(time.time())}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"


def commands(args: argparse.Namespace, backends: list[str]) -> None:
    """``--commands``: bench/store_commands.py on each backend (a server started for it when
    PostgreSQL is asked for without ``--pg``)."""
    import store_commands

    server = None

    def pg_url() -> str:
        nonlocal server
        url = args.pg
        if url is None:
            sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
            from pg import PostgresServer

            server = PostgresServer(durable=True)
            url = server.url
        return fresh_pg_database(url)

    def pg_seconds() -> float:  # the server's share of a command's CPU seconds
        return 0.0 if server is None else store_commands.postmaster_seconds(server.data)

    try:
        store_commands.run(backends, args.llmjudge, args.repeat, pg_url, pg_seconds,
                           args.markdown)
    finally:
        if server is not None:
            server.stop()


def estimate(args: argparse.Namespace) -> None:
    """``--estimate``: bench/store_commands.py's `estimate` of a track, printed as a table."""
    import compileall

    import store_commands

    import reljudge

    if not (args.llmjudge / "human" / "test.qrels").exists():
        sys.exit(f"bench/store.py --estimate: no LLMJudge data in {args.llmjudge}; give "
                 f"--llmjudge DIR")
    for src in (Path(reljudge.__file__).parent, args.against):  # as an installed one is
        if src:
            compileall.compile_dir(src, quiet=1)
    counts = [int(n) for n in args.runs.split(",")]
    print(store_commands.estimate_track(args.llmjudge, counts, args.repeat, args.against,
                                        args.markdown))


def _label_files(tmp: Path, half: int, queries: int, annotators: int,
                 rng: np.random.Generator) -> list[tuple[Path, str, str]]:
    """(path, kind, source name) of the qrels files to import: ``half`` LLM labels, and
    ``half`` human labels by ``annotators`` people grading the same pairs (the others give the
    first's grade, but for a random one a sixth of the time: they agree on most)."""
    pairs = half // annotators
    first = rng.integers(0, 4, pairs)
    made = []
    for k in range(annotators):
        grades = first if k == 0 else np.where(rng.random(pairs) < 1 / 6,
                                               rng.integers(0, 4, pairs), first)
        made.append((tmp / f"human{k or ''}.qrels", grades, "human",
                     "human" if annotators == 1 else f"annotator-{k + 1}"))
    made.append((tmp / "llm.qrels", rng.integers(0, 4, half), "llm", "llm"))
    for f, grades, _, _ in made:
        with open(f, "w") as out:
            out.writelines(f"q{i % queries} 0 doc{i} {g}\n" for i, g in enumerate(grades.tolist()))
    return [(f, kind, name) for f, _, kind, name in made]


def main() -> None:
    """Generate the files, run each backend, print one table."""
    p = parser(__doc__)
    p.add_argument("--events", type=int, default=1_000_000, help="events imported (default 1M)")
    p.add_argument("--queries", type=int, default=5_000)
    p.add_argument("--annotators", type=int, default=1,
                   help="people whose human labels these are, each grading the same pairs "
                        "(default 1)")
    p.add_argument("--writer-events", type=int, default=2_500,
                   help="events each concurrent writer appends (default 2,500; 0: no writers "
                        "rows)")
    p.add_argument("--writer-batch", type=int, default=64,
                   help="events a writer commits at once (default 64, as a labeller does)")
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--pg", metavar="URL", help="a PostgreSQL server to use (a new database is "
                   "created on it); default: start one for the run")
    p.add_argument("--commands", action="store_true",
                   help="instead: the commands that read a store against the same work from "
                        "files, on the LLMJudge data (bench/store_commands.py)")
    p.add_argument("--estimate", action="store_true",
                   help="instead: `reljudge estimate` of a track's worth of runs "
                        "(bench/store_commands.py)")
    p.add_argument("--runs", default="63",
                   help="with --estimate: the numbers of runs, comma-separated (default 63)")
    p.add_argument("--against", metavar="SRC",
                   help="also time the commands with the reljudge in SRC (another commit's "
                        "src folder), the two taking turns")
    p.add_argument("--llmjudge", type=Path, default=ROOT.parent / "shared" / "data" / "llmjudge",
                   help="with --commands: the LLMJudge data folder")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs of each writers row, medians shown (with --commands: runs per "
                        "command)")
    args = p.parse_args()
    backends = args.backends.split(",")
    if args.commands:
        return commands(args, backends)
    if args.estimate:
        return estimate(args)
    half = args.events // 2
    rng = np.random.default_rng(1)
    server = None
    results: dict[str, dict[str, tuple]] = {}
    locations: dict[str, str] = {}

    def server_cpu() -> float:
        return 0.0 if server is None else store_commands.postmaster_seconds(server.data)

    import store_commands

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = _label_files(tmp, half, args.queries, args.annotators, rng)
        try:
            for backend in backends:
                if backend == "sqlite":
                    location = str(tmp / "labels.sqlite")
                elif backend == "postgresql":
                    url = args.pg
                    if url is None:
                        sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
                        from pg import PostgresServer

                        server = PostgresServer(durable=True)
                        url = server.url
                    location = fresh_pg_database(url)
                else:
                    sys.exit(f"bench/store.py: unknown backend {backend!r}")
                results[backend] = run(location, files, tmp / f"{backend}.qrels", server_cpu)
                locations[backend] = location
                print(f"{backend}: imported", file=sys.stderr)
                results[backend].update(command_rows(location, args.events, tmp, args.repeat,
                                                     args.against, server_cpu))
            if args.writer_events:
                for backend, rows in writer_rows(locations, args.writer_events,
                                                 args.writer_batch, args.repeat).items():
                    results[backend].update(rows)
            if len(results) == 2:
                same = (tmp / "sqlite.qrels").read_bytes() == (tmp / "postgresql.qrels").read_bytes()
                print(f"exported qrels byte-identical across backends: {same}")
        finally:
            if server is not None:
                server.stop()
    rows = []
    for backend, steps in results.items():
        for step, (n, seconds, cpu) in steps.items():
            base = results.get("sqlite", {}).get(step)
            rows.append([backend, step, f"{n:,}", f"{seconds:.2f}",
                         "" if cpu is None else f"{cpu:.2f}", f"{n / seconds:,.0f}",
                         f"{seconds / base[1]:.2f}x" if base and backend != "sqlite" else ""])
    print(table(["backend", "step", "events", "wall s", "CPU s", "events/s", "time vs sqlite"],
                rows, args.markdown, left=2, caption=f"median of {args.repeat} runs of each "
                                                     f"row, the backends taking turns"
                + (f"; the human labels by {args.annotators} annotators, each grading the "
                   f"same pairs" if args.annotators > 1 else "")))

if __name__ == "__main__":
    main()
