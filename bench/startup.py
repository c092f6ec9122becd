"""Benchmark: how long `reljudge --version`, `--help` and `eval --help` take as whole processes.

    python bench/startup.py --before 771f952 [--every-command]

Each row is the median of --repeats runs of `python -m reljudge ARGS` (wall clock, process
start to exit), beside the same for a source tree of an older commit (--before REF, taken
with `git archive`) and `python -c pass`, the floor no Python command goes below. On a
shared machine wall clocks wander; `-X importtime`'s total (the sum of every import's own
time, median of the same runs) moves less and says where the time goes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from reljudge.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script
from bench.common import parser, table  # noqa: E402

CASES = (("--version",), ("--help",), ("eval", "--help"))


def source_of(ref: str, into: Path) -> Path:
    """The src folder of commit ``ref``, written under ``into``."""
    blob = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_once(argv: list[str], src: Path | None, importtime: bool) -> tuple[float, str]:
    """(wall seconds, stderr) of one run of ``python ARGV`` with ``src`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(src) if src else "")
    flags = ["-X", "importtime"] if importtime else []
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *flags, *argv], env=env, capture_output=True,
                          text=True, check=True)
    return time.perf_counter() - start, done.stderr


def import_total(stderr: str) -> float:
    """Seconds spent importing: the sum of every import's own time in -X importtime's lines."""
    return sum(int(line.split("|")[0].split(":")[1]) for line in stderr.splitlines()
               if line.startswith("import time:") and "self [us]" not in line) / 1e6


def medians(argv: list[str], src: Path | None, repeats: int) -> tuple[float, float]:
    """Median wall time of ``repeats`` plain runs and median import total of as many more."""
    walls = [run_once(argv, src, False)[0] for _ in range(repeats)]
    imports = [import_total(run_once(argv, src, True)[1]) for _ in range(repeats)]
    return statistics.median(walls), statistics.median(imports)


def cells(times: list[tuple[float, float]]) -> list[str]:
    """``wall / imports`` for each tree."""
    return [f"{wall:.3f} / {imports:.3f}" for wall, imports in times]


def main() -> None:
    """Print the startup table."""
    p = parser(__doc__)
    p.add_argument("--before", metavar="REF", help="a commit to time beside this tree")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--every-command", action="store_true",
                   help="add a row for each command's --help")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT / "src"}
        if args.before:
            trees = {f"before ({args.before})": source_of(args.before, Path(tmp)), **trees}
        floor = medians(["-c", "pass"], None, args.repeats)
        rows = [["python -c pass", *cells([floor] * len(trees))]]
        cases = CASES + tuple((name, "--help") for name in COMMANDS if args.every_command
                              and (name, "--help") not in CASES)
        for case in cases:
            times = [medians(["-m", "reljudge", *case], src, args.repeats)
                     for src in trees.values()]
            rows.append(["reljudge " + " ".join(case), *cells(times)])
    print(table(["command", *trees], rows, args.markdown,
                caption=f"median of {args.repeats} runs, seconds: wall clock / -X importtime "
                        f"total"))


if __name__ == "__main__":
    main()
