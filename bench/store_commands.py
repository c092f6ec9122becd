"""Benchmark: the commands that read labels from a store, against the same work from files.

    python bench/store.py --commands                    # SQLite and PostgreSQL
    python bench/store.py --commands --backends sqlite --llmjudge DIR

The workload is the LLMJudge data (TREC DL 2023 passages, 25 test queries): NIST's labels and
the 33 judges' labels of the same 4,423 pairs, imported into a store (34 sources, 150k
events); the runs are examples/llmjudge-dl23's eight without the documents NIST did not
judge (`judged_runs`). Each command runs as a whole process (``python -m reljudge``): its
CPU seconds (user + system; on PostgreSQL the server's share too), median of ``--repeat``.
The last row, ``(store opened)``, runs no command: it opens the store and closes it,
against importing the store's module, the fixed cost every command above pays for its
backend. Beside each, its twin from files: the same
command given the label files where it takes them (audit, calibrate: recording the
calibrated labels in the store against writing them to ``--out``), else the same
computation from the labels exported to qrels files (``labels export`` of each source) through
reljudge's public functions (bench/store_twins.py): the merge from the store's ids
(``merge_ids``), the sample drawn and written, the estimates of the same sample, the report's
comparison, estimates, conflicts and store tables.

    python bench/store.py --estimate --runs 63                       # `estimate` of a track
    python bench/store.py --estimate --runs 16,32,63 --against /tmp/old/src

``--estimate``: `reljudge estimate` of a track's worth of runs (``track_store``: --runs runs
over the LLMJudge test pairs, a stratified sample of 10 % of their top-10 pool), DCG@10
and nDCG@10, with the ranking of every pair of runs and with ``--no-ranking``; CPU seconds of
the whole process (``--format json``), median of ``--repeat``; ``--against SRC``: the same
commands with reljudge imported from SRC (another commit's checkout), taking turns.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script
from bench import common  # noqa: E402

JUDGE = "Olz-gpt4o"  # the judge of calibrate, sample and estimate


def _seconds(args: list[str], repeat: int, env: dict | None = None, server=None) -> float:
    """Median CPU seconds (user + system) of ``python ARGS`` as a whole process: on a machine
    others share, the wall clock measures them too. ``server()``: the CPU seconds a local
    database server has spent so far, its share added (PostgreSQL works in its own
    processes)."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        served = server() if server else 0.0
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if server:
            time.sleep(0.1)  # the server reaps the command's backend process
            served = server() - served
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                     + served)
        if done.returncode:
            sys.exit(f"bench/store_commands.py: {' '.join(args)} failed:\n{done.stderr}")
    return statistics.median(times)


def postmaster_seconds(data: Path) -> float:
    """CPU seconds of the PostgreSQL server whose data directory is ``data``, with those of
    the backend processes it has reaped (one a connection)."""
    pid = (data / "postmaster.pid").read_text().split()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def build(location: str, data: Path, exported: Path) -> list[Path]:
    """Import the LLMJudge labels into the store at ``location``; write each source's labels
    to ``exported`` as the store gives them back; the exported files."""
    from reljudge.store import LabelStore, import_labels

    exported.mkdir(exist_ok=True)
    with LabelStore(location) as store:
        import_labels(store, data / "human" / "test.qrels", "human", "nist")
        for f in sorted((data / "llm" / "labels").glob("*.txt")):
            import_labels(store, f, "llm", f.stem, clip=True)
        from reljudge.io.trec import write_qrels

        for source in store.sources():
            write_qrels(store.merge(f"source={source.name}").qrels,
                        exported / f"{source.name}.qrels")
    return sorted(exported.glob("*.qrels"))


