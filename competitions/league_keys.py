"""Every Redis key of the leagues: the only module that spells them (the tournaments' keys are in
keys.py, the boards' in boards/keys.py).

Keys (prefix `lb` by default, REDIS_KEY_PREFIX). A period's assignment state shares the period's
Redis Cluster hash tag `{game.l.league.period}`, so that one script decides a batch's cohorts
against the player map and every division's counters at once, on one Redis or on a cluster:
    lb:l:{game}:{league}:{period}:m:{tag}   the player map (a hash: player id -> "division:number")
    lb:l:{game}:{league}:{period}:s:{tag}   the counters (a hash: "o:{division}" the open cohort's
                                            number, "c:{division}:{number}" a cohort's size; the
                                            field "" says it was filled from the database: a state
                                            without it is loaded from LeagueMember rows before use)
    lb:l:{game}:{league}:{period}:h:{tag}   cohorts with a free seat below the open one (a sorted
                                            set of "division:number", left by a transaction that
                                            gave its seat back): the next players fill them first
    lb:l:{game}:{league}:{period}:z:{tag}   a fill's staging copy of the map (renamed into place)
Each cohort's board has a tag of its own, `{game.l.league.period.division.number}`, so the cohorts
of a large league spread over the slots:
    lb:l:{game}:{league}:{period}:c:{division}:{number}:b:{ctag}   the cohort's board (a sorted
                                            set of encoded scores; `:d` and `:v` as boards/keys.py
                                            names them for every board)
The keys expire a while after the period's grace ends; a final period is read from PostgreSQL.
"""

from common.redis import key_prefix


def period_tag(game: str, league: str, period: int) -> str:
    """The hash tag (braces included) of one period's assignment keys."""
    return f"{{{game}.l.{league}.{period}}}"


def cohort_tag(game: str, league: str, period: int, division: int, number: int) -> str:
    """The hash tag (braces included) of one cohort's board."""
    return f"{{{game}.l.{league}.{period}.{division}.{number}}}"


def _base(game: str, league: str, period: int) -> str:
    return f"{key_prefix()}:l:{game}:{league}:{period}"


def members_key(game: str, league: str, period: int) -> str:
    return f"{_base(game, league, period)}:m:{period_tag(game, league, period)}"


def state_key(game: str, league: str, period: int) -> str:
    return f"{_base(game, league, period)}:s:{period_tag(game, league, period)}"


def holes_key(game: str, league: str, period: int) -> str:
    return f"{_base(game, league, period)}:h:{period_tag(game, league, period)}"


def staging_key(game: str, league: str, period: int) -> str:
    return f"{_base(game, league, period)}:z:{period_tag(game, league, period)}"


def cohort_board_key(game: str, league: str, period: int, division: int, number: int) -> str:
    tag = cohort_tag(game, league, period, division, number)
    return f"{_base(game, league, period)}:c:{division}:{number}:b:{tag}"


def period_pattern(game: str, league: str) -> str:
    """Every key of every period of a league (SCAN)."""
    return f"{key_prefix()}:l:{game}:{league}:*"


def cohort_boards_pattern(game: str, league: str, period: int) -> str:
    """Every cohort board key of one period, with their `:d` and `:v` companions (SCAN)."""
    return f"{_base(game, league, period)}:c:*:b:*"
