"""Produce the example's two retriever runs, deterministically.

- runs/bm25.run: BM25 (k1=0.9, b=0.4) over title + text, word tokens, top 10.
- runs/trigram.run: TF-IDF cosine over character trigrams of the text only (no title), top
  10: a deliberately different ranker, standing in for an embedding retriever.
Run: python make_runs.py
"""

import json
import math
import re
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
STOP = set(["a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is", "it", "my", "of", "on", "or", "the", "to", "what", "when", "which", "with", "you", "your"])


def words(text: str) -> list[str]:
    """Lower-cased word tokens without stop words."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def trigrams(text: str) -> list[str]:
    """Character trigrams of the lower-cased text."""
    t = " " + re.sub(r"\s+", " ", text.lower()) + " "
    return [t[i:i + 3] for i in range(len(t) - 2)]


def bm25(queries, docs, k1=0.9, b=0.4):
    """{qid: {docid: score}} by BM25."""
    toks = {d: words(t) for d, t in docs.items()}
    avg = sum(map(len, toks.values())) / len(toks)
    df = Counter(w for ts in toks.values() for w in set(ts))
    n = len(docs)
    out = {}
    for qid, q in queries.items():
        scores = {}
        for d, ts in toks.items():
            tf = Counter(ts)
            s = 0.0
            for w in set(words(q)):
                if tf[w]:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(ts) / avg))
            scores[d] = s
        out[qid] = scores
    return out


def trigram_cosine(queries, docs):
    """{qid: {docid: score}} by TF-IDF cosine over character trigrams."""
    grams = {d: Counter(trigrams(t)) for d, t in docs.items()}
    df = Counter(g for c in grams.values() for g in c)
    n = len(docs)

    def vec(c):
        v = {g: tf * math.log(n / df[g]) for g, tf in c.items() if df.get(g)}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {g: x / norm for g, x in v.items()}

    dv = {d: vec(c) for d, c in grams.items()}
    out = {}
    for qid, q in queries.items():
        qv = vec(Counter(trigrams(q)))
        out[qid] = {d: sum(x * v.get(g, 0.0) for g, x in qv.items()) for d, v in dv.items()}
    return out


def write_run(scores, tag: str, path: Path, depth: int = 10) -> None:
    """Top `depth` per query, score descending then docid descending (trec_eval order)."""
    lines = []
    for qid in sorted(scores):
        ranked = sorted(scores[qid].items(), key=lambda kv: (round(kv[1], 6), kv[0]),
                        reverse=True)[:depth]
        lines += [f"{qid} Q0 {d} {r} {s:.6f} {tag}\n" for r, (d, s) in enumerate(ranked, 1)]
    path.write_text("".join(lines))


def main() -> None:
    """Write both runs."""
    passages = [json.loads(x) for x in (HERE / "passages.jsonl").read_text().splitlines()]
    queries = dict(line.split("\t", 1) for line in
                   (HERE / "queries.tsv").read_text().splitlines())
    (HERE / "runs").mkdir(exist_ok=True)
    write_run(bm25(queries, {p["docid"]: p["title"] + " " + p["text"] for p in passages}),
              "bm25", HERE / "runs" / "bm25.run")
    write_run(trigram_cosine(queries, {p["docid"]: p["text"] for p in passages}), "trigram",
              HERE / "runs" / "trigram.run")


if __name__ == "__main__":
    main()
