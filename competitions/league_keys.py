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
    lb:l:{game}:{league}:{period}:w:{tag}   the cohorts followed over WebSockets (a hash: "D:N" ->
                                            open connections; league_live.py pushes only these)
Each cohort's board has a tag of its own, `{game.l.league.period.division.number}`, so the cohorts
of a large league spread over the slots:
    lb:l:{game}:{league}:{period}:c:{division}:{number}:b:{ctag}   the cohort's board (a sorted
                                            set of encoded scores; `:d` and `:v` as boards/keys.py
                                            names them for every board)
The keys expire a while after the period's grace ends; a final period is read from PostgreSQL.
The board writer marks a cohort's board as changed in the live publisher's set (boards/keys.py
`lb:dirty`) by its key; `cohort_board_key_parse` reads the key back (league_live.py).

The fast entrance's copy of a league's read configuration (league_standings.py), tagged
`{game.l.league}`:
    lb:lc:{game}:{league}:{ltag}            a JSON document, and `lb:lc:{game}:{league}:v:{ltag}` its version
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


def watch_key(game: str, league: str, period: int) -> str:
    return f"{_base(game, league, period)}:w:{period_tag(game, league, period)}"


def cohort_board_key(game: str, league: str, period: int, division: int, number: int) -> str:
    tag = cohort_tag(game, league, period, division, number)
    return f"{_base(game, league, period)}:c:{division}:{number}:b:{tag}"


def period_pattern(game: str, league: str) -> str:
    """Every key of every period of a league (SCAN)."""
    return f"{key_prefix()}:l:{game}:{league}:*"


def cohort_board_template(game: str, league: str, period: int) -> str:
    """A period's cohort board key with `%D` for the division and `%N` for the number: the read
    script (lua/league_cohort.lua) names the board of a seat it looked up."""
    return cohort_board_key(game, league, period, "%D", "%N")  # type: ignore[arg-type]


def cohort_board_key_parse(key: str) -> tuple[str, str, int, int, int] | None:
    """(game, league, period, division, number) of a cohort board's key; None for any other key."""
    head = f"{key_prefix()}:l:"
    if not key.startswith(head):
        return None
    parts = key[len(head) :].split(":")
    if len(parts) != 8 or parts[3] != "c" or parts[6] != "b":
        return None
    numbers = (parts[2], parts[4], parts[5])
    if not all(part.isascii() and part.isdigit() for part in numbers):
        return None
    game, league = parts[0], parts[1]
    period, division, number = (int(part) for part in numbers)
    found = (game, league, period, division, number)
    return found if key == cohort_board_key(*found) else None


def league_tag(game: str, league: str) -> str:
    return f"{{{game}.l.{league}}}"


def conf_key(game: str, league: str) -> str:
    """The fast entrance's copy of a league's read configuration (league_standings.py)."""
    return f"{key_prefix()}:lc:{game}:{league}:{league_tag(game, league)}"


def conf_version_key(game: str, league: str) -> str:
    return f"{key_prefix()}:lc:{game}:{league}:v:{league_tag(game, league)}"


def cohort_boards_pattern(game: str, league: str, period: int) -> str:
    """Every cohort board key of one period, with their `:d` and `:v` companions (SCAN)."""
    return f"{_base(game, league, period)}:c:*:b:*"
