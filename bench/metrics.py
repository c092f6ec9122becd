"""Benchmark: reljudge's metrics against pytrec_eval, ir_measures and ranx, side by side.

Workloads (fixed seed): Q queries x D retrieved documents, ~J graded judgments per query (half
of them among the retrieved), with scores shaped like real runs:

    untied   random floats rounded to 6 decimals (almost no ties)
    heavy    a few dozen distinct scores (32 levels: quantised, BM25 on short queries)
    coarse   21 distinct scores (a 0-1 score to two decimals in steps of 0.05, a 0-20 rating)
    equal    every document of a query has the same score (one tie per query)
    binary   two scores (a yes/no classifier)

Measures: nDCG@10, nDCG@100, P@10, R@100, RR, AP, aggregates and per-query values. Two paths:
from in-memory dicts (the dict-of-dicts every tool accepts; for reljudge the conversion is
inside the time) and from TREC files on disk (each tool's own reader). Every (workload, tool,
path) runs in a fresh subprocess so that peak memory is its own.

    python bench/metrics.py                                   # 10,000 x 1,000, every workload
    python bench/metrics.py --queries 500 --repeats 1         # quick look
    python bench/metrics.py --workloads heavy,equal --tools reljudge,pytrec_eval
    python bench/metrics.py --floor       # and the dict path's floor (see _floor)
    python bench/metrics.py --paths dicts --tools reljudge,pytrec_eval --floor   # dicts only
    python bench/metrics.py --set all_trec --tools reljudge,pytrec_eval   # every measure
    python bench/metrics.py --track       # 63 runs x 53 queries x top 100, whole processes;
                                          # and as distributed: 477 queries, 53 judged
Needs the bench extra: pip install -e '.[bench]'
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser, table  # noqa: E402

MEASURES = ["nDCG@10", "nDCG@100", "P@10", "R@100", "RR", "AP"]
PTE = {"ndcg_cut.10,100", "P.10", "recall.100", "recip_rank", "map"}
#: --set all_trec: every per-query measure of trec_eval's -m all_trec (in trec_eval's words),
#: against pytrec_eval's supported_measures (trec_eval 9's all; a few of 10's are not in it)
def _use_set(name: str) -> None:
    """Switch the measures every tool computes (six, or all_trec: reljudge and pytrec_eval)."""
    global MEASURES, PTE
    if name == "all_trec":
        import pytrec_eval

        from reljudge.metrics.trec_names import plain_measures

        MEASURES, PTE = plain_measures(["all_trec"]), set(pytrec_eval.supported_measures)


WORKLOADS = ("untied", "heavy", "coarse", "equal", "binary")


def _scores(rng: np.random.Generator, nd: int, workload: str) -> np.ndarray:
    """One query's run scores, shaped by the workload."""
    if workload == "untied":
        return rng.random(nd).round(6)
    if workload == "heavy":
        return rng.integers(0, 32, nd) / 4.0
    if workload == "coarse":
        return rng.integers(0, 21, nd) / 20.0
    if workload == "equal":
        return np.full(nd, round(float(rng.random()), 6))
    if workload == "binary":
        return rng.integers(0, 2, nd).astype(np.float64)
    raise ValueError(f"unknown workload {workload!r}; known: {', '.join(WORKLOADS)}")


