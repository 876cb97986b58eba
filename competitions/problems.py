"""The errors the tournament endpoints give beside the common ones (docs/api.md, "Tournaments")."""

from common.api_errors import Problem

UNKNOWN_TOURNAMENT = Problem(404, "unknown_tournament", "the game has no tournament of this id")
UNKNOWN_PERIOD = Problem(404, "unknown_period", "the tournament has no period of this index")
NOT_ENTERED = Problem(404, "not_entered", "the player is not entered in that period")
TOURNAMENT_STARTED = Problem(
    409,
    "tournament_started",
    "the first period has started: only title, description, metadata and ends_at may change",
)
TOURNAMENT_FULL = Problem(409, "tournament_full", "the period has max_entrants entrants")
TOURNAMENT_OVER = Problem(409, "tournament_over", "the last period has ended")
