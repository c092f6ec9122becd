"""Benchmark: calibrated judges and judge panels on 33 real TREC DL 2023 (LLMJudge) judges.

    python bench/calibration.py                      # ../shared/data/llmjudge, 3 repeats
    python bench/calibration.py --data DIR --repeats 5 --sizes 100 300 1000

Everything fitted is validated on held-out queries: 5-fold cross-fitting BY QUERY, each fold's
model fitted on a random sample of N human pairs drawn from the other folds' queries only, and
the statistics (the audit's own: quadratic kappa, ordinal alpha, MAE, Cohen's kappa) computed
over the out-of-fold labels of all 4,423 pairs. Repeats redraw the folds and the sample; the
tables show means over repeats. dMAE = calibrated minus raw MAE, with a 95% interval from
resampling queries (1,000 resamples) of the per-query error sums pooled over repeats: a judge
is "worse by more than noise" when the whole interval is above 0. Panels choose their best N
judges inside each fold by training quadratic kappa (never on held-out labels); dawid-skene
is the EM fit over all pairs anchored by the sample, ds-no-em the fit on the sample alone
(naive Bayes with the same smoothing); "ds thresholds" and "mean thresholds" cut the
Dawid-Skene expected grade, or the chosen judges' mean grade, at three thresholds fitted on
the training sample to maximise quadratic kappa (reljudge.infer.decision); "raw best" is the
single judge with the best training quadratic kappa, chosen inside each fold (an honest
version of "the best raw judge"); majority (ties to the lower grade) and mean-rounded (half up)
over the same judges are the baselines. "selected" picks, inside each outer training fold, one
of the ds/mean thresholds panels of the best 3, best 5 or all judges by an inner 3-fold CV by
query on the training sample (quadratic kappa), so even that choice never sees held-out labels.
The last table puts the panel-minus-best-raw differences of the largest sample in a 95%
interval from resampling the 25 queries: with so few queries, that is the noise that matters.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from reljudge.grades import N_GRADES as K
from reljudge.infer.calibrate import decide, one_hot
from reljudge.infer.heldout import (
    align,
    calibrate_fit_predict,
    cross_fit,
    mean_fit_predict,
    panel_fit_predict,
    selected_fit_predict,
    thresholded,
)
from reljudge.io import read_judge
from reljudge.stats import agreement as ag

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser  # noqa: E402

STATS = ("kappa", "kappa_quadratic", "alpha_ordinal", "mae")
BEST_RAW = {"kappa": 0.2863, "kappa_quadratic": 0.5069, "alpha_ordinal": 0.5020}


def stats(human: np.ndarray, grades: np.ndarray) -> dict[str, float]:
    """The audit's statistics of grades against the human labels."""
    c = ag.confusion(human, grades)[None]
    s = ag.all_statistics(c)
    return {k: float(s[k][0]) for k in STATS}


def per_query_abs_error(qcode: np.ndarray, nq: int, human: np.ndarray, grades: np.ndarray
                        ) -> np.ndarray:
    """Sum of |grade - human| per query."""
    return np.bincount(qcode, weights=np.abs(grades - human), minlength=nq)


def per_query_confusion(qcode: np.ndarray, nq: int, human: np.ndarray, grades: np.ndarray
                        ) -> np.ndarray:
    """(queries, K, K) confusion matrix of each query."""
    idx = qcode * K * K + human * K + grades
    return np.bincount(idx, minlength=nq * K * K).reshape(nq, K, K).astype(float)


def bootstrap_stat_delta(qconf_a: np.ndarray, qconf_b: np.ndarray, n: int = 1000,
                         seed: int = 0) -> dict[str, tuple[float, float]]:
    """95% intervals of (statistic a - statistic b) over resampled queries (pooled confusions)."""
    picks = np.random.default_rng(seed).integers(0, len(qconf_a), size=(n, len(qconf_a)))
    sa, sb = ag.all_statistics(qconf_a[picks].sum(axis=1)), ag.all_statistics(
        qconf_b[picks].sum(axis=1))
    return {k: (float(np.percentile(sa[k] - sb[k], 2.5)),
                float(np.percentile(sa[k] - sb[k], 97.5))) for k in BEST_RAW}


