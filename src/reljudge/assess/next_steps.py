"""The commands the grading page's last screen shows, filled in so that they run as shown.

The store is named by its absolute path (the commands are copied into another shell);
``estimate`` gets a measure the sample's design supports (nDCG@k from whole queries and from
a pair sample, by the ratio estimator for the latter; DCG@k from an active sample:
``infer.scores``) and the runs the sample was drawn from when it
records them; ``assess --adjudicate`` gets the ``--queries`` / ``--passages`` files the
store lacks texts of. What is left for the person to fill in is in capitals (NAME, RUN).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from reljudge.labels import Sample
    from reljudge.store import LabelStore

#: the cutoff of the measure ``estimate`` is shown with (capped at the pool's depth)
CUTOFF = 10


def next_steps(label_store: LabelStore, source: str, *, sample_name: str | None,
               pairs_file: str | None, judges: Sequence[str], team: bool,
               adjudicating: bool, text_flags: Mapping[str, str]) -> list[dict]:
    """The commands that take the grades of ``source`` (of a sample, or a pairs file)
    further ({"what", "command"}): agreement and adjudication for a team, then estimate (PPI)
    and calibrate for a sample, or merge. ``judges``: the LLM sources that graded the pairs;
    ``text_flags``: {"--passages": PATH, ...} for the texts the store lacks."""
    store = shlex.quote(store_name(label_store.path))
    sample = label_store.sample(sample_name) if sample_name is not None else None
    recorded = sample.params.get("judge") if sample is not None else None
    judge = shlex.quote(recorded) if recorded else (shlex.quote(sorted(judges)[0]) if judges
                                                     else "JUDGE")
    out = [{"what": "grades per annotator, their speed and agreement",
            "command": f"reljudge labels stats --store {store}"}]
    if team and not adjudicating:
        where = (f"--sample {shlex.quote(sample_name)}" if sample_name is not None
                 else f"--pairs {shlex.quote(str(Path(str(pairs_file)).absolute()))}")
        texts = "".join(f" {flag} {shlex.quote(path)}" for flag, path in text_flags.items())
        out.append({"what": "settle the pairs where annotators disagree",
                    "command": f"reljudge assess --store {store} {where} "
                               f"--annotator NAME --adjudicate{texts}"})
    if adjudicating:
        out.append({"what": "final labels, an adjudicated grade deciding where there is one",
                    "command": f"reljudge labels merge --store {store} --policy "
                               "adjudicated-first --out final.qrels"})
    if sample is not None:
        out.append(_estimate(label_store, sample, store, judge))
    out.append({"what": "correct the judge from these grades (a calibrated source)",
                "command": f"reljudge calibrate --store {store} --human-source "
                           f"{shlex.quote(source)} --judge-source {judge}"})
    if not adjudicating:
        out.append({"what": "final labels: human grades where there are any, else the "
                            "judge's",
                    "command": f"reljudge labels merge --store {store} --out final.qrels"})
    return out


def store_name(path: Path | str) -> str:
    """A store as a command names it: a SQLite file by its absolute path, a URL as it is."""
    return str(Path(path).absolute()) if isinstance(path, Path) else path


def estimate_measure(sample: Sample) -> str:
    """A measure ``estimate`` can give from ``sample``: nDCG@10 from whole queries; from a
    pair sample nDCG@k (the ratio estimator), DCG@k from an active one (a linear measure),
    k at most the depth of the pool it was drawn from."""
    if sample.unit == "query":
        return f"nDCG@{CUTOFF}"
    depth = (sample.params.get("pool") or {}).get("depth")
    name = "DCG" if sample.design == "active" else "nDCG"
    return f"{name}@{min(CUTOFF, depth) if isinstance(depth, int) else CUTOFF}"


def _estimate(label_store: LabelStore, sample: Sample, store: str, judge: str) -> dict:
    from reljudge.infer.cells import human_truth

    paths = [Path(p) for p in (sample.params.get("pool") or {}).get("runs") or []]
    runs = (" ".join(shlex.quote(str(p.absolute())) for p in paths)
            if paths and all(p.is_file() for p in paths) else "RUN [RUN ...]")
    pairs = set(sample.pairs())
    graded = len(human_truth(label_store, pairs))
    when = ("" if graded == len(pairs) else
            f" (once every pair of the sample has a human grade: {graded} of {len(pairs)} now)")
    return {"what": "run scores under human labels from this sample and the judge "
                    f"(prediction-powered intervals){when}",
            "command": f"reljudge estimate --store {store} --sample "
                       f"{shlex.quote(sample.name)} --judge {judge} {runs} "
                       f"-m {estimate_measure(sample)}"}
