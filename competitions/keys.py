"""Every Redis key of the tournaments: the only module that spells them (the boards' keys are in
boards/keys.py).

Keys (prefix `lb` by default, REDIS_KEY_PREFIX), one set per period, all ending in the period's
Redis Cluster hash tag `{game.t.tournament.period}`, so that one script reads and writes a period's
board and counters together, on one Redis or on a cluster:
    lb:t:{game}:{tournament}:{period}:e:{tag}   the period's entrants (a set; the member "" says it
                                                was filled from the database: a set without it is
                                                loaded from TournamentEntrant rows before any use)
    lb:t:{game}:{tournament}:{period}:a:{tag}   counted attempts per player (a hash; field "" = the
                                                same "filled" mark)
    lb:t:{game}:{tournament}:{period}:b:{tag}   the period's board (a sorted set, encoded scores;
                                                `:d` its distinct points, `:v` its version, as
                                                boards/keys.py names them for every board)
    lb:t:{game}:{tournament}:{period}:n:{tag}   never written: on a cluster, the read scripts' names hash
                                                (the game's lies in another slot; the names are read
                                                after the script)
    lb:tc:{game}:{tournament}:{tag}             the fast entrance's copy of the tournament (a JSON
                                                document: competitions/standings.py), and `:v:{tag}`
                                                its version; tagged `{game.t.tournament}`
    lb:tl:{game}                                the game page's tournaments (a JSON document of
                                                their windows and titles: links.py), expiring; on
                                                REDIS_URL, beside the game's catalog
The board writer marks a period's board as changed in the live publisher's set (boards/keys.py
`lb:dirty`) by its key; `board_key_parse` reads the key back.
The period keys expire a while after the period's grace ends (TOURNAMENT_KEYS_TTL_AFTER_FINAL_S); a final
period is read from PostgreSQL.
"""

from common.redis import key_prefix

FILLED = ""  # the member (and field) that marks a counter as filled from the database
ATTEMPTS_VERSION = "#v"  # the attempts hash's field counting its changes (lua/enter.lua; no player id holds '#')


def period_tag(game: str, tournament: str, period: int) -> str:
    """The hash tag (braces included) of one period's keys."""
    return f"{{{game}.t.{tournament}.{period}}}"


def _base(game: str, tournament: str, period: int) -> str:
    return f"{key_prefix()}:t:{game}:{tournament}:{period}"


def entrants_key(game: str, tournament: str, period: int) -> str:
    return f"{_base(game, tournament, period)}:e:{period_tag(game, tournament, period)}"


def attempts_key(game: str, tournament: str, period: int) -> str:
    return f"{_base(game, tournament, period)}:a:{period_tag(game, tournament, period)}"


def board_key(game: str, tournament: str, period: int) -> str:
    return f"{_base(game, tournament, period)}:b:{period_tag(game, tournament, period)}"


def board_key_parse(key: str) -> tuple[str, str, int] | None:
    """(game, tournament, period) of a period's board key; None for any other key."""
    head = f"{key_prefix()}:t:"
    if not key.startswith(head):
        return None
    parts = key[len(head) :].split(":")
    if len(parts) != 5 or parts[3] != "b" or not (parts[2].isascii() and parts[2].isdigit()):
        return None
    game, tournament, period = parts[0], parts[1], int(parts[2])
    return (game, tournament, period) if key == board_key(game, tournament, period) else None


def names_elsewhere_key(game: str, tournament: str, period: int) -> str:
    return f"{_base(game, tournament, period)}:n:{period_tag(game, tournament, period)}"


def period_pattern(game: str, tournament: str) -> str:
    """Every key of every period of a tournament (SCAN)."""
    return f"{key_prefix()}:t:{game}:{tournament}:*"


def conf_key(game: str, tournament: str) -> str:
    """The fast entrance's copy of a tournament's read configuration (standings.py)."""
    return f"{key_prefix()}:tc:{game}:{tournament}:{{{game}.t.{tournament}}}"


def conf_version_key(game: str, tournament: str) -> str:
    return f"{key_prefix()}:tc:{game}:{tournament}:v:{{{game}.t.{tournament}}}"


def links_key(game: str) -> str:
    """The game page's tournaments (links.py)."""
    return f"{key_prefix()}:tl:{game}"
