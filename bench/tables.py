"""Run each benchmark in its documented configuration and write the Markdown table it prints
(``--markdown``) into docs/benchmarks.md and the README, between the markers

    <!-- bench: NAME -->
    ...
    <!-- /bench: NAME -->

so the text around them survives. A page's tables are the output of one run of this script:
none is edited by hand (tests/docs/test_pages.py checks that every table on docs/benchmarks.md sits
between markers under its machine and date line).

    python bench/tables.py                          # every benchmark below
    python bench/tables.py metrics metrics-track    # only these
    python bench/tables.py --quick                  # small sizes: tries the pipeline, and
                                                    # writes nothing unless --write is given

A benchmark that fails, or prints no table (no LLMJudge data for the store benchmarks), leaves
its old table in place and is named on stderr; the exit code is then 1.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import HEADING, ROOT, parser  # noqa: E402

#: name: (the script and its documented arguments, the arguments --quick adds, the pages)
BENCHES: dict[str, tuple[list[str], list[str], tuple[str, ...]]] = {
    "metrics": (["bench/metrics.py", "--tools", "reljudge,pytrec_eval", "--floor"],
                ["--queries", "500", "--docs", "100", "--repeats", "1"],
                ("docs/benchmarks.md", "README.md")),
    "metrics-track": (["bench/metrics.py", "--track", "--repeats", "7"],
                      ["--runs", "4", "--unjudged", "20", "--repeats", "1"],
                      ("docs/benchmarks.md", "README.md")),
    "startup": (["bench/startup.py"], ["--repeats", "2"], ("docs/benchmarks.md",)),
    "ppi-ndcg-time": (["bench/ppi_ndcg_time.py"],
                      ["--queries", "20", "--sample", "200", "--bootstrap", "50", "--rounds", "1"],
                      ("docs/benchmarks.md",)),
    "store-estimate": (["bench/store.py", "--estimate", "--runs", "63"],
                       ["--runs", "4", "--repeat", "1"], ("docs/benchmarks.md",)),
    "store-commands": (["bench/store.py", "--commands"], ["--repeat", "1"],
                       ("docs/benchmarks.md",)),
    "store-writers": (["bench/store.py", "--events", "100000", "--repeat", "5"],
                      ["--events", "2000", "--writer-events", "100", "--repeat", "1"],
                      ("docs/benchmarks.md",)),
    "store-million": (["bench/store.py", "--writer-events", "0", "--repeat", "3"],
                      ["--events", "20000", "--repeat", "1"], ("docs/benchmarks.md",)),
}


def block(stdout: str) -> str | None:
    """The Markdown a benchmark printed: from its heading line to the end of its table."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(HEADING)), None)
    if start is None:
        return None
    first = next((i for i in range(start, len(lines)) if lines[i].startswith("|")), None)
    if first is None:
        return None
    end = first
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    return "\n".join(lines[start:end + 1])


def markers(name: str) -> tuple[str, str]:
    """The two lines a benchmark's table stands between."""
    return f"<!-- bench: {name} -->", f"<!-- /bench: {name} -->"


def replace(text: str, name: str, table: str) -> str:
    """``text`` with what stands between ``name``'s markers replaced by ``table``."""
    begin, end = markers(name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"bench/tables.py: no markers {begin} ... {end} to write {name} into")
    return pattern.sub(lambda _: f"{begin}\n{table}\n{end}", text, count=1)


def merged(args: list[str], changes: list[str]) -> list[str]:
    """``args`` with each ``--flag value`` of ``changes`` in place of its own (else added)."""
    args = list(args)
    for flag, value in zip(changes[::2], changes[1::2], strict=True):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    return args


def run(name: str, quick: bool) -> tuple[str | None, float]:
    """(the benchmark's Markdown, or None; its seconds)."""
    script, quick_args, _ = BENCHES[name]
    argv = [sys.executable, *merged(script, quick_args if quick else []), "--markdown"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        print(f"{name}: exit {done.returncode}: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return None, took
    found = block(done.stdout)
    if found is None:
        print(f"{name}: no table in its output: {done.stderr.strip()[-300:]}", file=sys.stderr)
    return found, took


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks asked for and write their tables into the pages."""
    p = parser(__doc__, markdown=False)
    p.add_argument("names", nargs="*", metavar="NAME", help=f"from: {', '.join(BENCHES)}; "
                   f"default: every one")
    p.add_argument("--quick", action="store_true",
                   help="each benchmark at small sizes (tries the pipeline in about a minute)")
    p.add_argument("--write", action="store_true",
                   help="with --quick: write the small tables into the pages all the same")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        p.error(f"unknown benchmark {unknown[0]!r}; known: {', '.join(BENCHES)}")
    failed, tables = [], {}
    total = time.perf_counter()
    for name in args.names or list(BENCHES):
        table, took = run(name, args.quick)
        print(f"{name}: {took:.0f} s", file=sys.stderr)
        if table is None:
            failed.append(name)
        elif args.quick and not args.write:
            print(table, end="\n\n")
        else:
            tables[name] = table
    for page in sorted({page for name in tables for page in BENCHES[name][2]}):
        text = (ROOT / page).read_text()
        for name, table in tables.items():
            if page in BENCHES[name][2]:
                text = replace(text, name, table)
        (ROOT / page).write_text(text)
    print(f"all: {time.perf_counter() - total:.0f} s", file=sys.stderr)
    if failed:
        print(f"no table from: {', '.join(failed)} (their old tables were kept)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
