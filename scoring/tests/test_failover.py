"""A Redis failover noticed (failover.py): another server's run id answering sets the check off,
once; the check puts back what the promoted replica lacked; the outbox is due again at once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.keys import BoardRef, primary_key
from common.metrics import counters
from common.redis import client as redis_client
from scoring.failover import failover_check, failover_noticed
from scoring.models import UnappliedEvent
from scoring.outbox import unapplied_due_now
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct
from scoring.tests.test_reconcile import seed

pytestmark = pytest.mark.django_db


def test_another_servers_run_id_is_noticed_once_and_counted():
    redis = redis_client()
    redis.delete(primary_key())
    assert failover_noticed() is False  # the first check: nothing to compare with
    assert failover_noticed() is False  # the same server
    before = counters().get("redis_failovers", 0)
    redis.set(primary_key(), "0" * 40)  # as a promoted replica holds it: its old primary's run id
    assert failover_noticed() is True
    assert failover_noticed() is False  # recorded: noticed once
    assert redis.get(primary_key()) == redis.info("server")["run_id"]
    assert counters().get("redis_failovers", 0) == before + 1


def test_the_check_puts_back_what_the_replica_had_not_received():
    game = make_game()
    seed(game)
    season_id = game.seasons.get().id
    all_board = BoardRef(game.slug, season_id, "all", "global", "-").key
    lost = redis_client().zrange(all_board, 0, 2)  # the last applies of three players never arrived
    assert len(lost) == 3
    redis_client().zrem(all_board, *lost)
    assert set(boards_diff(game=game, now=timezone.now())[all_board]) == set(lost)
    check = failover_check()
    assert (check.games, check.drift, check.complete) == (1, 3, True)
    assert boards_diff(game=game, now=timezone.now()) == {}


def test_the_outbox_is_due_again_at_once():
    game = make_game()
    key = make_key(game)
    now = timezone.now()
    submit_direct(game, key, match_body([{"player_id": "a", "points": 5}], now - timedelta(minutes=1)), now=now)
    UnappliedEvent.objects.update(enqueued_at=now)  # sent, its task since lost with the old primary
    assert unapplied_due_now() == 1
    assert UnappliedEvent.objects.filter(enqueued_at__isnull=True).count() == 1
    drain()
