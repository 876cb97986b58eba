"""The board page (`/games/{game}/`) from version-keyed pieces, assembled the same way by both
entrances (views.game_board for Django, fastpath.py's page for the fast entrance).

- The chrome: templates/boards/game_board.html rendered once per board (game, season, kind,
  region, period), list of regions and player-or-not, with markers where the other pieces go and
  where the player's id stands; kept, and cut at the markers into static segments.
- The rows of the board's top 100 at the board's version, kept with the top 100 itself
  (selectors.top_cache), and the page's JSON of those entries.
- Per request, with `?player=`: the player's standing, the players around them and their friends
  (small; rendered by the functions below, no template), and the player's id into the chrome.
- Per request, the links other apps put on the page (`GameLinks`: the game's tournaments), from a
  document in Redis read with the rest.

So a page whose pieces are all kept costs no template rendering, and a new result shows on the
next request (the top 100 is read at the board's current version every time). The row markup is
written once (`rows_html`).
"""

import html
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote_plus, urlencode

import orjson
import redis
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from common.redis import client

from . import selectors
from .kinds import KINDS
from .selectors import BoardView, Cached, Entry, Standing

# Stand-ins for the player's id in a kept chrome: one in HTML text and attributes, one in links.
HTML_PLAYER = "lb-player-in-text-8d1f"
URL_PLAYER = "lb-player-in-link-8d1f"
_PARTS = ("links", "me", "rows", "empty_hidden", "boards", "around", "friends", "page_json")
_MARK = "\x00lb-part:{}\x00"
TOP_N = 100  # the page's board: the top 100


@dataclass(frozen=True)
class PageData:
    """What one board page shows: the board, its regions, its top 100 (`top`: at the board's
    version, or None for a frozen board's standings in `entries`), and with a player their
    standing (None: not ranked), the players around them and their friends."""

    view: BoardView
    regions: list[str]
    entries: list[Entry]
    top: Cached | None
    player: str | None
    me: Standing | None = None
    around: list[Entry] | None = None
    friends: list[Entry] | None = None
    links: str = ""  # the links other apps put on the page (GameLinks), HTML
    boards: list[Entry] | None = None  # the player on every board kind (lookups.player_boards)


@dataclass(frozen=True)
class GameLinks:
    """Links an app above this one puts on a game's page (competitions: its active and upcoming
    tournaments), this app being unable to import it; set from that app's AppConfig.ready.

    They come from one document per game in Redis (on REDIS_URL), which both entrances read with
    the page's other pieces: `key(game)` its key, `html(document, now)` the links' HTML from it
    (the document is None when Redis has none: the fast entrance then hands the page to Django,
    whose `fill(game)` writes it from the database and returns it)."""

    key: Callable[[str], str]
    html: Callable[[str | None, datetime], str | None]
    fill: Callable[[str], str]


_game_links: GameLinks | None = None


def game_links_set(links: GameLinks) -> None:
    global _game_links
    _game_links = links


def game_links() -> GameLinks | None:
    return _game_links


def links_html(game: str, now: datetime) -> str:
    """The game's links (Django's side): its document read, written from the database when Redis
    has none. Redis unreachable: no links (the board itself will say so)."""
    links = _game_links
    if links is None:
        return ""
    try:
        document = client().get(links.key(game))
        found = links.html(str(document) if document is not None else None, now)
        if found is None:
            found = links.html(links.fill(game), now)
    except redis.RedisError:
        return ""
    return found or ""


_NEEDS_ESCAPE = re.compile(r"[&<>\"']").search


def _escape(text: str) -> str:
    """html.escape, skipped for text with nothing to escape (most ids and names: one search
    instead of five replaces)."""
    return html.escape(text) if _NEEDS_ESCAPE(text) else text


def page_html(page: PageData) -> bytes:
    """The page, UTF-8."""
    chrome = _chrome(page.view, page.regions, bool(page.player))
    player = page.player or ""
    parts = {
        "links": page.links,
        "me": _me_html(page),
        "rows": _top_rows(page),
        "empty_hidden": " hidden" if page.entries else "",
        "boards": _boards_html(page),
        "around": _box_html("around-box", "Around me", "around", page.around, player, friends=False),
        "friends": _box_html(
            "friends-box",
            "Friends",
            "friends",
            page.friends if page.friends and len(page.friends) > 1 else None,
            player,
        ),
        "page_json": _page_json(page),
    }
    text_player, link_player = _escape(player), quote_plus(player)
    out = []
    for segment, part in zip(chrome, [*_PARTS, None], strict=True):
        if page.player:
            segment = segment.replace(HTML_PLAYER, text_player).replace(URL_PLAYER, link_player)
        out.append(segment)
        if part is not None:
            out.append(parts[part])
    return "".join(out).encode()


