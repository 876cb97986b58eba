"""Tier badges of a board kind (docs/api.md, "Tiers"): the configuration, its check, and which
tier an entry is in.

A game's tiers are kept per board kind in `Game.tiers` (`{"all": {"by": ..., "tiers": [...]}}`),
so they travel with the game's catalog to every read at no cost; a frozen season keeps the ones in
force when it froze (`Season.frozen_tiers`). Tiers are listed best first; every tier but the last
has a cutoff, the last catches everyone else. An entry is in the first tier whose cutoff it meets:
- `score`: its score is at least the cutoff (on a lower-is-better game: at most the cutoff);
- `rank`: its rank is at most the cutoff;
- `percent`: its rank is at most ceil(cutoff / 100 x total), total the board's ranked players
  (computed with exact decimals: the cutoff's JSON text, not a binary float).
Since an entry's score and rank only worsen down the display order, each tier holds one run of
the board's display order: its boundaries are where that run starts and ends.
"""

import itertools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from common.api_errors import Problem

BY = ("score", "rank", "percent")
NO_TIERS = Problem(404, "no_tiers", "the board kind has no tiers")
NAME_RE = re.compile(r"^[a-z0-9-]{1,32}$")
MAX_TIERS = 20
MAX_SCORE = 9_007_199_254_740_991


class BadTiers(ValueError):
    """A tiers body that breaks the rules (the message says which)."""


@dataclass(frozen=True)
class Tiers:
    """One board kind's tiers: `by`, the names best first, the cutoffs of all but the last."""

    by: str
    names: tuple[str, ...]
    cutoffs: tuple[Any, ...]  # ints; a percent cutoff may be a decimal (kept as a Fraction)
    ascending: bool = False

    def rank_cutoffs(self, total: int) -> tuple[int, ...]:
        """The highest rank each tier but the last takes, on a board of `total` players."""
        if self.by == "rank":
            return tuple(self.cutoffs)
        return tuple(math.ceil(cutoff * total / 100) for cutoff in self.cutoffs)

    def of(self, *, score: int, rank: int, total: int) -> str:
        """The tier of an entry with this score and rank on a board of `total` players."""
        if self.by == "score":
            for name, cutoff in zip(self.names, self.cutoffs, strict=False):
                if (score <= cutoff) if self.ascending else (score >= cutoff):
                    return name
            return self.names[-1]
        for name, limit in zip(self.names, self.rank_cutoffs(total), strict=False):
            if rank <= limit:
                return name
        return self.names[-1]

    def document(self) -> dict[str, Any]:
        """As the API shows it: {"by", "tiers": [{"name", "cutoff"}, ..., {"name", "cutoff": null}]}."""
        tiers: list[dict[str, Any]] = [
            {"name": name, "cutoff": _json_number(cutoff)}
            for name, cutoff in zip(self.names, self.cutoffs, strict=False)
        ]
        tiers.append({"name": self.names[-1], "cutoff": None})
        return {"by": self.by, "tiers": tiers}


def _json_number(value: Any) -> int | float:
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    return int(value)


def _number(raw: Any, by: str, index: int) -> Any:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise BadTiers(f"tiers[{index}].cutoff must be a number.")
    if by == "percent":
        share = Fraction(str(raw))
        if not 0 < share <= 100:
            raise BadTiers(f"tiers[{index}].cutoff must be a percent above 0 and at most 100.")
        return share
    if isinstance(raw, float) and not raw.is_integer():
        raise BadTiers(f"tiers[{index}].cutoff must be an integer.")
    value = int(raw)
    low = 1 if by == "rank" else 0
    if not low <= value <= MAX_SCORE:
        raise BadTiers(f"tiers[{index}].cutoff must be an integer from {low} to {MAX_SCORE}.")
    return value


def _loosening(by: str, ascending: bool, cutoffs: list[Any]) -> bool:
    """Whether each cutoff is strictly looser than the one before: lower scores (higher on a
    lower-is-better game), larger ranks and percents."""
    pairs = list(itertools.pairwise(cutoffs))
    if by == "score" and not ascending:
        return all(a > b for a, b in pairs)
    return all(a < b for a, b in pairs)


def tiers_parse(data: Any, *, ascending: bool) -> Tiers:
    """The body of the signed PUT as `Tiers`; BadTiers says what is wrong."""
    if not isinstance(data, dict) or set(data) - {"by", "tiers"}:
        raise BadTiers('The body must be {"by": ..., "tiers": [...]}.')
    by, listed = data.get("by"), data.get("tiers")
    if by not in BY:
        raise BadTiers("by must be score, rank or percent.")
    if not isinstance(listed, list) or not 1 <= len(listed) <= MAX_TIERS:
        raise BadTiers(f"tiers must be a list of 1 to {MAX_TIERS} tiers, best first.")
    names, cutoffs = [], []
    for index, tier in enumerate(listed):
        if not isinstance(tier, dict) or set(tier) - {"name", "cutoff"}:
            raise BadTiers(f'tiers[{index}] must be {{"name", "cutoff"}}.')
        name = tier.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise BadTiers(f"tiers[{index}].name must be 1 to 32 of [a-z0-9-].")
        if name in names:
            raise BadTiers(f"tiers[{index}].name {name!r} is used twice.")
        names.append(name)
        last = index == len(listed) - 1
        if last and tier.get("cutoff") is not None:
            raise BadTiers("The last tier has no cutoff: it takes everyone the others do not.")
        if not last:
            if tier.get("cutoff") is None:
                raise BadTiers(f"tiers[{index}] needs a cutoff (only the last tier has none).")
            cutoffs.append(_number(tier["cutoff"], by, index))
    if not _loosening(by, ascending, cutoffs):
        order = "higher" if by == "score" and ascending else "lower" if by == "score" else "larger"
        raise BadTiers(f"Each cutoff must be strictly looser than the one before ({order} down the list).")
    return Tiers(by=by, names=tuple(names), cutoffs=tuple(cutoffs), ascending=ascending)


_PARSED: dict[tuple[int, str, bool], tuple[dict[str, Any], Tiers]] = {}


def tiers_of(configured: dict[str, Any] | None, board: str, *, ascending: bool) -> Tiers | None:
    """A board kind's tiers from a game's (or a frozen season's) configuration; None without.
    Parsed once per configuration object (a catalog's copy lives until the catalog changes)."""
    if not configured or board not in configured:
        return None
    key = (id(configured), board, ascending)
    held = _PARSED.get(key)
    if held is not None and held[0] is configured:
        return held[1]
    parsed = tiers_parse(configured[board], ascending=ascending)
    if len(_PARSED) > 4096:
        _PARSED.clear()
    _PARSED[key] = (configured, parsed)
    return parsed
