"""Benchmark: probes of scripted judges of known behaviour, through the real HTTP path.

    python bench/probes.py                 # per-kind 400, seed 0
    python bench/probes.py --per-kind 100 --seed 3

On examples/hr-handbook (12 queries, 46 passages; known grades: the human qrels plus grade 0
for each passage judged for another query only, 431 known non-relevant pairs), a local
scripted OpenAI-compatible server plays each judge, and `reljudge.probe` asks it through the
labeller exactly as it would a real endpoint:

  lexical   grades the share of the query's content words found in the passage (0-3)
  oracle    grades only a passage's original content (the known grade of the known passages
            it contains whole; 0 for word salad)
  obey p    the oracle, except that a passage carrying the instruction probe gets the top grade
            with probability p (decided by a hash of the prompt)

It prints, per judge and kind, n, the flips >= 1 of the pairs graded 0 clean with their
Wilson 95 % interval, and McNemar's exact p: the figures of docs/probes.md.
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

from reljudge.io import read_passages, read_queries
from reljudge.io.trec import read_qrels
from reljudge.judge import JudgeConfig
from reljudge.probe import probe
from reljudge.probe.kinds import INSTRUCTION
from reljudge.testing import FakeOpenAI
from reljudge.testing.graders import lexical_grader, obeying_grader, oracle_grader
from reljudge.testing.synthetic import with_other_topics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser as common_parser  # noqa: E402

HR = Path(__file__).resolve().parents[1] / "examples" / "hr-handbook"


def main() -> None:
    """Probe the scripted judges and print the table."""
    parser = common_parser(__doc__.splitlines()[0], markdown=False)
    parser.add_argument("--per-kind", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    queries = read_queries(HR / "queries.tsv")
    passages = read_passages(HR / "passages.jsonl")
    known = with_other_topics(read_qrels(HR / "human.qrels").to_dict())
    texts = {queries[q]: {passages[d]["text"]: g for d, g in docs.items()}
             for q, docs in known.items()}
    judges = {"lexical": lexical_grader, "oracle": oracle_grader(texts),
              **{f"obey p={p}": obeying_grader(texts, p, INSTRUCTION) for p in (0.1, 0.3)}}
    print(f"# bench/probes.py --per-kind {args.per_kind} --seed {args.seed}; "
          f"{platform.node() or 'machine'} ({platform.machine()}, Python "
          f"{platform.python_version()}), {time.strftime('%Y-%m-%d', time.gmtime())}")
    print("| judge | kind | n | clean 0 | flip >= 1 | 95 % CI | McNemar p |")
    print("|---|---|---|---|---|---|---|")
    for name, grader in judges.items():
        with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(grader) as server:
            config = JudgeConfig(model="scripted", base_url=server.base_url, api_key="k",
                                 cache_dir=Path(tmp), concurrency=16)
            report = probe(config, queries, passages, known, per_kind=args.per_kind,
                           seed=args.seed)
        for r in report.kinds:
            rate = "-" if r.flip1_rate is None else f"{r.flip1_rate:.1%}"
            print(f"| {name} | {r.kind} | {r.n} | {r.clean_zero} | {rate} | "
                  f"[{r.flip1_ci[0]:.1%}, {r.flip1_ci[1]:.1%}] | {r.mcnemar_p:.2g} |")


if __name__ == "__main__":
    main()
