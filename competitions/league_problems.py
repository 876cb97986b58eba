"""The errors the league endpoints give beside the common ones (docs/api.md, "Leagues")."""

from common.api_errors import Problem

UNKNOWN_LEAGUE = Problem(404, "unknown_league", "the game has no league of this id")
UNKNOWN_COHORT = Problem(404, "unknown_cohort", "the league has no cohort of this id")
LEAGUE_STARTED = Problem(409, "league_started", "the first period has started: only title may change")