def judged_runs(human: Path, folder: Path) -> list[str]:
    """examples/llmjudge-dl23's runs without the documents NIST did not judge (each run keeps
    its order): a sample drawn from the judged pairs speaks for every one of their top 10s,
    so `estimate` takes them (it refuses a run whose top k leaves the sampled pool)."""
    judged = {tuple(line.split()[::2][:2]) for line in human.read_text().splitlines()}
    folder.mkdir(exist_ok=True)
    out = []
    for run in sorted((ROOT / "examples" / "llmjudge-dl23" / "runs").glob("*.run")):
        kept = [line for line in run.read_text().splitlines(keepends=True)
                if tuple(line.split()[::2][:2]) in judged]
        (folder / run.name).write_text("".join(kept))
        out.append(str(folder / run.name))
    return out


def cases(location: str, data: Path, tmp: Path) -> list[tuple[str, list[str], list[str]]]:
    """Build the store at ``location``; (command, its arguments from the store, its twin's
    from files) of each command. ``sample``'s ``--name`` is ``{n}``: each draw needs a name of
    its own (``sample_args``)."""
    exported = build(location, data, tmp / "exported")
    human, judges = data / "human" / "test.qrels", data / "llm" / "labels"
    runs = judged_runs(human, tmp / "runs")
    cli, store = ["-m", "reljudge"], ["--store", location]
    twin = [str(ROOT / "bench" / "store_twins.py")]
    every = list(map(str, exported))
    judge, drawn = str(tmp / "exported" / f"{JUDGE}.qrels"), str(tmp / "s0.json")
    subprocess.run([sys.executable, *cli, "sample", *store, "--judge", JUDGE, "--name", "s0",
                    "--budget", "300", "--seed", "1"], check=True, capture_output=True)
    from store_twins import sample_json

    from reljudge.store import LabelStore

    with LabelStore(location) as held:  # the sample as its twins read it
        Path(drawn).write_text(sample_json(held.sample("s0")))
    return [
        ("audit (33 judges)", [*cli, "audit", *store, "--human-source", "nist"],
         [*cli, "audit", "--reference", str(human), "--judges-dir", str(judges), "--clip"]),
        ("labels stats", [*cli, "labels", "stats", *store], [*twin, "stats", *every]),
        ("labels merge", [*cli, "labels", "merge", *store, "--out", str(tmp / "m.qrels")],
         [*twin, "merge", str(tmp / "m.qrels"), *every]),
        ("sample", [*cli, "sample", *store, "--judge", JUDGE, "--name", "s{n}", "--budget",
                    "300", "--seed", "1"], [*twin, "sample", judge, str(tmp / "s.json")]),
        ("estimate", [*cli, "estimate", *store, "--sample", "s0", "-m", "DCG@10", *runs],
         [*twin, "estimate", judge, str(tmp / "exported" / "nist.qrels"), drawn, *runs]),
        ("report", [*cli, "report", str(human), *runs, *store, "--out", str(tmp / "r.html")],
         [*twin, "report", str(human), str(tmp / "r.html"), *every, "--", drawn, *runs]),
        # each records the calibrated labels once: in the store, or in the --out file
        ("calibrate", [*cli, "calibrate", *store, "--human-source", "nist", "--judge-source",
                       JUDGE, "--force"],
         [*cli, "calibrate", "--reference", str(human), "--judge", str(judges / f"{JUDGE}.txt"),
          "--out", str(tmp / "c.tsv")]),
        # no command: what every command above pays to reach the store (the driver's import,
        # a connection and the server's side of it, the schema's check) beyond importing it
        ("(store opened)", ["-c", f"from reljudge.store import LabelStore; "
                                  f"LabelStore({location!r}).close()"],
         ["-c", "import reljudge.store"]),
    ]


def timed(args: list[str], repeat: int, drawn: Iterator[int], env: dict | None = None,
          server=None) -> float:
    """``_seconds`` of one command; a sample's draws each named afresh from ``drawn``."""
    if "s{n}" not in args:
        return _seconds(args, repeat, env, server)
    return statistics.median(
        _seconds([a.replace("s{n}", f"s{next(drawn)}") for a in args], 1, env, server)
        for _ in range(repeat))


