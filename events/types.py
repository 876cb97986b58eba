"""The event types, each with what its `data` holds (docs/api.md, "Events out")."""

SEASON_FROZEN = "season.frozen"  # {"season", "top": [the first 100 entries of the all board, global]}
TOURNAMENT_PERIOD_FINAL = "tournament.period_final"  # {"tournament", "period", "starts_at", "ends_at", ...}
LEAGUE_COHORT_FINAL = "league.cohort_final"  # {"league", "period", "division", "cohort", "entries"}
RESULT_REVIEWED = "result.reviewed"  # {"match_id", "player_id", "decision": "approved"|"revoked", "reason"}
PLAYER_BANNED = "player.banned"  # {"player_id", "revoked"}

EVENT_TYPES = (SEASON_FROZEN, TOURNAMENT_PERIOD_FINAL, LEAGUE_COHORT_FINAL, RESULT_REVIEWED, PLAYER_BANNED)
# A `types=` list of them (the feed's parameter, `create_webhook --types`): its OpenAPI pattern.
_ONE = "(" + "|".join(t.replace(".", r"\.") for t in EVENT_TYPES) + ")"
TYPES_PATTERN = f"^{_ONE}(,{_ONE})*$"


class UnknownType(ValueError):
    pass


def types_parse(raw: str) -> list[str]:
    """`a,b` as a list of known types, in order, without repeats; UnknownType names the first
    unknown one (an empty list is refused too: a filter that lets nothing through is a mistake)."""
    found: list[str] = []
    for name in raw.split(","):
        if name not in EVENT_TYPES:
            raise UnknownType(f"{name!r} is not an event type (known: {', '.join(EVENT_TYPES)}).")
        if name not in found:
            found.append(name)
    return found