def bootstrap_delta(err_a: np.ndarray, err_b: np.ndarray, counts: np.ndarray, n: int = 1000,
                    seed: int = 0) -> tuple[float, float]:
    """95% interval of (sum a - sum b) / pairs over resampled queries."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(counts), size=(n, len(counts)))
    d = (err_a - err_b)[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))


def chosen_judges(data, train: np.ndarray, best: int | None) -> np.ndarray:
    """The best judges by quadratic kappa on the training pairs (all when best is None)."""
    cols = np.arange(data.labels.shape[1])
    if best is None:
        return cols
    scores = [ag.cohen_kappa(ag.confusion(data.human[train], data.labels[train, c])[None],
                             "quadratic")[0] for c in cols]
    return cols[np.argsort(-np.nan_to_num(np.array(scores), nan=-np.inf), kind="stable")[:best]]


def baseline_fit_predict(data, best: int | None, rule: str):
    """Majority (ties to the lower grade) or mean-rounded of the chosen judges, as one-hot."""
    def run(train: np.ndarray) -> np.ndarray:
        labels = data.labels[:, chosen_judges(data, train, best)]
        votes = one_hot(labels.reshape(-1)).reshape(*labels.shape, K).sum(axis=1)
        if rule == "majority":
            grade = votes.argmax(axis=1)
        else:
            mean = (votes @ np.arange(K)) / np.maximum(votes.sum(axis=1), 1)
            grade = np.floor(mean + 0.5).astype(np.int64)
        return one_hot(grade)
    return run


def main() -> None:
    """Load, cross-fit every judge and panel at each sample size, print the tables."""
    p = parser(__doc__, markdown=False)
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" /
                                         "data" / "llmjudge"))
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--strength", type=float, default=None,
                   help="Dirichlet pseudo-counts (default: 10 calibration, 4 panel)")
    p.add_argument("--decision", default="median", choices=("mode", "median", "expected"))
    args = p.parse_args()
    data_dir = Path(args.data)
    kw = {} if args.strength is None else {"strength": args.strength}
    t0 = time.perf_counter()
    human, _ = read_judge(data_dir / "human" / "test.qrels")
    judges = {f.stem: read_judge(f, clip=True)[0]
              for f in sorted((data_dir / "llm" / "labels").glob("*.txt"))}
    data = align(human, judges)
    h = data.human
    _, qcode = np.unique(data.qids.astype(str), return_inverse=True)
    nq = qcode.max() + 1
    counts = np.bincount(qcode, minlength=nq).astype(float)
    raw = {name: stats(h, data.labels[:, r]) for r, name in enumerate(data.judges)}
    raw_err = {name: per_query_abs_error(qcode, nq, h, data.labels[:, r])
               for r, name in enumerate(data.judges)}
    print(f"{len(judges)} judges, {len(h)} pairs, {nq} queries; {args.folds}-fold by query, "
          f"{args.repeats} repeats, Dirichlet strength "
          f"{'10 / 4 (defaults)' if args.strength is None else args.strength}, decision "
          f"{args.decision}")
    best_raw = max(raw, key=lambda n: raw[n]["kappa_quadratic"])
    print(f"best single raw judge by quadratic kappa: {best_raw} " +
          " ".join(f"{k}={v:.4f}" for k, v in raw[best_raw].items()))

    def heldout(fit_predict):
        """Mean stats over repeats, and per-query abs error summed over repeats."""
        rows, err, qconf = [], np.zeros(nq), np.zeros((nq, K, K))
        for rep in range(args.repeats):
            probs, _ = cross_fit(data, fit_predict, folds=args.folds, seed=rep, pair_count=size)
            g = decide(probs, args.decision)
            rows.append(stats(h, g))
            err += per_query_abs_error(qcode, nq, h, g)
            qconf += per_query_confusion(qcode, nq, h, g)
        return ({k: float(np.mean([r[k] for r in rows])) for k in STATS} |
                {f"{k}_sd": float(np.std([r[k] for r in rows])) for k in STATS} |
                {"qconf": qconf}, err / args.repeats)

    panel_rows = []
    for size in args.sizes:
        t = time.perf_counter()
        print(f"\n== human sample of {size} pairs per training fold: calibrated judges "
              f"(held-out) vs raw ==")
        print(f"{'judge':32s} {'qk raw':>7s} {'qk cal':>7s} {'a_ord raw':>9s} {'a_ord cal':>9s}"
              f" {'MAE raw':>8s} {'MAE cal':>8s} {'dMAE':>7s}  {'95% interval':>17s}")
        worse = 0
        for r, name in enumerate(data.judges):
            cal, err = heldout(calibrate_fit_predict(data, r, **kw))
            lo, hi = bootstrap_delta(err, raw_err[name], counts)
            worse += lo > 0
            print(f"{name:32s} {raw[name]['kappa_quadratic']:7.4f} "
                  f"{cal['kappa_quadratic']:7.4f} {raw[name]['alpha_ordinal']:9.4f} "
                  f"{cal['alpha_ordinal']:9.4f} {raw[name]['mae']:8.4f} {cal['mae']:8.4f} "
                  f"{cal['mae'] - raw[name]['mae']:+7.4f}  [{lo:+.4f}, {hi:+.4f}]")
        print(f"judges whose held-out MAE got worse by more than noise: {worse} of "
              f"{len(data.judges)}")
        for best in (3, 5, None):
            label = f"best {best}" if best else f"all {len(judges)}"
            for method, fp in (("dawid-skene", panel_fit_predict(data, best=best, **kw)),
                               ("ds-no-em", panel_fit_predict(data, best=best, em=False, **kw)),
                               ("ds thresholds", thresholded(
                                   data, panel_fit_predict(data, best=best, **kw))),
                               ("mean thresholds", thresholded(
                                   data, mean_fit_predict(data, best=best))),
                               ("raw best", baseline_fit_predict(data, 1, "majority")),
                               ("majority", baseline_fit_predict(data, best, "majority")),
                               ("mean-rounded", baseline_fit_predict(data, best, "mean"))):
                s, _ = heldout(fp)
                panel_rows.append((size, label, method, s))
        # the panel and its size chosen per fold by inner 3-fold CV on the training sample
        candidates = {}
        for best in (3, 5, None):
            name = f"best {best}" if best else f"all {len(judges)}"
            candidates[f"ds thresholds, {name}"] = thresholded(
                data, panel_fit_predict(data, best=best, **kw))
            candidates[f"mean thresholds, {name}"] = thresholded(
                data, mean_fit_predict(data, best=best))
        record: list = []
        s, _ = heldout(selected_fit_predict(data, candidates, record=record))
        panel_rows.append((size, "inner CV", "selected", s))
        picks = Counter(sel.chosen for sel in record)
        print("selected by inner CV (per fold and repeat): " +
              ", ".join(f"{n} x{c}" for n, c in picks.most_common()))
        print(f"({time.perf_counter() - t:.1f} s)")
    print("\n== panels on held-out queries (mean over repeats); best single raw judge: kappa "
          f"{BEST_RAW['kappa']}, ordinal alpha {BEST_RAW['alpha_ordinal']}, quadratic kappa "
          f"{BEST_RAW['kappa_quadratic']} ==")
    print("(each cell: mean ± standard deviation over repeats)")
    print(f"{'sample':>6s} {'judges':>7s} {'method':15s} {'kappa':>15s} {'kappa_quad':>15s} "
          f"{'alpha_ord':>15s} {'mae':>15s}  beats best raw on")
    for size, label, method, s in panel_rows:
        beats = [k for k in ("kappa", "kappa_quadratic", "alpha_ordinal") if s[k] > BEST_RAW[k]]
        print(f"{size:6d} {label:>7s} {method:15s} " +
              " ".join(f"{s[k]:7.4f} ± {s[k + '_sd']:.4f}" for k in STATS) +
              f"  {', '.join(beats) or '-'}")
    top = max(args.sizes)
    print(f"\n== {top} pairs: panel minus the best raw judge of each statistic (picked with "
          "hindsight on all labels), 95% interval over queries resampled 1,000 times (panel "
          "confusions pooled over repeats) ==")
    best_of = {k: max(range(len(data.judges)), key=lambda r, k=k: raw[data.judges[r]][k])
               for k in BEST_RAW}
    print("best raw judge per statistic: " + ", ".join(f"{k} {data.judges[r]}"
                                                       for k, r in best_of.items()))
    raw_qconf = {k: per_query_confusion(qcode, nq, h, data.labels[:, r]) * args.repeats
                 for k, r in best_of.items()}
    print(f"{'judges':>8s} {'method':15s} " + " ".join(f"{k:>22s}" for k in BEST_RAW))
    for size, label, method, s in panel_rows:
        if size != top:
            continue
        cells = []
        for k in BEST_RAW:
            lo, hi = bootstrap_stat_delta(s["qconf"], raw_qconf[k])[k]
            cells.append(f"[{lo:+.4f}, {hi:+.4f}]")
        print(f"{label:>8s} {method:15s} " + " ".join(f"{c:>22s}" for c in cells))
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