def commands(location: str, data: Path, tmp: Path, repeat: int, server=None
             ) -> list[tuple[str, float, float]]:
    """(command, CPU seconds from the store, CPU seconds of its twin from files) of each;
    ``server``: as ``_seconds`` takes it."""
    drawn = iter(range(1, 1000))
    return [(name, timed(from_store, repeat, drawn, server=server),
             timed(from_files, repeat, drawn))
            for name, from_store, from_files in cases(location, data, tmp)]


def table(results: dict[str, list[tuple[str, float, float]]], markdown: bool = False) -> str:
    """The rows printed: backend, command, seconds from the store and from files, ratio."""
    rows = [[backend, name, f"{s:.2f}", f"{f:.2f}", f"{s / f:.2f}x"]
            for backend, rows in results.items() for name, s, f in rows]
    return common.table(["backend", "command", "store s", "files s", "ratio"], rows, markdown,
                        left=2, caption="CPU seconds of whole processes (on PostgreSQL with the "
                                        "server's share), median of each command's runs")


def run(backends: list[str], data: Path, repeat: int, pg_url, pg_seconds=None,
        markdown: bool = False) -> None:
    """Each backend's rows, then the table; ``pg_seconds``: the PostgreSQL server's CPU
    seconds so far (None: a server of the user's, not counted)."""
    import compileall
    import tempfile

    import reljudge

    if not (data / "human" / "test.qrels").exists():
        sys.exit(f"bench/store.py --commands: no LLMJudge data in {data}; give --llmjudge DIR")
    # compiled once, as an installed reljudge is: without it, under PYTHONDONTWRITEBYTECODE
    # every process compiles the modules it imports again (0.1-0.2 s a side)
    compileall.compile_dir(Path(reljudge.__file__).parent, quiet=1)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            folder = Path(tmp) / backend
            folder.mkdir()
            location = str(folder / "labels.sqlite") if backend == "sqlite" else pg_url()
            results[backend] = commands(location, data, folder, repeat,
                                        None if backend == "sqlite" else pg_seconds)
            print(f"{backend}: done", file=sys.stderr)
            shutil.rmtree(folder)
    print(table(results, markdown))


# --- `estimate` of a track: many runs, one pair sample ----------------------------------------

#: the rows of ``estimate_table``: (label, measure, extra arguments)
ESTIMATE_CASES = (("DCG@10", "DCG@10", []), ("DCG@10 --no-ranking", "DCG@10", ["--no-ranking"]),
                  ("nDCG@10", "nDCG@10", []),
                  ("nDCG@10 --no-ranking", "nDCG@10", ["--no-ranking"]))


def track_store(data: Path, tmp: Path, count: int) -> tuple[str, list[str], int]:
    """A store of NIST's labels and JUDGE's; ``count`` runs made as
    examples/llmjudge-dl23/make_runs.py makes its eight (``synthetic_runs``, seed 2023), over
    the judged pairs only, so that a sample of their pool speaks for every top 10; and a
    stratified-pairs sample ``s`` of 10 % of their top-10 pool, drawn by `reljudge sample`:
    (store, run files, sampled pairs)."""
    from reljudge.io.trec import read_qrels, write_run
    from reljudge.pool import build_pool
    from reljudge.store import LabelStore, import_labels
    from reljudge.testing import synthetic_runs

    human = data / "human" / "test.qrels"
    runs = synthetic_runs(read_qrels(human), count, seed=2023, filler=0)
    paths = []
    for run in runs:
        paths.append(str(tmp / f"{run.name}.run"))
        write_run(run, paths[-1])
    location = str(tmp / "track.sqlite")
    with LabelStore(location) as store:
        import_labels(store, human, "human", "nist")
        import_labels(store, data / "llm" / "labels" / f"{JUDGE}.txt", "llm", JUDGE, clip=True)
    budget = round(0.1 * len(build_pool(runs, 10).pairs))
    subprocess.run([sys.executable, "-m", "reljudge", "sample", "--store", location, "--judge",
                    JUDGE, "--name", "s", "--budget", str(budget), "--seed", "1", *paths],
                   check=True, capture_output=True)
    return location, paths, budget