def make_data(nq: int, nd: int, nj: int, seed: int, workload: str = "untied"):
    """Deterministic qrels and run dicts."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(nq):
        qid = f"q{q}"
        docs = [f"D{q}_{i}" for i in rng.permutation(nd).tolist()]  # ties: docid order matters
        scores = _scores(rng, nd, workload)
        run[qid] = dict(zip(docs, scores.tolist(), strict=False))
        judged = rng.choice(nd * 2, size=nj, replace=False)  # half outside the run
        grades = rng.choice(4, size=nj, p=[0.5, 0.25, 0.15, 0.10])
        qrels[qid] = {f"D{q}_{j}": int(g) for j, g in zip(judged.tolist(), grades.tolist(), strict=False)}
    return qrels, run


def write_files(qrels, run, folder: Path) -> tuple[Path, Path]:
    """TREC files of the workload."""
    qp, rp = folder / "bench.qrels", folder / "bench.run"
    with open(qp, "w") as f:
        for q, docs in qrels.items():
            f.writelines(f"{q} 0 {d} {g}\n" for d, g in docs.items())
    with open(rp, "w") as f:
        for q, docs in run.items():
            ranked = sorted(docs.items(), key=lambda kv: -kv[1])
            f.writelines(f"{q} Q0 {d} {i} {s} bench\n" for i, (d, s) in enumerate(ranked, 1))
    return qp, rp


# --- a track's worth of runs: many small files, whole processes ------------------------------

#: score styles of real runs, by how much they tie: a neural model's long floats, BM25 to four
#: decimals, a quantised or rounded score, and 1/rank (no tie at all)
TRACK_STYLES = ("float", "bm25", "rounded", "rank")

#: the peer of ``reljudge eval qrels RUN...``: what a pytrec_eval user writes
PYTREC_SCRIPT = """\
import sys
import pytrec_eval

with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
evaluator = pytrec_eval.RelevanceEvaluator(
    qrels, {"ndcg_cut.10", "P.10", "recall.100", "map", "recip_rank"})
for path in sys.argv[2:]:
    with open(path) as f:
        per_query = evaluator.evaluate(pytrec_eval.parse_run(f))
    keys = next(iter(per_query.values())).keys()
    print(path, *(f"{sum(v[k] for v in per_query.values()) / len(per_query):.4f}"
                  for k in keys))
"""


def make_track(folder: Path, runs: int, queries: int, depth: int, seed: int,
               unjudged: int = 0) -> list[Path]:
    """Qrels and ``runs`` run files of a track (fixed seed): ~200 judgments a query drawn
    from a pool of 400 documents, each run its top ``depth`` of the pool (judged documents
    three times as likely), scores in the styles of ``TRACK_STYLES`` in turn. With
    ``unjudged``, the runs also hold that many queries the qrels lack, spread among the
    judged ones, as a track's runs are distributed (every test query; a few judged), with
    MS MARCO v2 passage ids and float32 scores printed as doubles. Returns [qrels, run, ...]."""
    rng = np.random.default_rng(seed)
    total = queries + unjudged
    qids = [str(1_000_000 + 3571 * q) for q in range(total)]
    judged_q = set(rng.choice(total, queries, replace=False).tolist()) if unjudged else None
    styles = TRACK_STYLES + ("float32",) if unjudged else TRACK_STYLES
    pool, judged = 400, 200

    def doc(q: int, d: int) -> str:
        if not unjudged:
            return str(7_000_000 + 13 * d)
        offset = 100_000_000 + (q * 400_009 + d * 7_919) % 900_000_000
        return f"msmarco_passage_{(q * 7 + d) % 70:02d}_{offset}"

    lines = []
    for q, qid in enumerate(qids):
        if judged_q is not None and q not in judged_q:
            continue
        grades = rng.choice(4, judged, p=[0.5, 0.25, 0.15, 0.10])
        lines += [f"{qid} 0 {doc(q, d)} {g}\n" for d, g in enumerate(grades.tolist())]
    paths = [folder / "track.qrels"]
    paths[0].write_text("".join(lines))
    weight = np.where(np.arange(pool) < judged, 3.0, 1.0)
    for r in range(runs):
        style = styles[r % len(styles)]
        lines = []
        for q, qid in enumerate(qids):
            docs = rng.choice(pool, depth, replace=False, p=weight / weight.sum())
            score = np.sort(rng.gamma(2.0, 3.0, depth))[::-1] + 5.0
            text = {"float": [f"{s:.7f}" for s in score], "bm25": [f"{s:.4f}" for s in score],
                    "rounded": [f"{s:.1f}" for s in score],
                    "rank": [repr(1 / i) for i in range(1, depth + 1)],
                    # a neural model's float32 scores, some equal (ties), printed as doubles
                    "float32": [repr(float(s)) for s in
                                (score / 20).round(3).astype(np.float32).tolist()]}[style]
            lines += [f"{qid} Q0 {doc(q, d)} {i} {s} r{r}-{style}\n"
                      for i, (d, s) in enumerate(zip(docs.tolist(), text, strict=True), 1)]
        paths.append(folder / f"r{r}.run")
        paths[-1].write_text("".join(lines))
    return paths


#: the floor of a whole process on a track: start Python, import numpy, and make one pass over
#: each run file's bytes (read them, find every field's start and end and every line's end)
FLOOR_SCRIPT = """\
import sys
import numpy as np

