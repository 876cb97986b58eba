"""Players hidden or deleted after their season froze: on no frozen read and in nobody's rank,
under each tie rule; back with correct ranks when shown again; their own rank as if visible.

The board is test_tie_rules.py's (many ties). The players taken off cover each case of the rank
arithmetic (boards/gone.py): a whole tie group of one (69 points) and a deleted one (55), part
of a group at its end in a run (t100-a, t100-b), part of one at its start (two-3) and in its middle
(k0)."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from boards.exports import standings_csv
from boards.keys import GLOBAL
from boards.kinds import NO_PERIOD
from boards.ranking import ranks_for
from boards.selectors import (
    board_around,
    board_distribution,
    board_friends,
    board_player,
    board_top,
    board_view,
    frozen_own_rank,
)
from boards.services import player_profile_set
from scoring.freezing import season_freeze
from scoring.players import player_delete, player_update
from scoring.testing import make_game
from scoring.tests.test_tie_rules import HUB, RULES, display_order, feed, triples, window
from seasons.models import Season

pytestmark = pytest.mark.django_db

HIDDEN = ["solo-69", "t100-a", "t100-b", "two-3", "k0"]
DELETED = "solo-55"
HIDDEN_AT_FREEZE = "z-a"  # hidden before the freeze: the freeze leaves them out already

Entry = tuple[str, int, int]


def ranked(rule: str, order: list[tuple[str, int]]) -> list[Entry]:
    ranks = ranks_for([points for _, points in order], rule)
    return [(p, points, rank) for (p, points), rank in zip(order, ranks, strict=True)]


def exported(season: Season) -> list[Entry]:
    lines = "".join(standings_csv(season)).splitlines()[1:]
    rows = [line.split(",") for line in lines]
    return [(r[5], int(r[6]), int(r[4])) for r in rows if (r[1], r[2], r[3]) == ("all", GLOBAL, NO_PERIOD)]


def frozen_reads_agree(season: Season, expected: list[Entry], gone: list[str]) -> None:
    """Every public frozen read of the `all` board answers `expected` (in display order, ranked)
    and nothing of the players `gone`."""
    game = season.game
    view = board_view(slug=game.slug, board="all", region=None, season=str(season.id), period=None, now=timezone.now())
    assert view.frozen
    assert triples(board_top(view=view, n=1000)) == expected, "top"
    assert triples(board_top(view=view, n=11)) == expected[:11], "top 11"
    for player, points, rank in expected:
        standing = board_player(view=view, player_id=player)
        assert standing is not None
        assert (standing.score, standing.rank, standing.total) == (points, rank, len(expected)), player
        assert standing.lower == sum(1 for e in expected if e[1] < points), player
        for r in (0, 2, 5):
            assert triples(board_around(view=view, player_id=player, r=r) or []) == window(expected, player, r)
    for player in gone:
        assert board_player(view=view, player_id=player) is None, player
        assert board_around(view=view, player_id=player, r=2) is None, player
    hub = board_friends(view=view, player_id=HUB)
    assert [(e["player_id"], e["score"], e["board_rank"]) for e in hub] == expected, "friends"
    assert board_distribution(view=view)["total"] == len(expected)
    assert sum(b["players"] for b in board_distribution(view=view)["buckets"]) == len(expected)
    assert exported(season) == expected, "the standings export"


def own_rank_as_if_visible(season: Season, rule: str, visible: list[tuple[str, int]], player: str) -> None:
    view = board_view(
        slug=season.game.slug, board="all", region=None, season=str(season.id), period=None, now=timezone.now()
    )
    whole = dict(display_order())
    order = [(p, s) for p, s in display_order() if p == player or p in dict(visible)]
    mine = next(e for e in ranked(rule, order) if e[0] == player)
    assert frozen_own_rank(view=view, player_id=player) == (whole[player], mine[2]), player


@pytest.mark.parametrize("rule", RULES)
def test_players_hidden_or_deleted_after_the_freeze_are_on_no_frozen_read(rule):
    game = make_game("one", tie_rule=rule, start=timezone.now() - timedelta(days=5))
    feed([game])
    with transaction.atomic():
        player_profile_set(game=game, player_id=HIDDEN_AT_FREEZE, hidden=True)
    season = Season.objects.get(game=game)
    assert season_freeze(season_id=season.id, now=timezone.now()) > 0
    order = [(p, s) for p, s in display_order() if p != HIDDEN_AT_FREEZE]
    frozen_reads_agree(season, ranked(rule, order), [HIDDEN_AT_FREEZE])

    for player in HIDDEN:
        player_update(game=game, player_id=player, hidden=True)
    player_delete(game=game, player_id=DELETED)
    gone = [*HIDDEN, DELETED, HIDDEN_AT_FREEZE]
    visible = [(p, s) for p, s in order if p not in gone]
    frozen_reads_agree(season, ranked(rule, visible), gone)
    for player in HIDDEN:
        own_rank_as_if_visible(season, rule, visible, player)
    own_rank_as_if_visible(season, rule, visible, "k3")

    for player in HIDDEN:  # shown again: back, with the ranks they had
        player_update(game=game, player_id=player, hidden=False)
    back = [(p, s) for p, s in order if p != DELETED]
    frozen_reads_agree(season, ranked(rule, back), [DELETED, HIDDEN_AT_FREEZE])