def _estimate_seconds(location: str, paths: list[str], measure: str, extra: list[str],
                      src: str | None) -> tuple[float, float] | None:
    """CPU and wall seconds of one `reljudge estimate` of the track as a whole process,
    reljudge imported from ``src`` (None: this checkout's); None where that reljudge lacks an
    option."""
    env = None if src is None else {**os.environ, "PYTHONPATH": src}
    args = ["-m", "reljudge", "estimate", "--store", location, "--sample", "s", "-m", measure,
            "--format", "json", *extra, *paths]
    if extra and extra[0] not in subprocess.run([sys.executable, "-m", "reljudge", "estimate",
                                                 "--help"], capture_output=True, text=True,
                                                env=env).stdout:
        return None
    return _cpu_wall(args, env)


def estimate_track(data: Path, counts: list[int], repeat: int, against: str | None,
                   markdown: bool = False) -> str:
    """The table: per number of runs and case, the median CPU and wall seconds of ``repeat``
    runs of `estimate` from this checkout and, with ``against`` (another checkout's
    ``src``), from that one, the two taking turns so that a busy machine slows both alike;
    and the floor, starting Python and importing what `estimate` imports."""
    import tempfile

    head = ["runs", "pairs", "sampled", "case", "this CPU s", "this wall s"]
    if against:
        head += ["against CPU s", "against wall s", "CPU ratio"]
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            location, paths, budget = track_store(data, Path(tmp), count)
            pairs = count * (count - 1) // 2
            for label, measure, extra in ESTIMATE_CASES:
                mine, theirs = [], []
                for _ in range(repeat):
                    mine.append(_estimate_seconds(location, paths, measure, extra, None))
                    if against:
                        theirs.append(_estimate_seconds(location, paths, measure, extra,
                                                        against))
                rows.append([str(count), str(pairs), str(budget), label, *_medians(mine)])
                if against:
                    rows[-1] += [*_medians(theirs), _ratio(theirs, mine)]
                print("  ".join(rows[-1]), file=sys.stderr)
    floor = [_cpu_wall(["-c", ESTIMATE_IMPORTS], None) for _ in range(repeat)]
    rows.append(["", "", "", "floor: start + imports", *_medians(floor)]
                + (["", "", ""] if against else []))
    note = (f"medians of {repeat}; load average {os.getloadavg()[0]:.1f} at the end; "
            f"`estimate --format json` of a store's pair sample")
    return common.table(head, rows, markdown, caption=note, left=0)


#: what `reljudge estimate` imports before it reads anything: the floor of its time
ESTIMATE_IMPORTS = ("import reljudge.cli, reljudge.infer.scores, reljudge.infer.ranking, "
                    "reljudge.store, reljudge.io.trec, reljudge.tables")


def _cpu_wall(args: list[str], env: dict | None) -> tuple[float, float]:
    """CPU (user + system) and wall seconds of ``python ARGS`` as a whole process."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"bench/store_commands.py: {' '.join(args)} failed:\n{done.stderr}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def _medians(times: list[tuple[float, float] | None]) -> list[str]:
    """The median CPU and wall seconds as printed, '-' where the option was missing."""
    if not times or None in times:
        return ["-", "-"]
    return [f"{statistics.median(t[k] for t in times if t is not None):.2f}" for k in (0, 1)]


def _ratio(theirs: list[tuple[float, float] | None], mine: list[tuple[float, float] | None]
           ) -> str:
    """Their median CPU seconds over mine, '' where either lacked the option."""
    if None in theirs + mine:
        return ""
    cpu = [statistics.median(t[0] for t in times if t is not None) for times in (theirs, mine)]
    return f"{cpu[0] / cpu[1]:.1f}x"

