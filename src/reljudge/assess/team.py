"""Sharing a sample among a team: a share every annotator grades (for agreement), the rest split.

``reljudge assess --team alice,bob,carol --overlap 0.2``: the pairs are put in a seeded order
(the seed is the sample's name, or the pairs themselves for a pairs file), the first
``round(overlap x pairs)`` of them go to everyone, and the others are dealt to the members in
turn. Every member's command computes the same split, on any machine; for a sample the store
records the team and overlap the first time, and refuses a different one after (so the
members' shares always come from one split), and a member may then leave out ``--team`` and
``--overlap``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from reljudge.errors import ConfigError


@dataclass(frozen=True)
class Share:
    """One annotator's pairs of a shared sample: those everyone grades and their own."""

    annotator: str
    team: tuple[str, ...]
    overlap: float
    #: the shared pairs, then their own, in the sample's order
    pairs: list[tuple[str, str]]
    shared: frozenset[tuple[str, str]]


def parse_team(text: str) -> list[str]:
    """The names of ``--team a,b,c``: at least two, distinct, none empty."""
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise ConfigError(f"--team is a comma-separated list of annotator names, found {text!r}")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"--team names {dup!r} twice")
    if len(names) < 2:
        raise ConfigError("--team needs at least two annotators (one person grades everything "
                          "without it)")
    return names


def check_overlap(overlap: float) -> float:
    """The share of pairs every member grades: a number in [0, 1]."""
    if not isinstance(overlap, (int, float)) or isinstance(overlap, bool) \
            or not math.isfinite(overlap) or not 0 <= overlap <= 1:
        raise ConfigError(f"--overlap is the share of pairs every annotator grades, a number "
                          f"from 0 to 1; found {overlap!r}")
    return float(overlap)


def check_order(held: dict | None, team: Sequence[str], where: str) -> None:
    """Refuse ``team`` when the team recorded for a sample (``held``) has the same names in
    another order: the order deals the pairs, so the members' shares would not match."""
    if held is None or list(held["team"]) == list(team) \
            or sorted(held["team"]) != sorted(team):
        return
    recorded = ",".join(held["team"])
    raise ConfigError(f"--team {','.join(team)}: {where} is shared by the team {recorded} in "
                      f"that order, and the order deals the pairs (after the shared ones, the "
                      f"first to {held['team'][0]}, the next to {held['team'][1]}, and so on), "
                      f"so another order gives each member other pairs; give --team "
                      f"{recorded}, or leave --team and --overlap out")


def split(pairs: Sequence[tuple[str, str]], team: Sequence[str], overlap: float,
          seed: str) -> tuple[frozenset[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """(the pairs everyone grades, {member: the pairs only they grade}), both in the pairs'
    own order. The seeded order is SHA-256 of seed and pair, so it depends on nothing else."""
    check_overlap(overlap)
    unique = list(dict.fromkeys((q, d) for q, d in pairs))
    ranked = sorted(unique, key=lambda p: hashlib.sha256(
        f"{seed}\x1f{p[0]}\x1f{p[1]}".encode()).digest())
    n_shared = math.floor(overlap * len(ranked) + 0.5)
    shared = frozenset(ranked[:n_shared])
    owner = {p: team[k % len(team)] for k, p in enumerate(ranked[n_shared:])}
    own = {m: [p for p in unique if owner.get(p) == m] for m in team}
    return shared, own


def share_of(pairs: Sequence[tuple[str, str]], annotator: str, team: Sequence[str],
             overlap: float, seed: str) -> Share:
    """``annotator``'s share of ``pairs`` under the split of ``team`` and ``overlap``."""
    if annotator not in team:
        raise ConfigError(f"{annotator!r} is not in the team {','.join(team)}; give one of its "
                          "names as --annotator")
    shared, own = split(pairs, team, overlap, seed)
    mine = set(own[annotator]) | shared
    return Share(annotator, tuple(team), overlap,
                 [p for p in dict.fromkeys(map(tuple, pairs)) if p in mine], shared)


def pairs_seed(pairs: Sequence[tuple[str, str]]) -> str:
    """The seed of a pairs file's split: the digest of its sorted pairs (the same file, or the
    same pairs in another order, splits the same way)."""
    h = hashlib.sha256()
    for q, d in sorted(set(map(tuple, pairs))):
        h.update(f"{q}\x1f{d}\x1e".encode())
    return h.hexdigest()
