"""The probe report as tables (headers and rows): one row per template x kind, one per run."""

from __future__ import annotations

from collections.abc import Sequence

from reljudge.probe.analysis import KindResult, RunGain


def _rate(rate: float | None, ci: tuple[float, float]) -> str:
    if rate is None:
        return "-"
    return f"{rate:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]"


def kinds_table(results: Sequence[KindResult]) -> tuple[list[str], list[list]]:
    """Per template and kind: n, clean grade 0, flips >= 1 and >= 2 (Wilson 95 %), changed,
    mean shift, McNemar p."""
    headers = ["judge", "kind", "n", "clean 0", "flip >=1 [95% CI]", "flip >=2 [95% CI]",
               "changed", "mean shift", "McNemar p"]
    rows = [[r.template, r.kind + (" (control)" if r.control else ""), r.n, r.clean_zero,
             _rate(r.flip1_rate, r.flip1_ci), _rate(r.flip2_rate, r.flip2_ci),
             _rate(r.changed_rate, r.changed_ci),
             "-" if r.mean_shift is None else round(r.mean_shift, 3), r.mcnemar_p]
            for r in results]
    return headers, rows


def gains_table(gains: Sequence[RunGain]) -> tuple[list[str], list[list]]:
    """Per template and run: the measure now and under the exploit, the gain, the ranks."""
    headers = ["judge", "run", "measure", "now", "exploited", "gain", "best other then",
               "rank now", "rank exploited", "replaced"]
    rows = [[g.template, g.run, g.measure, g.now, g.exploited, g.gain,
             "-" if g.others_exploited is None else g.others_exploited, g.rank_now,
             g.rank_exploited, g.replaced] for g in gains]
    return headers, rows
