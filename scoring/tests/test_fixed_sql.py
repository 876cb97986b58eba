"""The reads of every submission that skip the ORM's compilation (common/db.py `models_from_rows`:
the keys with their games, a game's seasons, its rules) against the ORM's own answers."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from anticheat.models import GameRules, ServerKey
from anticheat.services import game_rules_set, rules_for, server_keys_by_id
from scoring.testing import make_game, make_key
from seasons.models import Game, Season
from seasons.selectors import game_get, seasons_of

pytestmark = pytest.mark.django_db


def test_models_from_fixed_sql_equal_the_orms():
    """`model_columns` + `models_from_rows` (the hot reads of keys, seasons and rules) build the
    instances the ORM builds, JSON and nullable columns included."""
    game = make_game("fixed-sql", start=timezone.now() - timedelta(days=3))
    Game.objects.filter(pk=game.pk).update(dimensions=["kills", "assists"])
    game.refresh_from_db()
    Season.objects.create(
        game=game,
        name="later",
        starts_at=game.seasons.get().ends_at,
        ends_at=game.seasons.get().ends_at + timedelta(days=7),
        time_bits=game.seasons.get().time_bits,
        frozen_at=timezone.now(),
    )
    keys = [make_key(game), make_key(game)]
    ServerKey.objects.filter(pk=keys[1].pk).update(revoked_at=timezone.now())

    def fields(instance):
        return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}

    expected = list(Season.objects.filter(game=game).select_related("game").order_by("-starts_at", "-id"))
    got = seasons_of(game=game)
    assert [fields(s) for s in got] == [fields(s) for s in expected] and len(got) == 2
    assert all(s.game is game for s in got)

    by_id = server_keys_by_id([k.key_id for k in keys] + ["lbk_nobody"])
    orm = {k.key_id: k for k in ServerKey.objects.select_related("game").filter(key_id__in=[k.key_id for k in keys])}
    assert {k: fields(v) for k, v in by_id.items()} == {k: fields(v) for k, v in orm.items()}
    assert {k: fields(v.game) for k, v in by_id.items()} == {k: fields(v.game) for k, v in orm.items()}
    assert by_id[keys[0].key_id].game.dimensions == ["kills", "assists"]
    assert by_id[keys[1].key_id].revoked_at is not None and by_id[keys[0].key_id].revoked_at is None
    assert server_keys_by_id([]) == {}
    assert fields(game_get(slug="fixed-sql")) == fields(Game.objects.get(slug="fixed-sql"))
    assert game_get(slug="nobody") is None

    game_rules_set(game=game, player_burst=7, player_refill_s=3)
    row = GameRules.objects.get(game=game)
    rules = rules_for(game=game)
    assert (rules.player_burst, rules.player_refill_s) == (7, 3) == (row.player_burst, row.player_refill_s)
    game_rules_set(game=game, player_burst=9, player_refill_s=3)
    assert rules_for(game=game).player_burst == 9  # read anew on every call
    GameRules.objects.filter(game=game).delete()
    assert rules_for(game=game).player_burst == settings.PLAYER_BUCKET_BURST