for path in sys.argv[2:]:
    with open(path, "rb") as f:
        raw = np.frombuffer(f.read(), dtype=np.uint8)
    space = np.ones(len(raw) + 2, dtype=bool)
    np.less_equal(raw, 0x20, out=space[1:-1])
    edges = np.flatnonzero(space[1:] != space[:-1])
    lines = np.flatnonzero(raw == 0x0A)
"""


def _process(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MB) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"failed: {' '.join(argv[:4])} ...")
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024)


def _track_rows(paths: list[str], folder: Path, repeats: int
                ) -> dict[str, list[tuple[float, float, float]]]:
    """Each command's (wall, CPU, peak MB) per repeat, the commands taking turns."""
    (folder / "pytrec_script.py").write_text(PYTREC_SCRIPT)
    (folder / "floor.py").write_text(FLOOR_SCRIPT)
    commands = {"reljudge": [sys.executable, "-m", "reljudge", "eval", *paths],
                "pytrec_eval": [sys.executable, str(folder / "pytrec_script.py"), *paths],
                "floor": [sys.executable, str(folder / "floor.py"), *paths]}
    out: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, argv in commands.items():
            out[name].append(_process(argv))
    return out


def track(args) -> None:
    """``reljudge eval qrels RUN...`` against the pytrec_eval script on a track's worth of
    runs, as whole processes (start, imports, reading, evaluating, printing), alternating,
    beside the floor (``FLOOR_SCRIPT``): runs of judged queries only, and runs as a track
    distributes them (every test query, few of them judged). reljudge's modules are
    compiled first, as an installed package's are (under PYTHONDONTWRITEBYTECODE a module
    changed since its last compile is compiled again by every process: 5-10 ms a module)."""
    import compileall

    import reljudge

    compileall.compile_dir(Path(reljudge.__file__).parent, quiet=1)
    shapes = [("judged only", args.track_queries, 0, args.depth),
              ("as distributed", args.track_queries, args.unjudged, args.distributed_depth)]
    load = os.getloadavg()
    rows: list[list[str]] = []
    notes = []
    for label, judged, unjudged, depth in shapes:
        with tempfile.TemporaryDirectory() as tmp:
            paths = [str(p) for p in make_track(Path(tmp), args.runs, judged, depth, args.seed,
                                                unjudged)]
            times = _track_rows(paths, Path(tmp), args.repeats)
            lines = sum(Path(p).read_bytes().count(b"\n") for p in paths[1:])
        notes.append(f"{label}: {judged + unjudged} queries ({judged} judged) x top {depth}, "
                     f"{lines:,} run lines")
        script = [statistics.median(r[i] for r in times["pytrec_eval"]) for i in (0, 1)]
        for name, command in (("reljudge", "reljudge eval"), ("pytrec_eval", "pytrec_eval script"),
                              ("floor", "floor")):
            wall, cpu = (statistics.median(r[i] for r in times[name]) for i in (0, 1))
            ratio = (f"{script[0] / wall:.2f}x / {script[1] / cpu:.2f}x" if name == "reljudge"
                     else "")
            rows.append([label, command, f"{wall:.2f}", f"{cpu:.2f}", ratio,
                         f"{max(r[2] for r in times[name]):.0f}"])
    print(f"a track: {args.runs} runs, 5 measures; whole processes, {args.repeats} alternating "
          f"repeats, median; {os.cpu_count()} cores; load average {load[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    header = ["workload", "command", "wall s", "CPU s", "script/ours (wall / CPU)", "peak MB"]
    print(table(header, rows, args.markdown, left=2, caption=(
        f"{args.runs} runs, 5 measures, whole processes, median of {args.repeats} alternating; "
        + "; ".join(notes))))
    print("script/ours: the script's median over reljudge's; the floor: start Python, import "
          "numpy, one pass over each run file's bytes (fields and line ends found)")


# --- one tool, one path: runs inside a subprocess --------------------------------------------

def _reljudge(qrels, run, files):
    from reljudge.io.trec import read_qrels, read_run
    from reljudge.metrics import evaluate

    if files:
        qrels, run = read_qrels(qrels), read_run(run)
    ev = evaluate(qrels, run, MEASURES)
    return ev.mean(), ev.per_query()


def _pytrec(qrels, run, files):
    import pytrec_eval

    if files:
        with open(qrels) as f:
            qrels = pytrec_eval.parse_qrel(f)
        with open(run) as f:
            run = pytrec_eval.parse_run(f)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, PTE).evaluate(run)
    keys = next(iter(per_query.values())).keys()
    return {k: statistics.fmean(v[k] for v in per_query.values()) for k in keys}, per_query


