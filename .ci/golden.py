"""Capture every CLI output of the example job, for a before/after byte-identical check.

    python .ci/golden.py OUT_DIR          # run from a checkout; uses the reljudge importable here
    diff -r BEFORE_DIR AFTER_DIR          # a refactor must show nothing but named fixes

Runs the commands the README's tour documented (hr-handbook and llmjudge-dl23 examples,
each with its JSON twin where the command has one) in a scratch copy of ``examples/`` against
the scripted OpenAI-compatible server, and writes for each: stdout, stderr and exit code; then
every file the commands wrote (SQLite stores as a dump of every table, the answer cache as its
sorted keys). Times, durations and temporary paths are masked, nothing else.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = """
eval examples/hr-handbook/human.qrels examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run -m nDCG@10 -m 'P(rel=2)@5' -m Judged@10
eval examples/hr-handbook/human.qrels examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run -m nDCG@10 -q --format json
eval examples/hr-handbook/human.qrels examples/hr-handbook/runs/bm25.run --judged -m nDCG@10 -m 'nDCG(judged_only=True)@10' -m Bpref -m RBP
eval examples/hr-handbook/human.qrels examples/hr-handbook/runs/bm25.run -m all_trec --format trec
pool examples/hr-handbook/runs/*.run --depth 10
labels import examples/hr-handbook/human.qrels --store labels.sqlite --source-kind human --source-name hr-team
label --queries examples/hr-handbook/queries.tsv --passages examples/hr-handbook/passages.jsonl examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run --depth 10 --store labels.sqlite --model gpt-4o-mini --dry-run
label --queries examples/hr-handbook/queries.tsv --passages examples/hr-handbook/passages.jsonl examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run --depth 10 --store labels.sqlite --model gpt-4o-mini --max-cost 0.50
label --queries examples/hr-handbook/queries.tsv --passages examples/hr-handbook/passages.jsonl examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run --depth 10 --store labels.sqlite --model gpt-4o-mini --max-cost 0.50 --qrels-out judged.qrels
label --queries examples/hr-handbook/queries.tsv --passages examples/hr-handbook/passages.jsonl examples/hr-handbook/runs/bm25.run --depth 5 --store labels.sqlite --model gpt-4o-mini --format json
labels stats --store labels.sqlite
labels stats --store labels.sqlite --format json
labels sources --store labels.sqlite
labels conflicts --store labels.sqlite --limit 10
labels conflicts --store labels.sqlite --limit 5 --with-text
labels merge --store labels.sqlite --out final.qrels --provenance final.provenance.jsonl
labels merge --store labels.sqlite --policy source=hr-team --out hr.qrels
labels export --store labels.sqlite --kind llm --out llm.qrels
compare final.qrels examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run -m nDCG@10 -m RR
compare final.qrels examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run -m nDCG@10 --format json
sample --store labels.sqlite --judge 'gpt-4o-mini/umbrela@1#f8e67d3b' --name s1 --budget 20 --seed 3 examples/hr-handbook/runs/bm25.run examples/hr-handbook/runs/trigram.run
estimate --store labels.sqlite --sample s1 --judge 'gpt-4o-mini/umbrela@1#f8e67d3b' -m DCG@10 examples/hr-handbook/runs/bm25.run
audit --reference examples/llmjudge-dl23/human.qrels --judges-dir examples/llmjudge-dl23/judges --clip examples/llmjudge-dl23/runs/*.run
audit --reference examples/llmjudge-dl23/human.qrels --judges-dir examples/llmjudge-dl23/judges --clip examples/llmjudge-dl23/runs/*.run --format json
audit --reference examples/llmjudge-dl23/human.qrels --judges-dir examples/llmjudge-dl23/judges --clip --calibrate --panel --pair-count 300 --no-ensembles
audit --reference examples/llmjudge-dl23/human.qrels --judge examples/llmjudge-dl23/judges/Olz-gpt4o.txt --confusion --bootstrap 1000
audit --reference examples/llmjudge-dl23/human.qrels --judges-dir examples/llmjudge-dl23/judges --clip --panel-best 3 --panel-method mean --decision thresholds --pair-count 300 --no-ensembles
run examples/hr-handbook/pipeline.toml
run examples/hr-handbook/pipeline.toml
report --pipeline examples/hr-handbook/pipeline.toml --out report.html
labels import examples/llmjudge-dl23/human.qrels --store dl23.sqlite --source-kind human --source-name nist
labels import examples/llmjudge-dl23/judges/TREMA-4prompts.txt --store dl23.sqlite --source-kind llm --source-name trema --clip
calibrate --store dl23.sqlite --human-source nist --judge-source trema --pair-count 300
labels merge --store dl23.sqlite --policy source=calibrated:trema --out trema-calibrated.qrels
calibrate --reference examples/llmjudge-dl23/human.qrels --judge examples/llmjudge-dl23/judges/TREMA-4prompts.txt --clip --pair-count 300
"""

MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"),
     "<TIME>"),
    (re.compile(r"\b\d+(\.\d+)? ?(s|ms|seconds)\b"), "<DUR>"),
    (re.compile(r"\d+(\.\d+)?/s\b"), "<RATE>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<PORT>"),
    (re.compile(r"\b1[6-9]\d{8}(\.\d+)?\b"), "<EPOCH>"),
    (re.compile(r"\b\d+\.\d{7,}(e-\d+)?\b"), "<FLOAT>"),  # latencies, elapsed seconds
]
PORT = 18765  # a fixed port: the server's address is part of the answer cache's key


def mask(text: str, scratch: Path) -> str:
    text = text.replace(str(scratch), "<SCRATCH>")
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


def dump_sqlite(path: Path, scratch: Path) -> str:
    conn = sqlite3.connect(path)
    out = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
        cur = conn.execute(f"SELECT * FROM {table}")
        out.append(f"## {table} {[c[0] for c in cur.description]}")
        # rows in arrival order differ with concurrency: sorted, without their row id
        rows = [row[1:] if cur.description[0][0] == "id" else row for row in cur.fetchall()]
        out += sorted(mask(repr(row), scratch) for row in rows)
    schema = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    return "\n".join(out + [str(s) for s in schema]) + "\n"


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    shutil.rmtree(out, ignore_errors=True)
    (out / "commands").mkdir(parents=True)
    import socketserver

    from reljudge.testing import FakeOpenAI, hash_grader

    bind = socketserver.TCPServer.__init__

    def fixed_port(self, address, *args, **kw):  # type: ignore[no-untyped-def]
        self.allow_reuse_address = True
        bind(self, (address[0], address[1] or PORT), *args, **kw)

    socketserver.TCPServer.__init__ = fixed_port  # type: ignore[method-assign]

    grader = partial(hash_grader, preamble="Intent: find the policy.\nM: 2\nT: 3\n", delay=0.0)
    scratch = Path(tempfile.mkdtemp(prefix="golden-"))
    shutil.copytree(ROOT / "examples", scratch / "examples", ignore=shutil.ignore_patterns("out"))
    with FakeOpenAI(grader) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
               "OPENAI_MODEL": "fake-judge", "RELJUDGE_CACHE_DIR": str(scratch / "cache"),
               "COLUMNS": "120", "NO_COLOR": "1"}
        for n, line in enumerate(c for c in COMMANDS.strip().splitlines() if c.strip()):
            args: list[str] = []
            for w in shlex.split(line):
                args += sorted(os.path.relpath(p, scratch) for p in glob.glob(str(scratch / w))) \
                    if "*" in w else [w]
            proc = subprocess.run([sys.executable, "-m", "reljudge", *args], cwd=scratch,
                                  env=env, capture_output=True, text=True, timeout=600)
            (out / "commands" / f"{n:02d}.txt").write_text(
                f"$ reljudge {line}\nexit {proc.returncode}\n--- stdout\n"
                f"{mask(proc.stdout, scratch)}--- stderr\n{mask(proc.stderr, scratch)}")
    for path in sorted(scratch.rglob("*")):
        rel = path.relative_to(scratch)
        if not path.is_file() or rel.parts[0] == "examples" and "out" not in rel.parts:
            continue
        if rel.parts[0] == "cache":
            continue
        dest = out / "files" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".sqlite":
            dest.with_suffix(".sqlite.txt").write_text(dump_sqlite(path, scratch))
        elif path.suffix in (".sqlite-wal", ".sqlite-shm") or path.name.endswith(".bak"):
            continue
        else:
            try:
                dest.write_text(mask(path.read_text(), scratch))
            except UnicodeDecodeError:
                shutil.copy(path, dest)
    import diskcache

    keys: list[str] = []
    for folder in sorted({p.parent for p in (scratch / "cache").rglob("cache.db")}):
        with diskcache.Cache(str(folder)) as cache:
            keys += [f"{folder.relative_to(scratch)} {k!r}" for k in cache.iterkeys()]
    (out / "cache-keys.txt").write_text(mask("\n".join(sorted(keys)) + "\n", scratch))
    shutil.rmtree(scratch)
    print(f"captured into {out}")


if __name__ == "__main__":
    main()