def rows_html(entries: list[Entry], player: str, *, friends: bool = False) -> str:
    """Board rows (`<tr>`s): rank (and with `friends` the rank on the whole board), name (with its
    tier's badge on a board with tiers), score; the player's own row marked `me`. static/boards/
    board.js builds the same rows from pushes."""
    out = []
    for e in entries:
        pid = _escape(e["player_id"])
        mine = ' class="me"' if e["player_id"] == player else ""
        board_rank = f'<td class="board-rank">#{e["board_rank"]}</td>' if friends else ""
        name = _escape(e["display_name"] or e["player_id"])
        tier = e.get("tier")
        badge = f' <span class="tier tier-{tier}">{tier}</span>' if tier else ""
        out.append(
            f'<tr data-player="{pid}"{mine}><td class="rank">{e["rank"]}</td>{board_rank}'
            f'<td class="name">{name}{badge}</td><td class="score">{e["score"]}</td></tr>\n      '
        )
    return "".join(out)


def _top_rows(page: PageData) -> str:
    """The top 100's rows: kept with the board's top 100 at its version; the player's row marked."""
    if page.top is None:
        return rows_html(page.entries, page.player or "")
    rows = page.top.extras.get("rows_html")
    if rows is None:
        rows = page.top.extras["rows_html"] = rows_html(page.entries, "")
    if page.player:
        pid = _escape(page.player)
        rows = rows.replace(f'<tr data-player="{pid}">', f'<tr data-player="{pid}" class="me">', 1)
    return str(rows)


def _me_html(page: PageData) -> str:
    hidden = "" if page.player else " hidden"
    text = ""
    if page.me is not None:
        me = page.me
        name = _escape(me.display_name or me.player_id)
        top = max(0.1, 100 - me.percentile)
        text = f"{name}: rank {me.rank} of {me.total}, score {me.score} (top {top:.1f}%)"
    elif page.player:
        text = f"{_escape(page.player)}: not ranked yet on this board."
    return f'<section id="me" class="me" aria-live="polite"{hidden}>{text}</section>'


def _boards_html(page: PageData) -> str:
    """The player's boards (every board kind of the current season where they have a score): the
    board, rank, score and tier, each board a link to its page with the player."""
    if not page.boards:
        return '<section id="boards-box" hidden></section>'
    player = quote_plus(page.player or "")
    rows = []
    for b in page.boards:
        tier = f'<span class="tier tier-{b["tier"]}">{b["tier"]}</span>' if b["tier"] else ""
        rows.append(
            f'<tr><td class="board-name"><a href="?board={b["board"]}&amp;player={player}">{b["board"]}</a></td>'
            f'<td class="rank">{b["rank"]}</td><td class="score">{b["score"]}</td>'
            f'<td class="tier-cell">{tier}</td></tr>'
        )
    return (
        '<section id="boards-box"><h2>My boards</h2><table id="boards" class="board"><tbody>\n      '
        + "\n      ".join(rows)
        + "</tbody></table></section>"
    )


def _box_html(
    box: str, title: str, table: str, entries: list[Entry] | None, player: str, *, friends: bool = True
) -> str:
    hidden = "" if entries else " hidden"
    rows = rows_html(entries or [], player, friends=friends)
    return (
        f'<section id="{box}"{hidden}><h2>{title}</h2><table id="{table}" class="board"><tbody>\n      '
        f"{rows}</tbody></table></section>"
    )


def _page_json(page: PageData) -> str:
    """The page's data for its script (`lb-page`): the board, the player and the top 100's entries
    (their JSON kept with the top 100), escaped for a <script> element as json_script does."""
    view = page.view
    head = {
        "game": view.game.slug,
        "board": view.board,
        "region": view.region,
        "period": view.period,
        "periodic": KINDS[view.board].periodic,
        "player": page.player or "",
        "season": view.season.id,
        "tie_rule": view.game.tie_rule,
    }
    entries = page.top.extras.get("entries_json") if page.top is not None else None
    if entries is None:
        entries = _script_safe(orjson.dumps(page.entries).decode())
        if page.top is not None:
            page.top.extras["entries_json"] = entries
    data = _script_safe(orjson.dumps(head).decode()[:-1]) + ',"entries":' + str(entries) + "}"
    return f'<script id="lb-page" type="application/json">{data}</script>'