def _ir_measures(qrels, run, files):
    import ir_measures

    if files:
        qrels = ir_measures.read_trec_qrels(str(qrels))
        run = ir_measures.read_trec_run(str(run))
    ms = [ir_measures.parse_measure(m) for m in MEASURES]
    evaluator = ir_measures.evaluator(ms, qrels)
    per_query = list(evaluator.iter_calc(run))
    return evaluator.calc_aggregate(run), per_query


def _ranx(qrels, run, files):
    from ranx import Qrels, Run, evaluate

    if files:
        q, r = Qrels.from_file(str(qrels), kind="trec"), Run.from_file(str(run), kind="trec")
    else:
        q, r = Qrels(qrels), Run(run)
    metrics = ["ndcg@10", "ndcg@100", "precision@10", "recall@100", "mrr", "map"]
    agg = evaluate(q, r, metrics, make_comparable=True, return_mean=True)
    return agg, r.scores


TOOLS = {"reljudge": _reljudge, "pytrec_eval": _pytrec, "ir_measures": _ir_measures,
         "ranx": _ranx}


def _floor(qrels, run, tied: bool, repeats: int) -> dict[str, float]:
    """Median CPU time of each pass over the Python objects that any reader of the dicts must make
    when it validates its input and uses numpy, not compiled code, for the rest:
    the type checks, reading the scores, looking up the judged documents, and (tied runs
    only) one pass over the docids' text to break ties in byte order. Nothing is ranked."""
    from itertools import chain, repeat
    from operator import countOf

    qids = sorted(run)
    runs, judged = [run[q] for q in qids], [qrels.get(q, {}) for q in qids]
    n, total = sum(map(len, runs)), sum(map(len, judged))
    steps = {
        "id and score type checks": lambda: (  # counted as reljudge's check counts them
            countOf(map(type, chain.from_iterable(runs)), str),
            countOf(map(type, chain.from_iterable(map(dict.values, runs))), float)),
        "scores read": lambda: np.fromiter(chain.from_iterable(map(dict.values, runs)),
                                           np.float64, n),
        "judged looked up": lambda: np.fromiter(
            chain.from_iterable(map(d.get, j, repeat(np.nan))
                                for d, j in zip(runs, judged, strict=True)), np.float64, total),
    }
    if tied:
        steps["docid text (join, encode)"] = lambda: "\0".join(
            chain.from_iterable(runs)).encode()
    out = {}
    for name, step in steps.items():
        times = []
        for _ in range(repeats):
            t = time.process_time()
            step()
            times.append(time.process_time() - t)
        out[name] = statistics.median(times)
    return out


def _child(args) -> None:
    """Run one (tool, path) several times; print JSON with times and peak memory."""
    if args.tool == "floor":
        qrels, run = make_data(args.queries, args.docs, args.judged, args.seed, args.workload)
        print(json.dumps(_floor(qrels, run, args.workload != "untied", args.repeats)))
        return
    fn = TOOLS[args.tool]
    out: dict = {}
    if args.tool == "ranx":  # numba compiles on first use: time that on a tiny input first
        t = time.perf_counter()
        fn({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 0.5}}, False)
        out["compile"] = time.perf_counter() - t
    if args.path == "dicts":
        qrels, run = make_data(args.queries, args.docs, args.judged, args.seed, args.workload)
    else:
        qrels, run = Path(args.qrels_file), Path(args.run_file)
    times, cpu, first = [], [], None
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        agg, _per_query = fn(qrels, run, args.path == "files")
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        first = first or agg
    out.update(times=times, cpu=cpu, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               aggregate={str(k): float(v) for k, v in first.items()})
    print(json.dumps(out))


