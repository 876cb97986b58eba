"""Every Redis key of the seasons app: the only module that spells them (the connection and the
prefix are common/redis.py's).

Keys (prefix `lb` by default, REDIS_KEY_PREFIX):
    lb:catalog:{game}      a game's catalog: the game, its seasons and its pointer (JSON,
                           seasons/catalog.py)
    lb:catalog-v:{game}    its version (a random token, new with every publish)
    lb:games-v             the version of the list of games (a random token, new with every
                           catalog publish of any game: the home page is kept at it)
"""

from common.redis import key_prefix


def catalog_key(slug: str) -> str:
    return f"{key_prefix()}:catalog:{slug}"


def catalog_version_key(slug: str) -> str:
    return f"{key_prefix()}:catalog-v:{slug}"


def games_version_key() -> str:
    return f"{key_prefix()}:games-v"