_SCRIPT_SAFE = str.maketrans({"<": "\\u003C", ">": "\\u003E", "&": "\\u0026"})


def _script_safe(text: str) -> str:
    return text.translate(_SCRIPT_SAFE)


def page_view(wanted: dict[str, str | None], resolve: Callable[[str, str | None, str | None], BoardView]) -> BoardView:
    """The board the address names (`wanted`: its board, region and period), resolved by
    `resolve(board, region, period)`; a bad board, region or period in the address: the season
    board instead. selectors.UnknownGame and UnknownSeason pass on to the caller."""
    try:
        return resolve(wanted["board"] or "all", wanted["region"], wanted["period"])
    except (selectors.UnknownBoard, selectors.BadQuery, selectors.UnknownSeason):
        return resolve("all", None, None)


# --------------------------------------------------------------------------- the chrome
_chromes: dict[tuple[Any, ...], list[str]] = {}
_chromes_lock = threading.Lock()
CHROMES_KEPT = 512


def _chrome(view: BoardView, regions: list[str], with_player: bool) -> list[str]:
    """The page's static segments around its parts, rendered once per board, regions and
    player-or-not (at most CHROMES_KEPT kept, the oldest dropped first)."""
    game = view.game
    key = (view.ref.key, game.name, game.tie_rule, tuple(regions), with_player)
    found = _chromes.get(key)
    if found is None:
        found = _chrome_render(view, regions, with_player)
        with _chromes_lock:
            _chromes[key] = found
            while len(_chromes) > CHROMES_KEPT:
                _chromes.pop(next(iter(_chromes)))
    return found


def _chrome_render(view: BoardView, regions: list[str], with_player: bool) -> list[str]:
    player = URL_PLAYER if with_player else None
    tabs, periods = navigation(view, player)
    context = {
        "game": view.game,
        "view": view,
        "tabs": tabs,
        "periods": periods,
        "regions": regions,
        "page": {"player": HTML_PLAYER if with_player else ""},
        "parts": {name: mark_safe(_MARK.format(name)) for name in _PARTS},  # our own markers
    }
    text = str(render_to_string("boards/game_board.html", context))
    segments: list[str] = []
    for name in _PARTS:
        before, text = text.split(_MARK.format(name), 1)
        segments.append(before)
    segments.append(text)
    return segments


def chromes_forget() -> None:
    """Every kept chrome and the kept home page dropped (tests; a deploy with a new template
    restarts the processes)."""
    global _home
    with _chromes_lock:
        _chromes.clear()
        _home = None


# --------------------------------------------------------------------------- the home page
# The list of games (`/`), as Django rendered it last, with the list's version read before the
# games were (seasons.catalog.games_version): the fast entrance answers it while the version holds.
_home: tuple[str, bytes] | None = None


def home_kept(version: str | None) -> bytes | None:
    """The kept home page when it is at `version` (the list of games' version in Redis now)."""
    found = _home
    return found[1] if found is not None and version is not None and found[0] == version else None


def home_keep(version: str, body: bytes) -> None:
    global _home
    _home = (version, body)


def _href(**query: str | None) -> str:
    return "?" + urlencode({k: v for k, v in query.items() if v})


def navigation(view: BoardView, player: str | None) -> tuple[list[dict[str, str]], dict[str, str] | None]:
    """The tabs of the board kinds, and the links to the periods before and after the one shown."""
    region = view.region
    tabs = [
        {"name": k.name, "label": k.label, "href": _href(board=k.name, region=region, player=player)}
        for k in KINDS.values()
    ]
    kind = KINDS[view.board]
    if kind.period is None or view.period is None:
        return tabs, None
    step = kind.period.shift
    periods = {
        "current": view.period,
        "previous": _href(board=kind.name, region=region, period=step(view.period, -1), player=player),
        "next": _href(board=kind.name, region=region, period=step(view.period, 1), player=player),
    }
    return tabs, periods