def _spawn(tool: str, path: str, workload: str, args, files: tuple[Path, Path]) -> dict:
    cmd = [sys.executable, __file__, "--child", "--tool", tool, "--path", path,
           "--workload", workload, "--set", args.set,
           "--queries", str(args.queries), "--docs", str(args.docs), "--judged",
           str(args.judged), "--seed", str(args.seed), "--repeats", str(args.repeats),
           "--qrels-file", str(files[0]), "--run-file", str(files[1])]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _first_result(files: tuple[Path, Path], repeats: int) -> float:
    """Median wall time of fresh `reljudge eval` processes (start, imports, files, evaluation,
    printing the table)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "reljudge", "eval", str(files[0]), str(files[1]),
                        *sum((["-m", m] for m in MEASURES), [])], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _rows(workload: str, tools: list[str], paths: list[str], results: dict,
          floor: dict | None) -> list[list[str]]:
    """One workload's rows, a path each: each tool's median wall and CPU seconds (its wall and
    CPU times over reljudge's), the peak memories, the dict path's floor in CPU seconds, notes."""
    rows = []
    nan = [float("nan")]
    for path in paths:
        mine = results.get(("reljudge", path), {})
        our_wall = statistics.median(mine.get("times", nan))
        ours = statistics.median(mine.get("cpu", nan))
        row, peaks, notes = [workload, path], [], []
        for t in tools:
            r = results[(t, path)]
            if "error" in r:
                row.append("-")
                peaks.append("-")
                notes.append(f"{t}: error: {r['error']}")
                continue
            wall, cpu = statistics.median(r["times"]), statistics.median(r["cpu"])
            row.append(f"{wall:.2f} / {cpu:.2f}"
                       + (f" ({wall / our_wall:.1f}x / {cpu / ours:.1f}x)"
                          if t != "reljudge" else ""))
            peaks.append(f"{r['peak_mb']:.0f}")
            if "compile" in r:
                notes.append(f"{t}: numba compile {r['compile']:.1f} s (not in median)")
        below = (f"{sum(floor.values()):.2f}" if floor and "error" not in floor
                 and path == "dicts" else "")
        rows.append([*row, " / ".join(peaks), below, "; ".join(notes)])
    return rows


def _header(tools: list[str]) -> list[str]:
    """The columns of ``_rows``."""
    return ["workload", "path", *(f"{t} wall / CPU s" for t in tools), "peak MB",
            "floor CPU s", "notes"]


def _print_floor(floor: dict, pytrec: dict, ours: dict) -> None:
    """The dict path's floor, step by step, beside reljudge's time and the CPU time that
    1.5x pytrec_eval's allows."""
    if "error" in floor:
        print(f"floor: error: {floor['error']}")
        return
    steps = ", ".join(f"{k} {v:.2f} s" for k, v in floor.items())
    line = (f"dict-path floor (CPU), before any ranking: {steps}; "
            f"total {sum(floor.values()):.2f} s")
    if "times" in ours:
        line += (f"; reljudge {statistics.median(ours['times']):.2f} s "
                 f"(CPU {statistics.median(ours['cpu']):.2f} s)")
    if "times" in pytrec:
        line += (f"; 1.5x pytrec_eval allows {statistics.median(pytrec['cpu']) / 1.5:.2f} s "
                 "CPU")
    print(line)


def main() -> None:
    """Parse flags; as parent, run every tool on both paths of each workload; print tables."""
    p = parser(__doc__, argparse.RawTextHelpFormatter)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--docs", type=int, default=1_000)
    p.add_argument("--judged", type=int, default=100)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, from: "
                   + ", ".join(TOOLS))
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated, from: "
                   + ", ".join(WORKLOADS))
    p.add_argument("--paths", default="dicts,files",
                   help="comma-separated, from: dicts, files (default both)")
    p.add_argument("--floor", action="store_true",
                   help="also time the passes over Python objects that any validating,\n"
                        "numpy-only reader of the dicts must make (the dict path's floor)")
    p.add_argument("--fresh", action="store_true",
                   help="also time fresh `reljudge eval` processes on the files")
    p.add_argument("--set", choices=("six", "all_trec"), default="six",
                   help="six measures (default), or all_trec: every per-query measure of\n"
                        "trec_eval's -m all_trec, against pytrec_eval's supported_measures\n"
                        "(reljudge and pytrec_eval only)")
    p.add_argument("--track", action="store_true",
                   help="instead of the table: a track's worth of small runs (--runs, of\n"
                        "--track-queries x --depth; then as distributed, --unjudged more\n"
                        "queries x --distributed-depth), `reljudge eval` against a\n"
                        "pytrec_eval script and the floor, whole processes")
    p.add_argument("--runs", type=int, default=63)
    p.add_argument("--track-queries", type=int, default=53)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--unjudged", type=int, default=424,
                   help="--track's runs as distributed: queries the qrels lack, besides\n"
                        "--track-queries (TREC DL 2021's passage task: 477 test queries,\n"
                        "53 judged)")
    p.add_argument("--distributed-depth", type=int, default=20,
                   help="documents a query in the runs as distributed (63 x 477 x 20:\n"
                        "601k lines, as that track's 63 runs)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tool", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--workload", default="untied", help=argparse.SUPPRESS)
    p.add_argument("--qrels-file", help=argparse.SUPPRESS)
    p.add_argument("--run-file", help=argparse.SUPPRESS)
    args = p.parse_args()
    _use_set(args.set)
    if args.child:
        _child(args)
        return
    if args.track:
        track(args)
        return
    tools = args.tools.split(",")
    workloads = args.workloads.split(",")
    paths = args.paths.split(",")
    for name in paths:
        if name not in ("dicts", "files"):
            p.error(f"unknown path {name!r}; known: dicts, files")
    for name in tools:
        if name not in TOOLS:
            p.error(f"unknown tool {name!r}; known: {', '.join(TOOLS)}")
    for name in workloads:
        if name not in WORKLOADS:
            p.error(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    print(f"{args.queries:,} queries x {args.docs:,} docs, ~{args.judged} judgments per query, "
          f"seed {args.seed}; {args.repeats} repeats, median; {os.cpu_count()} cores")
    every: list[list[str]] = []
    for workload in workloads:
        with tempfile.TemporaryDirectory() as tmp:
            qrels, run = make_data(args.queries, args.docs, args.judged, args.seed, workload)
            files = write_files(qrels, run, Path(tmp))
            del qrels, run
            results = {(t, path): _spawn(t, path, workload, args, files)
                       for path in paths for t in tools}
            fresh = (_first_result(files, args.repeats)
                     if args.fresh and "reljudge" in tools else None)
            floor = (_spawn("floor", "dicts", workload, args, files) if args.floor else None)
        rows = _rows(workload, tools, paths, results, floor)
        every += rows
        if not args.markdown:
            print()
            print(table(_header(tools), rows, False, left=2))
        ref = results.get(("reljudge", "dicts"), {}).get("aggregate", {})
        if ref:
            print("reljudge aggregates: " + ", ".join(f"{k}={v:.4f}" for k, v in ref.items()))
        if floor is not None:
            _print_floor(floor, results.get(("pytrec_eval", "dicts"), {}),
                         results.get(("reljudge", "dicts"), {}))
        if fresh is not None and ("reljudge", "files") in results:
            steady = statistics.median(results[("reljudge", "files")].get("times", [float("nan")]))
            print(f"fresh process (`reljudge eval` on the files, imports included, median of "
                  f"{args.repeats}): {fresh:.2f} s; steady-state files path: {steady:.2f} s; "
                  f"difference {fresh - steady:+.2f} s")
    if args.markdown:
        print(table(_header(tools), every, True, left=2, caption=(
            f"{args.queries:,} queries x {args.docs:,} documents, ~{args.judged} judged a "
            f"query, {len(MEASURES)} measures; each tool in its own process, median of "
            f"{args.repeats} (in brackets: its wall and CPU time over reljudge's); peak MB in the tools' "
            f"order; floor: the passes over the dicts that any reader checking them must "
            f"make, before any ranking")))


if __name__ == "__main__":
    main()
