"""The season pointer: one versioned value per game, every switch and rollback recorded."""

from datetime import timedelta

import pytest
from django.utils import timezone

from seasons.models import SeasonPointer, SeasonPointerChange
from seasons.selectors import season_current
from seasons.services import pointer_rollback, pointer_set, season_end
from seasons.testing import make_game

pytestmark = pytest.mark.django_db


def test_end_season_moves_the_pointer_and_a_rollback_is_a_new_version():
    game = make_game(start=timezone.now() - timedelta(days=3))
    old = game.seasons.get()
    assert SeasonPointer.objects.get(game=game).season == old
    ended = season_end(game=game, now=timezone.now(), grace_s=3600)
    new = ended.next_season
    assert new is not None and ended.status == "grace"
    pointer = SeasonPointer.objects.get(game=game)
    assert (pointer.season_id, pointer.version) == (new.id, 2)
    assert season_current(game=game, now=timezone.now()) == new
    pointer_rollback(game=game, actor="ops", reason="ended by mistake")
    assert season_current(game=game, now=timezone.now()) == old
    assert list(SeasonPointerChange.objects.filter(game=game).values_list("version", "to_season_id", "actor")) == [
        (3, old.id, "ops"),
        (2, new.id, "end_season"),
        (1, old.id, "create_game"),
    ]


def test_pointing_at_the_same_season_records_nothing_and_another_games_season_is_refused():
    game = make_game(start=timezone.now() - timedelta(days=3))
    other = make_game("other")
    pointer_set(game=game, season=game.seasons.get(), actor="ops")
    assert SeasonPointerChange.objects.filter(game=game).count() == 1
    with pytest.raises(ValueError):
        pointer_set(game=game, season=other.seasons.get(), actor="ops")
